#!/usr/bin/env python3
"""Writes tpusim trace files (format v1, docs/trace-format.md) for common models.

Shapes are per core (SPMD): a data-parallel step over C cores is one per-core program with
`"cores": C` and gradient all-reduces over all cores. Weights, gradients and optimizer state
are f32 (mixed precision as in the MLPerf TPU submissions); activations are bf16.

  gen_trace.py bert --layers 12 --seq 512 --batch 8 --cores 8 -o bert.json
  gen_trace.py resnet50 --batch 32 --cores 8 -o resnet50.json
  gen_trace.py lstm --batch 128 --cores 8 -o lstm.json
  gen_trace.py unet --batch 4 --image 256 --cores 8 -o unet.json
  gen_trace.py resnet-unet --batch 128 --cores 8 -o resnet_unet.json
  gen_trace.py examples traces/     (the small committed examples)
  gen_trace.py mlperf resnet50 --round v0.6 --cores 32 -o rn50.json
  gen_trace.py mlperf resnet50 --round v0.5 --inference --scenario offline --cores 8
                                    (an MLPerf benchmark as Google's TPU submission ran it:
                                    scripts/tracegen/mlperf.py)

Python 3 standard library only.
"""
import argparse
import os
import sys

from tracegen.core import BF16, F32, SIZE, Trace, dense_bwd, dense_fwd, grad_sync_and_update
from tracegen.convnet import gen_resnet50, gen_resnet_unet, gen_unet
from tracegen.lstm import gen_lstm
from tracegen.mlperf import BENCHES, INFERENCE_BENCHES, MlperfError, gen_mlperf
from tracegen.transformer import attention_fwd, gen_bert


# ---------------------------------------------------------------------------------------------
# The small committed examples in traces/.


def ex_gemm():
    t = Trace("gemm", 1, "one bf16 GEMM, 8192 x 12288 x 12288")
    t.matmul("mm", 8192, 12288, 12288)
    return t


def ex_mlp():
    T, h, f = 8192, 1024, 4096
    t = Trace("mlp_fwd_bwd", 1, f"MLP layer forward and backward: {T} tokens, {h} -> {f} (gelu) "
              f"-> {h}, SGD update")
    x = t.op("x", "infeed", bytes=T * h * SIZE[BF16])
    a1, s1 = dense_fwd(t, "fc1", x, T, h, f, act="gelu")
    y, s2 = dense_fwd(t, "fc2", a1, T, f, h)
    dy = t.vector("loss_grad", "sub", [y], elements=T * h)
    da, g2 = dense_bwd(t, s2, dy)
    _, g1 = dense_bwd(t, s1, da)
    # sgd reads (param, grad): the parameter is not an op's result; the weight gradient is.
    t.vector("fc2.sgd", "sgd", g2, elements=f * h + h, dtype=F32, operands=[None, g2[1]])
    t.vector("fc1.sgd", "sgd", g1, elements=h * f + f, dtype=F32, operands=[None, g1[1]])
    return t


def ex_attention():
    b, s, h, heads = 8, 512, 1024, 16
    t = Trace("attention", 1, f"one self-attention block forward: batch {b}, seq {s}, hidden "
              f"{h}, {heads} heads")
    x = t.op("x", "infeed", bytes=b * s * h * SIZE[BF16])
    attention_fwd(t, "attn", x, b, s, h, heads)
    return t


def ex_bert_layer():
    a = argparse.Namespace(batch=8, seq=512, hidden=768, heads=12, ffn=3072, layers=1,
                           vocab=30522, cores=1, forward_only=True, embeddings=False,
                           predictions=76, name="bert_base_layer_fwd", optimizer="adam",
                           seq2=0)
    return gen_bert(a)


def ex_data_parallel():
    T, dims = 4096, [1024, 4096, 4096, 1024]
    t = Trace("data_parallel_step", 8, f"data-parallel training step over 8 cores: a "
              f"{len(dims) - 1}-layer MLP on {T} tokens per core; each layer's gradient "
              f"all-reduce starts as soon as its backward is done, overlapping the rest")
    x = t.op("x", "infeed", bytes=T * dims[0] * SIZE[BF16])
    states = []
    for i in range(len(dims) - 1):
        x, s = dense_fwd(t, f"fc{i}", x, T, dims[i], dims[i + 1],
                         act="gelu" if i < len(dims) - 2 else None)
        states.append(s)
    dy = t.vector("loss_grad", "sub", [x], elements=T * dims[-1])
    for i, s in reversed(list(enumerate(states))):
        dy, g = dense_bwd(t, s, dy)
        grad_sync_and_update(t, f"fc{i}", g, dims[i] * dims[i + 1] + dims[i + 1])
    return t


def bert_base_train_args():
    return argparse.Namespace(batch=8, seq=512, hidden=768, heads=12, ffn=3072, layers=12,
                              vocab=30522, cores=8, forward_only=False, embeddings=True,
                              predictions=76, name="bert_base_train_step", optimizer="adam",
                              seq2=0)


def gen_examples(a):
    out = a.dir
    os.makedirs(out, exist_ok=True)
    for name, make in [("gemm", ex_gemm), ("mlp_fwd_bwd", ex_mlp), ("attention", ex_attention),
                       ("bert_base_layer_fwd", ex_bert_layer),
                       ("data_parallel_step", ex_data_parallel),
                       ("bert_base_train_step", lambda: gen_bert(bert_base_train_args()))]:
        make().write(os.path.join(out, name + ".json"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="model", required=True)

    def common(p, batch, cores=8):
        p.add_argument("--batch", type=int, default=batch, help="batch per core")
        p.add_argument("--cores", type=int, default=cores, help="data-parallel cores")
        p.add_argument("--name", default=None)
        p.add_argument("-o", "--output", default="-", help="output file ('-': stdout)")

    p = sub.add_parser("bert", help="BERT training step (default: BERT-base, seq 512)")
    common(p, 8)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--ffn", type=int, default=3072)
    p.add_argument("--vocab", type=int, default=30522)
    p.add_argument("--predictions", type=int, default=76,
                   help="masked positions per sequence (BERT pre-training: 76 of 512)")
    p.add_argument("--forward-only", action="store_true",
                   help="the forward pass only (an evaluation step; no masked-LM head)")
    p.add_argument("--no-embeddings", dest="embeddings", action="store_false")
    p.add_argument("--seq2", type=int, default=0,
                   help="Siamese: the same encoder also runs a second sequence of this length")
    p.add_argument("--optimizer", choices=["adam", "lamb"], default="adam",
                   help="adam (fine-tuning) or lamb (MLPerf BERT pre-training: two kernels, "
                   "the second needs the tensor's norms)")
    p.add_argument("--dropout-mask", choices=["saved", "regenerated"], default="saved",
                   help="saved (default: TF, PyTorch and JAX keep the keep-mask of their "
                   "stateful random bits for the backward pass) or regenerated from the seed "
                   "(a counter-based generator, as a fused attention kernel may)")
    p.add_argument("--activations", choices=["bf16", "f32"], default="bf16",
                   help="the activations' type: bf16 (mixed precision, default) or f32 (a "
                   "model run without a mixed-precision policy: 4 bytes per element in HBM; "
                   "its matmuls still run at the bf16 rate, the TPU's default precision)")
    p.add_argument("--clip-global-norm", action="store_true",
                   help="clip the gradients by their global norm before the all-reduce, as "
                   "the MLPerf v0.7 BERT submission does: every all-reduce waits for the "
                   "whole backward pass")
    p.add_argument("--f32-softmax", action="store_true",
                   help="attention probabilities in f32 in a bf16 model, as Flax's attention "
                   "computes them (the JAX RoBERTa seed): the softmax reads the bf16 scores "
                   "and writes f32, dropout and the gradients of both run in f32, the matmuls "
                   "that read them convert inside the matmul")
    p.add_argument("--f32-layernorm", action="store_true",
                   help="LayerNorm in f32 as TF 2's model-garden encoder runs it under "
                   "mixed_bfloat16 (MLPerf v0.7 BERT): the residual stream between "
                   "sublayers, its sums and its gradients are f32; the dense layers read it "
                   "with the convert to bf16 fused")
    p.set_defaults(func=gen_bert)
    p = sub.add_parser("resnet50", help="ResNet-50 training step")
    p.add_argument("--forward-only", action="store_true",
                   help="the forward pass and the loss only (an evaluation step)")
    common(p, 32)
    p.add_argument("--image", type=int, default=224)
    p.add_argument("--no-space-to-depth", dest="space_to_depth", action="store_false",
                   help="stem as a 7x7 stride-2 conv on the 3-channel image, as the MLPerf v0.5 "
                   "and v0.6 TensorFlow submissions have it (default: the space-to-depth input "
                   "of later MLPerf TPU rounds, a 4x4 conv on 12 channels)")
    p.add_argument("--optimizer", choices=["momentum", "lars"], default="momentum",
                   help="SGD with momentum, or LARS (the MLPerf v0.6 submissions' "
                   "--enable_lars: per-layer norms of the weights and gradients first)")
    p.set_defaults(func=gen_resnet50)
    p = sub.add_parser("lstm", help="Keras IMDB LSTM training step")
    p.add_argument("--forward-only", action="store_true",
                   help="the forward pass and the loss only (an evaluation step)")
    common(p, 128)
    p.add_argument("--seq", type=int, default=500)
    p.add_argument("--embedding", type=int, default=128)
    p.add_argument("--units", type=int, default=32)
    p.add_argument("--vocab", type=int, default=10000)
    p.set_defaults(func=gen_lstm)
    p = sub.add_parser("unet", help="UNet training step")
    p.add_argument("--forward-only", action="store_true",
                   help="the forward pass and the loss only (an evaluation step)")
    common(p, 4)
    p.add_argument("--image", type=int, default=256)
    p.add_argument("--base", type=int, default=64, help="channels of the first level")
    p.add_argument("--depth", type=int, default=4, help="down-sampling steps")
    p.add_argument("--in-channels", type=int, default=3)
    p.add_argument("--classes", type=int, default=2)
    p.set_defaults(func=gen_unet)
    p = sub.add_parser("resnet-unet", help="ResNet-34-encoder UNet training step (additive "
                       "skips, mask and depth heads)")
    p.add_argument("--forward-only", action="store_true",
                   help="the forward pass and the loss only (an evaluation step)")
    common(p, 128)
    p.add_argument("--image", type=int, default=96)
    p.add_argument("--in-channels", type=int, default=6)
    p.set_defaults(func=gen_resnet_unet)
    p = sub.add_parser("mlperf", help="an MLPerf Training benchmark as Google's TPU "
                       "submission of a round ran it (scripts/tracegen/mlperf.py)")
    p.add_argument("bench", choices=sorted(set(BENCHES) | set(INFERENCE_BENCHES)))
    p.add_argument("--round", required=True, help="MLPerf round: v0.5, v0.6, v0.7")
    p.add_argument("--cores", type=int, required=True,
                   help="TensorCores of the slice the submission ran on (v3-32: 32)")
    p.add_argument("--per-core-batch", type=int, default=None,
                   help="what-if: this per-core batch instead of the submission's")
    p.add_argument("--inference", action="store_true",
                   help="the MLPerf Inference benchmark instead (v0.5: resnet50, ssd-large, "
                   "gnmt)")
    p.add_argument("--scenario", default=None, help="with --inference: offline")
    p.add_argument("--bucket", type=int, default=None,
                   help="GNMT: the length bucket of the step, 0 (sentences under 10 tokens) "
                   "to 4 (40 to 47, the default); with --inference the source length of the "
                   "graph, 0 (32 tokens) to 3 (128, the default)")
    p.add_argument("--name", default=None)
    p.add_argument("-o", "--output", default="-", help="output file ('-': stdout)")
    p.set_defaults(func=gen_mlperf)
    p = sub.add_parser("examples", help="write the small committed examples into DIR")
    p.add_argument("dir")
    p.set_defaults(func=gen_examples)
    a = ap.parse_args(argv)
    if a.model == "examples":
        gen_examples(a)
        return 0
    if a.model == "mlperf":
        try:
            t = gen_mlperf(a)
        except MlperfError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        t.write(a.output)
        return 0
    for field in ("batch", "cores"):
        if getattr(a, field) < 1:
            ap.error(f"--{field} must be positive")
    a.func(a).write(a.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
