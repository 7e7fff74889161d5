"""MLPerf Training workloads as Google's TPU submissions ran them (issue #37).

`gen_trace.py mlperf BENCH --round ROUND --cores N` writes one training step of BENCH (resnet50,
bert, transformer, gnmt, ssd, maskrcnn) with the global batch, per-core batch, precision and
optimizer of the Google submission of round ROUND on the slice of N TensorCores. Every figure
comes from the submission's public code and flags in mlcommons/training_results_v0.5 (commit
c71f2e7c), _v0.6 (f312518c) or _v0.7 (0a8a85a): each benchmark's table (RESNET50, BERT,
TRANSFORMER, GNMT, SSD, MASKRCNN) names the file and flag of every slice's figures, each
generator's docstring the model files it follows, and the trace's metadata repeats them. The
trace records the global batch as its top-level `samples_per_step` (docs/trace-format.md):
throughput = samples_per_step / step time.

Distributed batch norm (`distributed_group_size` > 1: ResNet-50 on v3-2048, SSD on v3-32 to
v3-512): the statistics of every batch-norm layer are all-reduced over the submission's groups
of cores in the forward and the backward pass (convnet.DistributedBatchNorm names the code).
Not in the traces (recorded in the metadata where a submission sets them): the
`iterations_per_loop` host round trip (one per loop of hundreds of steps), evaluation inside
the training loop.

`--inference --scenario offline` writes an MLPerf Inference v0.5 benchmark instead, as Google's
closed submission ran it on one v3-8 (mlcommons/inference_results_v0.5, commit 4191ca07):
resnet50, ssd-large (SSD-ResNet34 at 1200x1200) and gnmt (INFERENCE_BENCHES), each core
running a batch of its own. GNMT's `--bucket K` is there the source length the model's graph
is built for (0 to 3: 32 to 128 tokens; default the longest).

`--per-core-batch B` replaces the submission's per-core batch (a what-if; the metadata says
so, and samples_per_step becomes B x cores); `--bucket K` picks GNMT's length bucket. Spatial
partitioning (`--input_partition_dims`: SSD on v3-1024 and v3-2048, Mask R-CNN on v3-128 and
v3-256) splits each replica's images by rows over its 4 cores, with halo exchanges
(convnet.SpatialPartition, gen_mlperf_ssd, gen_mlperf_maskrcnn); the global batch then splits
over the replicas (num_shards), so the per-core batch may be a fraction (Mask R-CNN v3-256: 2
images per replica of 4 cores). A slice that the submission did not run is an MlperfError
(gen_trace.py prints one `error:` line, exit 2). Python 3 standard library only.
"""
import argparse

from .convnet import (ConvNet, DistributedBatchNorm, SpatialPartition, backward_convnet,
                      consecutive_groups, gen_resnet50, out_dim, pad_lo, replica_grid,
                      replica_tile_groups, tile_groups)
from .core import BF16, F32, SIZE, GlobalNormClip, Trace, dense_bwd, dense_fwd
from .core import grad_sync_and_update, layernorm_bwd, layernorm_fwd
from .lstm import lstm_cell_bwd, lstm_cell_fwd
from .transformer import (attention_bwd, attention_fwd, dropout_bwd, dropout_fwd,
                          encoder_layer_params, ffn_bwd, ffn_fwd, gen_bert)

V05 = "mlcommons/training_results_v0.5@c71f2e7c"
V06 = "mlcommons/training_results_v0.6@f312518c"
V07 = "mlcommons/training_results_v0.7@0a8a85a"


class Slice:
    """One submission's run on `cores` TensorCores: its global batch, iterations per loop and
    the file both are read from (plus any other flag of that file the model uses)."""

    def __init__(self, cores, global_batch, iterations_per_loop, source, **flags):
        self.cores, self.global_batch = cores, global_batch
        self.iterations_per_loop, self.source, self.flags = iterations_per_loop, source, flags


# ---------------------------------------------------------------------------------------------
# ResNet-50 v1.5


def _rn_v06(cores, batch, ipl, group=None):
    src = f"{V06} Google/benchmarks/resnet/tpu-v3-{cores}/run_and_time.sh"
    return Slice(cores, batch, ipl, src, **({"distributed_group_size": group} if group else {}))


RESNET50 = {
    # v0.5: cloud_v2.8 and cloud_v3.8 run the same flags (run_helper.sh of each:
    # --train_batch_size=1024 --num_cores=8 --iterations_per_loop=1251); resnet_main.py of
    # staging/models/rough/resnet: SGD with Nesterov momentum, --precision bfloat16;
    # resnet_model.py: the 7x7 stride-2 stem on the 3-channel image.
    "v0.5": {8: Slice(8, 1024, 1251, f"{V05} v0.5.0/google/cloud_v2.8/resnet-tpuv2-8/code/"
                      "resnet/model/run_helper.sh (cloud_v3.8/resnet-tpuv3-8 the same)")},
    # v0.6: Google/benchmarks/resnet/tpu-v3-N/run_and_time.sh: --train_batch_size,
    # --iterations_per_loop, --num_cores=N, --enable_lars=True, --distributed_group_size
    # (batch-norm groups, where set); resnet_main.py (implementations/tpu-v3-N-resnet/resnet):
    # --precision default bfloat16, --image_size default 224; resnet_model.py: 7x7 stem.
    "v0.6": {s.cores: s for s in (_rn_v06(32, 4096, 1252), _rn_v06(128, 16384, 313),
                                  _rn_v06(256, 32768, 157, 1), _rn_v06(512, 32768, 157, 1),
                                  _rn_v06(1024, 32768, 157, 1), _rn_v06(2048, 32768, 157, 8))},
}


def gen_mlperf_resnet50(rnd, sl, per_core):
    """ResNet-50 v1.5, 224x224, bf16 activations, f32 weights and all-reduce; the 7x7 stem
    (no space-to-depth in these rounds); v0.5 SGD + Nesterov momentum, v0.6 LARS
    (--enable_lars=True)."""
    opt = "lars" if rnd == "v0.6" else "momentum"
    group = sl.flags.get("distributed_group_size", 1)
    # --distributed_group_size > 1: resnet_model.py's distributed_batch_norm, two
    # cross_replica_sums (mean_ss, variance_ss) per layer over consecutive replicas.
    dbn = DistributedBatchNorm(consecutive_groups(sl.cores, group), 2,
                               "resnet_model.py distributed_batch_norm") if group > 1 else None
    a = argparse.Namespace(batch=per_core, cores=sl.cores, image=224, space_to_depth=False,
                           optimizer=opt, forward_only=False, dbn=dbn,
                           name=f"mlperf_{rnd}_resnet50_{sl.cores}")
    return gen_resnet50(a), {"optimizer": "LARS" if opt == "lars" else "SGD Nesterov momentum",
                             "precision": "bf16 activations, f32 weights and gradients"}


# ---------------------------------------------------------------------------------------------
# BERT-Large


BERT = {
    # v0.7: Google/benchmarks/bert/tpu-v3-32-TF2.0/run_and_time.sh: --train_batch_size=448,
    # --max_seq_length=512, --max_predictions_per_seq=76, --optimizer_type=lamb, --dtype=bf16,
    # --steps_per_loop=1117; bert_config.json (BERT-Large): 24 layers, hidden 1024, 16 heads,
    # intermediate 4096, vocab 30522. The TF 2 model garden's encoder runs LayerNorm in f32 and
    # model_training_utils.py clips by the global norm before the all-reduce
    # (docs/VALIDATION.md, BERT-Large v3-32).
    "v0.7": {32: Slice(32, 448, 1117,
                       f"{V07} Google/benchmarks/bert/tpu-v3-32-TF2.0/run_and_time.sh")},
}


def gen_mlperf_bert(rnd, sl, per_core):
    """BERT-Large pre-training step: seq 512, 76 masked predictions, LAMB, f32 LayerNorm,
    global-norm clipping (gen_trace.py bert --optimizer lamb --f32-layernorm
    --clip-global-norm)."""
    a = argparse.Namespace(batch=per_core, seq=512, hidden=1024, heads=16, ffn=4096, layers=24,
                           vocab=30522, predictions=76, cores=sl.cores, forward_only=False,
                           embeddings=True, seq2=0, optimizer="lamb", dropout_mask="saved",
                           activations=BF16, clip_global_norm=True, f32_layernorm=True,
                           name=f"mlperf_{rnd}_bert_{sl.cores}")
    return gen_bert(a), {"optimizer": "LAMB", "precision": "bf16 (--dtype=bf16), f32 LayerNorm"}


# ---------------------------------------------------------------------------------------------
# Transformer (big), WMT English-German, packed to 256 tokens


def _tf_v06(cores, tokens, ipl, bf16_reduce=False):
    src = f"{V06} Google/benchmarks/transformer/tpu-v3-{cores}/run_and_time.sh"
    return Slice(cores, cores * tokens // TRANSFORMER_PACKED, ipl, src,
                 tokens_per_core=tokens, bfloat16_grads_all_reduce=bf16_reduce)


# translate_ende_wmt32k_packed: examples packed to 256 tokens (data_generators/
# generator_utils.py, pack_examples: packed_length=256); on the TPU each core's batch is
# hparams.batch_size // max_length sequences (data_generators/problem.py,
# tpu_batch_size_per_shard), max_length of a packed problem being its packed length.
TRANSFORMER_PACKED = 256
TRANSFORMER = {
    # v0.6: Google/benchmarks/transformer/tpu-v3-N/run_and_time.sh: --hparams batch_size=
    # (tokens per core), bfloat16_grads_all_reduce=true (v3-32 only), --iterations_per_loop,
    # --tpu_num_shards=N; --hparams_set=transformer_mlperf_tpu (implementations/
    # tpu-v3-N-transformer/transformer/models/transformer.py): hidden_size 1024, filter_size
    # 4096, num_heads 16, activation_dtype bfloat16, 6 + 6 layers (transformer_base_v1:
    # num_hidden_layers=6), optimizer Adam (common_hparams.py), relu FFN.
    "v0.6": {s.cores: s for s in (_tf_v06(32, 4096, 1087, True), _tf_v06(128, 1024, 1087),
                                  _tf_v06(256, 512, 1087), _tf_v06(512, 1024, 271),
                                  _tf_v06(1024, 512, 271), _tf_v06(2048, 256, 271))},
}
# vocab.translate_ende_wmt32k.32768.subwords (transformer/test_data of the submission): 33,708
# subwords, one a line; the shared source/target vocabulary of translate_ende_wmt32k.
TRANSFORMER_VOCAB = 33708


def cross_attention_fwd(t, p, x, mem, b, s, h, heads):
    """Encoder-decoder attention: queries from the decoder stream x, keys and values from the
    encoder's output mem (both b x s tokens here: packed source and target are 256 long)."""
    T, dh = b * s, h // heads
    st = {"x": x, "mem": mem}
    q, st["q"] = dense_fwd(t, f"{p}.q", x, T, h, h)
    k, st["k"] = dense_fwd(t, f"{p}.k", mem, T, h, h)
    v, st["v"] = dense_fwd(t, f"{p}.v", mem, T, h, h)
    scores = t.matmul(f"{p}.scores", s, dh, s, deps=[q, k], batch=b * heads, transpose_rhs=True)
    sm = t.vector(f"{p}.softmax", "softmax", [scores], rows=b * heads * s, cols=s, fused=True)
    probs = dropout_fwd(t, f"{p}.probs_dropout", sm, b * heads * s * s)
    ctx = t.matmul(f"{p}.context", s, s, dh, deps=[probs, v], batch=b * heads)
    o, st["o"] = dense_fwd(t, f"{p}.out", ctx, T, h, h)
    st["o_drop"] = o = dropout_fwd(t, f"{p}.out_dropout", o, T * h)
    r = t.vector(f"{p}.residual", "add", [o, x], elements=T * h, fused=True)
    y, st["ln"] = layernorm_fwd(t, f"{p}.ln", r, T, h)
    st.update(q_out=q, k_out=k, v_out=v, probs=probs, softmax=sm, b=b, s=s, h=h, heads=heads)
    return y, st


def cross_attention_bwd(t, p, st, dy):
    """Returns (gradient of the decoder stream, gradient of the encoder output, grads)."""
    b, s, h, heads = st["b"], st["s"], st["h"], st["heads"]
    T, dh = b * s, h // heads
    dr = layernorm_bwd(t, st["ln"], dy)
    do = dropout_bwd(t, f"{p}.out_dropout_grad", dr, st["o_drop"], T * h)
    dctx, g_o = dense_bwd(t, st["o"], do)
    dprobs = t.matmul(f"{p}.dprobs", s, dh, s, deps=[dctx, st["v_out"]], batch=b * heads,
                      transpose_rhs=True)
    dv = t.matmul(f"{p}.dv", s, s, dh, deps=[st["probs"], dctx], batch=b * heads,
                  transpose_lhs=True)
    dprobs = dropout_bwd(t, f"{p}.probs_dropout_grad", dprobs, st["probs"], b * heads * s * s)
    dscores = t.vector(f"{p}.softmax_grad", "softmax_grad", [dprobs, st["softmax"]],
                       rows=b * heads * s, cols=s, fused=True)
    dq = t.matmul(f"{p}.dq", s, s, dh, deps=[dscores, st["k_out"]], batch=b * heads)
    dk = t.matmul(f"{p}.dk", s, s, dh, deps=[dscores, st["q_out"]], batch=b * heads,
                  transpose_lhs=True)
    dxq, g_q = dense_bwd(t, st["q"], dq)
    dmk, g_k = dense_bwd(t, st["k"], dk)
    dmv, g_v = dense_bwd(t, st["v"], dv)
    dx = t.vector(f"{p}.dx", "add", [dxq, dr], elements=T * h, fused=True)
    dmem = t.vector(f"{p}.dmem", "add", [dmv, dmk], elements=T * h, fused=True)
    return dx, dmem, g_o + g_q + g_k + g_v + [dr]


def gen_mlperf_transformer(rnd, sl, per_core):
    """Transformer-big training step (t2t `transformer_mlperf_tpu`): per core `per_core`
    packed sequences of 256 source and 256 target tokens; 6 encoder layers (self-attention,
    relu FFN), 6 decoder layers (self-attention, encoder-decoder attention, FFN), hidden 1024,
    16 heads, FFN 4096, dropout 0.1 (transformer_base_v2), the target embedding shared with
    the softmax weights (shared_embedding_and_softmax_weights) over 33,708 subwords, Adam.
    Gradients all-reduced in bf16 where the run sets bfloat16_grads_all_reduce=true (v3-32),
    else f32. t2t normalises before each sublayer (layer_preprocess_sequence "n"); the
    trace's blocks normalise after it (BERT's order): one LayerNorm per sublayer either way.
    The causal mask of the decoder's self-attention is not a saving on the TPU (XLA computes
    the full score matrix and adds the mask)."""
    b, s, h, heads, f, L, V = per_core, TRANSFORMER_PACKED, 1024, 16, 4096, 6, TRANSFORMER_VOCAB
    T = b * s
    t = Trace(f"mlperf_{rnd}_transformer_{sl.cores}", sl.cores,
              f"Transformer-big (6+6 layers, hidden {h}, {heads} heads, FFN {f}, vocab {V}), "
              f"{b} packed sequences of {s} tokens per core x {sl.cores} cores: forward, "
              f"backward, gradient all-reduce per layer, Adam")
    if sl.flags.get("bfloat16_grads_all_reduce"):
        t.grad_reduce_dtype = BF16
    src = t.op("input_ids", "infeed", bytes=T * SIZE["s32"])
    tgt = t.op("target_ids", "infeed", bytes=T * SIZE["s32"])

    def embed(p, ids):
        e = t.vector(f"{p}.emb", "gather", [ids], rows=T, cols=h, table_rows=V,
                     operands=[None, ids])
        pos = t.vector(f"{p}.emb.position", "add", [e], elements=T * h, fused=True)
        return dropout_fwd(t, f"{p}.emb.dropout", pos, T * h)

    # Encoder.
    x = embed("enc", src)
    enc = []
    for i in range(L):
        p = f"enc.l{i}"
        x, sa = attention_fwd(t, f"{p}.attn", x, b, s, h, heads)
        x, sf = ffn_fwd(t, p, x, T, h, f, act="relu")
        enc.append((p, sa, sf))
    mem, s_mem_ln = layernorm_fwd(t, "enc.final_ln", x, T, h)
    # Decoder.
    y = embed("dec", tgt)
    dec = []
    for i in range(L):
        p = f"dec.l{i}"
        y, sa = attention_fwd(t, f"{p}.self", y, b, s, h, heads)
        y, sc = cross_attention_fwd(t, f"{p}.cross", y, mem, b, s, h, heads)
        y, sf = ffn_fwd(t, p, y, T, h, f, act="relu")
        dec.append((p, sa, sc, sf))
    y, s_dec_ln = layernorm_fwd(t, "dec.final_ln", y, T, h)
    # Softmax over the vocabulary with the shared embedding as its weights; the loss gradient
    # (label smoothing 0.1) arrives as d(logits) = softmax - smoothed one-hot.
    logits = t.matmul("softmax.logits", T, h, V, deps=[y], transpose_rhs=True)
    # Rows of 33,708 logits do not fit one VMEM tile: the softmax reads them from HBM.
    probs = t.vector("softmax.softmax", "softmax", [logits], rows=T, cols=V, out_dtype=F32)
    dlogits = t.vector("softmax.dlogits", "sub", [probs], elements=T * V, dtype=F32,
                       fused=True, out_dtype=BF16)
    dy = t.matmul("softmax.dx", T, V, h, deps=[dlogits])
    demb_out = t.matmul("softmax.dembedding", V, T, h, deps=[dlogits, y], transpose_lhs=True,
                        out_dtype=F32)
    dy = layernorm_bwd(t, s_dec_ln, dy)
    dmem = None
    layer_params = encoder_layer_params(h, f)
    cross_params = 4 * (h * h + h) + 2 * h
    for p, sa, sc, sf in reversed(dec):
        dy, g_f = ffn_bwd(t, p, sf, dy)
        dy, dm, g_c = cross_attention_bwd(t, f"{p}.cross", sc, dy)
        dmem = dm if dmem is None else t.vector(f"{p}.dmem_sum", "add", [dm, dmem],
                                                elements=T * h, fused=True)
        dy, g_a = attention_bwd(t, f"{p}.self", sa, dy)
        grad_sync_and_update(t, p, g_f + g_c + g_a, layer_params + cross_params, "adam")
    dtgt = dropout_bwd(t, "dec.emb.dropout_grad", dy, "dec.emb.dropout", T * h)
    dtgt = t.vector("dec.emb_grad", "scatter_add", [dtgt], rows=T, cols=h, table_rows=V)
    grad_sync_and_update(t, "dec.emb", [dtgt, demb_out], V * h, "adam")
    dx = layernorm_bwd(t, s_mem_ln, dmem)
    for p, sa, sf in reversed(enc):
        dx, g_f = ffn_bwd(t, p, sf, dx)
        dx, g_a = attention_bwd(t, f"{p}.attn", sa, dx)
        grad_sync_and_update(t, p, g_f + g_a, layer_params, "adam")
    dsrc = dropout_bwd(t, "enc.emb.dropout_grad", dx, "enc.emb.dropout", T * h)
    dsrc = t.vector("enc.emb_grad", "scatter_add", [dsrc], rows=T, cols=h, table_rows=V)
    grad_sync_and_update(t, "enc.emb", [dsrc], V * h, "adam")
    params = L * layer_params + L * (layer_params + cross_params) + 2 * V * h + 4 * h
    t.parameter_bytes = params * 3 * SIZE[F32]  # f32 weights and Adam's two moments
    return t, {"optimizer": "Adam", "precision": "bf16 activations (activation_dtype), f32 "
               "weights; gradient all-reduce " + t.grad_reduce_dtype,
               "tokens_per_core": sl.flags["tokens_per_core"], "packed_length": s,
               "vocab": V}


# ---------------------------------------------------------------------------------------------
# GNMT (v0.6), WMT16 English-German


# run_and_time.sh of every v0.6 slice: --num_examples_per_epoch
GNMT_EXAMPLES_PER_EPOCH = 3442299


def _gnmt_v06(cores, batch):
    # One loop is an epoch: estimator.py, steps_per_epoch = int(num_examples_per_epoch /
    # batch_size), the LowLevelRunner's train_iterations.
    return Slice(cores, batch, GNMT_EXAMPLES_PER_EPOCH // batch,
                 f"{V06} Google/benchmarks/gnmt/tpu-v3-{cores}/run_and_time.sh")


GNMT = {
    # v0.6: Google/benchmarks/gnmt/tpu-v3-N/run_and_time.sh: --batch_size (global), --num_shards=N,
    # --activation_dtype=bfloat16; nmt.py (implementations/tpu-v3-N-gnmt/nmt) defaults:
    # --num_units 1024, --num_layers 4, --optimizer adam, --src_max_len / --tgt_max_len 48,
    # --num_buckets 5, --max_gradient_norm 5.0, --dropout 0.2.
    "v0.6": {s.cores: s for s in (_gnmt_v06(32, 4096), _gnmt_v06(128, 8192),
                                  _gnmt_v06(256, 8192), _gnmt_v06(512, 8192),
                                  _gnmt_v06(1024, 8192))},
}
# The BPE vocabulary (vocab.bpe.32000 of the MLPerf GNMT data): 32,316 entries, as the v0.5
# Google GNMT log prints it (training_results_v0.5, cloud_v2.8/gnmt-tpuv2-8/results/tpu/gnmt/
# result_0.txt: preproc_vocab_size {"src": 32316, "tgt": 32316}); v0.6 trains on the same data.
GNMT_VOCAB, GNMT_UNITS, GNMT_MAX_LEN, GNMT_BUCKETS = 32316, 1024, 48, 5


def gnmt_bucket_lengths(bucket):
    """(source steps, target steps) of a step drawn from length bucket `bucket`. The input
    pipeline (distributed_iterator_utils.py) keeps pairs with both lengths below 48
    (src_max_len, tgt_max_len), puts a pair in bucket min(5, max(src_len, tgt_len) // w) with
    w = (48 + 5 - 1) // 5 = 10, and batches each global step from one bucket; the model's while
    loops run to the longest sequence of the batch (model.py: max_seq_len =
    tf.reduce_max(seq_len)), which for a batch of thousands of pairs is the bucket's longest:
    10 k + 9 source tokens (47 at most), and one more on the target side (its input starts
    with <s>)."""
    src = min(10 * bucket + 9, GNMT_MAX_LEN - 1)
    return src, src + 1


def gen_mlperf_gnmt(rnd, sl, per_core, bucket=GNMT_BUCKETS - 1):
    """GNMT training step (model.py of the submission): a bidirectional LSTM layer and three
    unidirectional ones (residual from the third on) over the source, an attention LSTM
    (normalised Bahdanau attention over the 48 padded source positions, its context fed to
    every decoder layer) and three more LSTM layers over the target, 1024 units, the output
    projection to 32,316 subwords with label-smoothed cross entropy, gradients clipped by their
    global norm (max_gradient_norm 5.0) before CrossShardOptimizer's all-reduce, Adam.
    bf16 activations (--activation_dtype=bfloat16). Each LSTM's input projection is one matmul
    over all its steps (input_projection); its recurrent weight gradient is one matmul after
    the backward loop (build_rnn's grad); the attention cell's backward recomputes the
    attention (attention_cell_grad). One step of length bucket `bucket` (gnmt_bucket_lengths;
    default: the longest): the mix of buckets over an epoch follows the data's length
    histogram, which the submission does not publish. Left out: the zero-state recurrent
    matmul of each loop's first step."""
    B, U, V, PAD = per_core, GNMT_UNITS, GNMT_VOCAB, GNMT_MAX_LEN
    U4 = 4 * U
    Ls, Lt = gnmt_bucket_lengths(bucket)
    t = Trace(f"mlperf_{rnd}_gnmt_{sl.cores}", sl.cores,
              f"GNMT (4+4 LSTM layers of {U} units, attention, vocab {V}), {B} sentence pairs "
              f"per core x {sl.cores} cores, length bucket {bucket} ({Ls} source, {Lt} target "
              f"steps): forward, backward, global-norm clipping, all-reduce, Adam")
    clip = GlobalNormClip(t)
    # source, target input and target output ids, padded to 48 (int32)
    ids = t.op("input", "infeed", bytes=B * 3 * PAD * SIZE["s32"])

    def embed(p):
        e = t.vector(f"{p}.emb", "gather", [ids], rows=PAD * B, cols=U, table_rows=V,
                     operands=[None, ids])
        return dropout_fwd(t, f"{p}.emb.dropout", e, PAD * B * U)

    def layer_fwd(p, x, d_in, L):
        """An LSTM layer over L steps reading x (L*B x d_in)."""
        xp = t.matmul(f"{p}.in_proj", L * B, d_in, U4, deps=[x])
        h = c = None
        steps = []
        for i in range(L):
            h, c, st = lstm_cell_fwd(t, f"{p}.t{i}", B, U, xp, h, c)
            steps.append(st)
        return h, {"p": p, "x": x, "d_in": d_in, "L": L, "steps": steps, "h": h}

    def layer_bwd(s, dy, per_step=None):
        """Backward through time; dy: the gradient of the layer's outputs (all steps);
        per_step(st, dgates): extra work per step (the attention cell's). Returns the
        gradient of the layer's input and the weight gradient ops."""
        p, L = s["p"], s["L"]
        dh = dc = dg = None
        for st in reversed(s["steps"]):
            dh_in = dy if dh is None else t.vector(f"{st['p']}.dh_sum", "add", [dh, dy],
                                                   elements=B * U, fused=True)
            dg, _, dc = lstm_cell_bwd(t, st, B, U, dh_in, dc)
            if per_step:
                per_step(st, dg)
            dh = t.matmul(f"{st['p']}.dh_prev", B, U4, U, deps=[dg], transpose_rhs=True)
        dk = t.matmul(f"{p}.dkernel", U, L * B, U4, deps=[s["h"], dg], transpose_lhs=True,
                      out_dtype=F32)
        db = t.vector(f"{p}.dbias", "reduce_sum", [dg], rows=U4, cols=L * B, out_dtype=F32)
        dx = t.matmul(f"{p}.in_proj.dx", L * B, U4, s["d_in"], deps=[dg], transpose_rhs=True)
        dki = t.matmul(f"{p}.in_proj.dw", s["d_in"], L * B, U4, deps=[s["x"], dg],
                       transpose_lhs=True, out_dtype=F32)
        return dx, [dk, db, dki]

    def lstm_params(d_in):
        return U * U4 + U4 + d_in * U4  # kernel, bias, input_kernel

    # Encoder.
    x = embed("enc")
    fw, s_fw = layer_fwd("enc.l0.fw", x, U, Ls)
    bw, s_bw = layer_fwd("enc.l0.bw", x, U, Ls)
    enc = [("enc.l0", None, 2 * U, [s_fw, s_bw])]
    out = t.vector("enc.l0.concat_mask", "mul", [fw, bw], elements=PAD * B * 2 * U)
    for i in range(1, 4):
        d_in = 2 * U if i == 1 else U
        xin = dropout_fwd(t, f"enc.l{i}.dropout", out, Ls * B * d_in)
        o, s_l = layer_fwd(f"enc.l{i}", xin, d_in, Ls)
        if i > 1:
            o = t.vector(f"enc.l{i}.residual", "add", [o, out], elements=Ls * B * U)
        enc.append((f"enc.l{i}", xin, d_in, [s_l]))
        out = o
    mem = t.vector("enc.mask", "mul", [out], elements=PAD * B * U)
    # Decoder: the attention memory's keys, then the attention LSTM.
    keys = t.matmul("dec.memory_layer", PAD * B, U, U, deps=[mem])
    y = embed("dec")
    att = {}

    def attention_step(i):
        """The context of the previous step times attention_kernel, added to the gates."""
        prev = att.get(i - 1)
        return t.matmul(f"dec.l0.t{i}.ctx_in", B, U, U4, deps=[prev["ctx"]] if prev else [])

    def attention_fwd_step(p, h):
        q = t.matmul(f"{p}.query", B, U, U, deps=[h])
        e = t.vector(f"{p}.energy", "tanh", [q, keys], elements=PAD * B * U, operands=[keys])
        sc = t.vector(f"{p}.score", "reduce_sum", [e], rows=PAD * B, cols=U, fused=True)
        al = t.vector(f"{p}.align", "softmax", [sc], rows=B, cols=PAD, dtype=F32,
                      out_dtype=BF16)
        w = t.vector(f"{p}.weighted", "mul", [al, mem], elements=PAD * B * U,
                     operands=[mem, al])
        ctx = t.vector(f"{p}.context", "reduce_sum", [w], rows=B * U, cols=PAD, fused=True)
        return {"q": q, "e": e, "al": al, "ctx": ctx}

    xp0 = dropout_fwd(t, "dec.l0.dropout", y, Lt * B * U)
    # The attention LSTM: its cell's gates add the previous context's projection, and the
    # attention follows each step's cell.
    h = None
    xp = t.matmul("dec.l0.in_proj", Lt * B, U, U4, deps=[xp0])
    c = None
    steps = []
    for i in range(Lt):
        a = attention_step(i)
        g_in = t.vector(f"dec.l0.t{i}.ctx_add", "add", [a, xp], elements=B * U4, fused=True)
        h, c, st = lstm_cell_fwd(t, f"dec.l0.t{i}", B, U, g_in, h, c)
        att[i] = attention_fwd_step(f"dec.l0.t{i}.att", h)
        st.update(step=i, h_out=h)
        steps.append(st)
    s_att = {"p": "dec.l0", "x": xp0, "d_in": U, "L": Lt, "steps": steps, "h": h}
    ctx_all = att[Lt - 1]["ctx"]
    dec = []
    o = h
    for i in range(1, 4):
        # concat([o, context]) and dropout, one fusion reading both
        cat = t.vector(f"dec.l{i}.dropout", "dropout", [o, ctx_all], elements=Lt * B * 2 * U,
                       mask=t.dropout_mask, operands=[o])
        o2, s_l = layer_fwd(f"dec.l{i}", cat, 2 * U, Lt)
        if i > 1:
            o2 = t.vector(f"dec.l{i}.residual", "add", [o2, o], elements=Lt * B * U)
        dec.append((f"dec.l{i}", s_l))
        o = o2
    # Output projection and label-smoothed cross entropy (f32), masked at the padding.
    T = Lt * B
    logits = t.matmul("out.logits", T, U, V, deps=[o], out_dtype=F32)
    probs = t.vector("out.softmax", "softmax", [logits], rows=T, cols=V, dtype=F32)
    dlogits = t.vector("out.dlogits", "sub", [probs], elements=T * V, dtype=F32, fused=True,
                       out_dtype=BF16)
    do = t.matmul("out.dx", T, V, U, deps=[dlogits], transpose_rhs=True)
    dw_out = t.matmul("out.dw", U, T, V, deps=[o, dlogits], transpose_lhs=True, out_dtype=F32)
    clip.add("out", [dw_out], U * V, "adam")
    # Decoder backward: layers 3..1, whose inputs are [o, context] (2U): the first half of
    # their input gradient goes to the layer below, the second to the attention context.
    dctx = None
    for name, s_l in reversed(dec):
        dx, g = layer_bwd(s_l, do)
        clip.add(name, g, lstm_params(2 * U), "adam")
        dctx = dx if dctx is None else t.vector(f"{name}.dctx_sum", "add", [dx, dctx],
                                                elements=T * U, fused=True)
        do = t.vector(f"{name}.dx_sum", "add", [dx, do], elements=T * U) if name != "dec.l1" \
            else dx
    # The attention LSTM backward: per step the attention recomputed, then its gradient.
    dkeys_acc, dvals_acc = [], []

    def attention_bwd_step(st, dg):
        p = st["p"] + ".attg"
        a = attention_fwd_step(p, st["h_out"])  # recomputed from the cell's new state
        # d values += align x d context; d align = d context . values (over the units)
        dw = t.vector(f"{p}.dweighted", "mul", [dctx, a["al"]], elements=PAD * B * U)
        dal = t.vector(f"{p}.dalign", "reduce_sum", [dctx, mem], rows=PAD * B, cols=U,
                       operands=[dctx, mem])
        dsc = t.vector(f"{p}.dscore", "softmax_grad", [dal, a["al"]], rows=B, cols=PAD)
        de = t.vector(f"{p}.denergy", "tanh_grad", [dsc, a["e"]], elements=PAD * B * U,
                      operands=[None, a["e"]])
        dq = t.vector(f"{p}.dquery", "reduce_sum", [de], rows=B * U, cols=PAD)
        # build_rnn's grad loop adds each step's gradient of the attention's theta (its keys
        # and values) into an accumulator
        acc = [dkeys_acc[-1]] if dkeys_acc else []
        dkeys_acc.append(t.vector(f"{p}.dkeys_acc", "add", [de] + acc, elements=PAD * B * U))
        acc = [dvals_acc[-1]] if dvals_acc else []
        dvals_acc.append(t.vector(f"{p}.dvalues_acc", "add", [dw] + acc, elements=PAD * B * U,
                                  fused=True))
        t.matmul(f"{p}.dh_query", B, U, U, deps=[dq], transpose_rhs=True)
        t.matmul(f"{p}.dquery_kernel", U, B, U, deps=[st["tc"], dq], transpose_lhs=True,
                 out_dtype=F32)
        t.matmul(f"{p}.dctx_prev", B, U4, U, deps=[dg], transpose_rhs=True)

    dx0, g0 = layer_bwd(s_att, do, attention_bwd_step)
    dk_att = t.matmul("dec.l0.dattention_kernel", U, T, U4, deps=[ctx_all, dx0],
                      transpose_lhs=True, out_dtype=F32)
    # The memory's gradient: keys through the memory layer, plus the values' (the attention
    # theta's gradients, accumulated over the steps by the backward loop).
    dkeys = dkeys_acc[-1]
    dmem = t.matmul("dec.memory_layer.dx", PAD * B, U, U, deps=[dkeys], transpose_rhs=True)
    dwm = t.matmul("dec.memory_layer.dw", U, PAD * B, U, deps=[mem, dkeys], transpose_lhs=True,
                   out_dtype=F32)
    dmem = t.vector("dec.dmem_sum", "add", [dmem] + dvals_acc[-1:], elements=PAD * B * U,
                    fused=True)
    clip.add("dec.l0", g0 + [dk_att, dwm], lstm_params(U) + U * U4 + 2 * U * U + 2 * U + 1,
             "adam")
    demb = t.vector("dec.emb_grad", "scatter_add", [dx0], rows=Lt * B, cols=U, table_rows=V)
    clip.add("dec.emb", [demb], V * U, "adam")
    # Encoder backward.
    dout = t.vector("enc.mask_grad", "mul", [dmem], elements=Ls * B * U)
    for name, xin, d_in, states in reversed(enc):
        if name == "enc.l0":
            dfw, gf = layer_bwd(states[0], dout)
            dbw, gb = layer_bwd(states[1], dout)
            clip.add(name, gf + gb, 2 * lstm_params(U), "adam")
            dx = t.vector("enc.l0.dx_sum", "add", [dfw, dbw], elements=Ls * B * U)
        else:
            dx, g = layer_bwd(states[0], dout)
            clip.add(name, g, lstm_params(d_in), "adam")
            if name in ("enc.l2", "enc.l3"):
                dx = t.vector(f"{name}.dx_sum", "add", [dx, dout], elements=Ls * B * U)
        dout = dx
    demb = t.vector("enc.emb_grad", "scatter_add", [dout], rows=Ls * B, cols=U, table_rows=V)
    clip.add("enc.emb", [demb], V * U, "adam")
    clip.finish()
    params = (3 * V * U + 2 * lstm_params(U) + lstm_params(2 * U) + 2 * lstm_params(U)
              + lstm_params(U) + U * U4 + 2 * U * U + 2 * U + 1 + 3 * lstm_params(2 * U))
    t.parameter_bytes = params * 3 * SIZE[F32]  # f32 weights and Adam's two moments
    return t, {"optimizer": "Adam, gradients clipped by their global norm (5.0)",
               "precision": "bf16 activations (--activation_dtype=bfloat16), f32 weights",
               "bucket": bucket, "source_steps": Ls, "target_steps": Lt, "vocab": V}


# ---------------------------------------------------------------------------------------------
# SSD-ResNet34 (v0.6), COCO 300x300


def _ssd_v06(cores, batch, ipl, s2d, group, partition=None, tiles=None):
    flags = {"conv0_space_to_depth": s2d, "distributed_group_size": group}
    if tiles:  # --hparams tpu_slice_row, tpu_slice_col, dbn_tile_row, dbn_tile_col
        flags.update(zip(("tpu_slice_row", "tpu_slice_col", "dbn_tile_row", "dbn_tile_col"),
                         tiles))
    if partition:  # --input_partition_dims (N, H, W, C) and --num_shards (the replicas)
        flags["input_partition_dims"] = partition
        flags["num_shards"] = cores // partition[1]
    return Slice(cores, batch, ipl, f"{V06} Google/benchmarks/ssd/tpu-v3-{cores}/run_and_time.sh",
                 **flags)


SSD = {
    # v0.5: v0.5.0/google/cloud_v3.8/ssd-tpuv3-8/code/ssd/model/run_helper.sh:
    # --train_batch_size=1024, --num_shards=8, --iterations_per_loop=625, --hparams
    # use_bfloat16=true; staging/models/rough/ssd: the same network as v0.6 (its
    # resnet_v1_generator also builds block group 4, whose output nothing reads: XLA drops it),
    # the 7x7 stem (no conv0_space_to_depth yet), batch norm per core
    # (distributed_group_size=1 in ssd_main.py).
    "v0.5": {8: Slice(8, 1024, 625, f"{V05} v0.5.0/google/cloud_v3.8/ssd-tpuv3-8/code/ssd/"
                      "model/run_helper.sh", conv0_space_to_depth=False,
                      distributed_group_size=1)},
    # v0.6: Google/benchmarks/ssd/tpu-v3-N/run_and_time.sh: --train_batch_size,
    # --iterations_per_loop, --num_shards, --hparams use_bfloat16=true, conv0_space_to_depth,
    # distributed_group_size (with tpu_slice_row/col and dbn_tile_row/col: the groups are
    # tiles of chips) and on 1024 and 2048 cores --input_partition_dims=1,4,1,1 with
    # --num_shards=256 / 512 replicas of 4 cores (tpu_slice_row/col and dbn_tile_row/col then
    # count replicas: 16 x 16 in tiles of 2 x 4, 16 x 32 in tiles of 2 x 8);
    # implementations/tpu-v3-N-ssd/ssd: ssd_constants.py (IMAGE_SIZE 300, NUM_CLASSES 81,
    # FEATURE_SIZES 38, 19, 10, 5, 3, 1, NUM_DEFAULTS 4, 6, 6, 6, 4, 4: 8,732 anchors,
    # NEGS_PER_POSITIVE 3), ssd_architecture.py (the network), ssd_model.py (the loss:
    # softmax cross entropy with hard negative mining by topk_mask.py, smooth L1;
    # MomentumOptimizer under CrossShardOptimizer).
    "v0.6": {s.cores: s for s in (_ssd_v06(32, 1024, 625, False, 2),
                                  _ssd_v06(128, 1024, 625, True, 8, tiles=(8, 8, 2, 2)),
                                  _ssd_v06(256, 1024, 625, True, 16, tiles=(16, 8, 2, 4)),
                                  _ssd_v06(512, 2048, 313, True, 16, tiles=(16, 16, 2, 4)),
                                  _ssd_v06(1024, 2048, 313, True, 8, [1, 4, 1, 1],
                                           tiles=(16, 16, 2, 4)),
                                  _ssd_v06(2048, 2048, 313, True, 16, [1, 4, 1, 1],
                                           tiles=(16, 32, 2, 8)))},
}
SSD_IMAGE, SSD_CLASSES, SSD_ANCHORS = 300, 81, 8732
# The extra layers after ResNet-34's third group (ssd_architecture.py): per layer the 1x1
# convolution's width, the 3x3 one's output channels, stride and padding.
SSD_EXTRAS = ((256, 512, 2, "same"), (256, 512, 2, "same"), (128, 256, 2, "same"),
              (128, 256, 1, "valid"), (128, 256, 1, "valid"))


def ssd_features(net, x, hw, extras):
    """SSD-ResNet34's feature layers after the stem's max pool (x: 64 channels of hw): the
    first three groups of ResNet-34 (basic blocks of 64, 128, 256; the third unstrided, as
    ssd_architecture.py keeps it), then the extra layers (bias, ReLU, no batch norm). Records
    each output's per-core size in net.size. Returns [(id, (h, w), channels)] per level."""
    c = 64
    for gi, (width, blocks, stride0) in enumerate([(64, 3, 1), (128, 4, 2), (256, 6, 1)]):
        for bi in range(blocks):
            x, hw = net.basic_block(f"g{gi + 1}b{bi}", x, hw, c, width,
                                    stride0 if bi == 0 else 1, f"group{gi + 1}")
            c = width
    feats = [(x, hw, c)]
    for i, (mid, out_c, stride, pad) in enumerate(extras):
        p = f"extra{i + 4}"
        y1, _ = net.conv(f"{p}.c1", x, hw, c, mid, 1, bn=False, group=p)
        net.size[y1] = net.elems(hw, mid)
        x, hw = net.conv(f"{p}.c2", y1, hw, mid, out_c, 3, stride=stride, bn=False, group=p,
                         padding=pad)
        c = out_c
        net.size[x] = net.elems(hw, c)
        feats.append((x, hw, c))
    return feats


SSD_FEATURES = ((38, 4), (19, 6), (10, 6), (5, 6), (3, 4), (1, 4))  # (size, anchors per cell)


def gen_mlperf_ssd(rnd, sl, per_core):
    """SSD training step (ssd_architecture.py): the ResNet-34 backbone to its third block
    group (basic blocks [3, 4, 6], the third at stride 1: 38x38x256), five extra feature
    stages (1x1 then 3x3 convolutions with bias and ReLU, no batch norm: 19x19x512, 10x10x512,
    5x5x256, 3x3x256, 1x1x256; the last two 3x3 'valid'), per level a 3x3 class head (81 x
    anchors) and box head (4 x anchors); the loss over the 8,732 anchors: softmax cross
    entropy in f32 on the heads concatenated anchors-major (concat_outputs), hard negative
    mining (v0.6 topk_mask.py: two binary searches over the bits of the kth loss, a while
    loop of 31 counting passes each; v0.5 ssd_model.py: argsort(argsort(losses)), two XLA
    sorts of each image's 8,732 losses), smooth L1 on the boxes; SGD with momentum; bf16
    (use_bfloat16=true). The stem is the 7x7 stride-2 convolution, or with
    conv0_space_to_depth=true the 4x4 convolution on the 2x2 space-to-depth image
    (conv0_space_to_depth in ssd_architecture.py). Anchor matching and box encoding run in the
    host's input pipeline (dataloader.py): the step's input is the image with its per-anchor
    labels and box targets. With distributed_group_size > 1 the batch-norm statistics are
    summed over groups of cores (distributed_batch_norm.py: sum and sum of squares
    concatenated, one cross_replica_sum of 2C f32 per layer and one in its gradient), the
    groups consecutive replicas or, where tpu_slice_row/col and dbn_tile_row/col are set,
    tiles of chips (convnet.tile_groups).

    With --input_partition_dims (v3-1024, v3-2048: 1,4,1,1) each replica of 4 cores takes
    train_batch_size / num_shards images, and each of its cores a quarter of their rows
    (convnet.SpatialPartition: every convolution and the max pool exchange halo rows with
    the neighbouring cores, forward and backward; the batch-norm sums are summed over the
    replica's cores, then over the group, whose members are the cores of the same slice in
    the replicas of a tile: replica_tile_groups). The infeed is partitioned alike: the image
    (dataloader.py transposes it to H, W, N, C for replicas of at most 8 images, so the
    partition splits H) and the per-level labels (train_and_eval_low_level_runner.py reshapes
    them to each level's H x W x anchors and splits H); num_matched_boxes is not split. The
    loss (ssd_model.py _classification_loss): each core's softmax cross entropy and smooth
    L1 on its rows of each level; then the per-anchor losses go to the replica's core 0 ("Put
    the rest of the loss computation on one device", tf.device(tpu.core(0))): written as an
    all-gather over the replica (XLA's reshard of a partitioned tensor to one core), the hard
    negative mining on core 0 only, and each core's slice of the per-anchor weights
    (positives + mined negatives) back from core 0, one collective-permute per other core.
    The weight gradients are partial sums per core, added by the gradient all-reduce over
    every core (XLA's ArCrsCombiner merges the partition's all-reduce with
    CrossShardOptimizer's cross_replica_sum)."""
    f = sl.flags
    dims = f.get("input_partition_dims")
    P = dims[1] if dims else 1  # the rows (H) split P ways; the other dims are 1 in the runs
    assert not dims or (dims[0], dims[2], dims[3]) == (1, 1, 1), dims
    b = per_core * P  # the replica's images: every core of a replica holds all of them
    t = Trace(f"mlperf_{rnd}_ssd_{sl.cores}", sl.cores,
              f"SSD-ResNet34 300x300 training step, batch {b} per core x {sl.cores} cores: "
              "forward, backward, hard negative mining, gradient all-reduce per stage, SGD "
              "momentum" if not dims else
              f"SSD-ResNet34 300x300 training step, batch {b} per replica x "
              f"{sl.cores // P} replicas of {P} cores (each image's rows split over the "
              "replica's cores, halo exchanges): forward, backward, hard negative mining on "
              "each replica's core 0, gradient all-reduce per stage, SGD momentum")
    part = None
    if dims:
        replicas = replica_grid(f["tpu_slice_row"], f["tpu_slice_col"], f["tpu_slice_col"])
        assert len(replicas) * P == sl.cores == f["num_shards"] * P, (len(replicas), sl.cores)
        part = SpatialPartition(P, replicas, "input_partition_dims")
    net = ConvNet(t, b, partition=part)
    group = f.get("distributed_group_size", 1)
    if group > 1:
        groups = (replica_tile_groups(part.groups, f["tpu_slice_row"], f["tpu_slice_col"],
                                      f["dbn_tile_row"], f["dbn_tile_col"]) if part
                  else tile_groups(f["tpu_slice_row"], f["tpu_slice_col"], f["dbn_tile_row"],
                                   f["dbn_tile_col"]) if "dbn_tile_row" in f
                  else consecutive_groups(sl.cores, group))
        assert all(len(g) == group for g in groups), (group, groups[0])
        net.dbn = DistributedBatchNorm(groups, 1, "distributed_batch_norm.py", partition=part)
    s2d = sl.flags.get("conv0_space_to_depth")
    in_hw, in_c = ((SSD_IMAGE // 2, SSD_IMAGE // 2), 12) if s2d else ((SSD_IMAGE, SSD_IMAGE), 3)
    # A core's anchors: its rows of every level's map (all of them unpartitioned).
    A_core = sum(net.elems((size, size), k) for size, k in SSD_FEATURES)
    img = t.op("input", "infeed", bytes=net.elems(in_hw, in_c) * SIZE[BF16])
    t.op("targets", "infeed", bytes=A_core * (1 + 4) * SIZE[F32])
    net.no_grad.add(img)
    net.size[img] = net.elems(in_hw, in_c)
    if s2d:
        # space_to_depth_fixed_padding pads the 2x2-block image by ((7 - 1) // 2 + 1) // 2 = 2
        # rows before and (7 - 1) // 2 // 2 = 1 after, then a "VALID" 4x4 convolution.
        y, hw = net.conv("stem", img, in_hw, in_c, 64, 4, group="stem", pad_before=2)
    else:
        y, hw = net.conv("stem", img, in_hw, in_c, 64, 7, stride=2, group="stem")
    net.size[y] = net.elems(hw, 64)
    pool_hw = (out_dim(hw[0], 2), out_dim(hw[1], 2))
    in_elems = net.size[y]
    halo = []
    if part:  # the 3x3 stride-2 window's rows of the neighbours
        halo = part.exchange(t, "stem.maxpool.halo", y, b, hw[1], 64, part.forward_halo(
            hw[0], pool_hw[0], 3, 2, pad_lo(hw[0], pool_hw[0], 3, 2, "same")), hw[0])
    pool = t.vector("stem.maxpool", "max", [y, *halo], elements=in_elems // 2)
    net.size[pool] = net.elems(pool_hw, 64)

    def pool_bwd(g, src=y, n_in=in_elems, h=hw[0], ph=pool_hw):
        dhalo = []
        if part:  # the output gradient's rows whose windows reach into the slice
            dhalo = part.exchange(t, "stem.maxpool_grad.halo", g, b, ph[1], 64,
                                  part.backward_halo(h, ph[0], 3, 2, pad_lo(h, ph[0], 3, 2,
                                                                            "same")), ph[0])
        return [(src, t.vector("stem.maxpool_grad", "relu_grad", [g, src, *dhalo],
                               elements=n_in, **({"operands": [g, src]} if part else {})))]

    net.tape.append(("pool", "stem.maxpool", {"out": pool, "bwd": pool_bwd}))
    feats = ssd_features(net, pool, pool_hw, SSD_EXTRAS)
    assert [f[1][0] for f in feats] == [f[0] for f in SSD_FEATURES], feats
    heads = []
    for lvl, ((f, fhw, fc), (_, k)) in enumerate(zip(feats, SSD_FEATURES)):
        for kind, ch in (("class", SSD_CLASSES * k), ("box", 4 * k)):
            h_out, _ = net.conv(f"head{lvl + 3}.{kind}", f, fhw, fc, ch, 3, bn=False,
                                relu=False, group=f"head{lvl + 3}")
            net.size[h_out] = net.elems(fhw, ch)
            heads.append((kind, h_out, net.size[h_out]))
    A = b * SSD_ANCHORS
    cls = [h for k, h, _ in heads if k == "class"]
    box = [h for k, h, _ in heads if k == "box"]
    # _model_fn casts the heads to f32; concat_outputs (ssd_model.py; the labels are one
    # tensor, not a dict per level) reshapes each level's, transposes it anchors-major and
    # concatenates: one fusion per head kind reading bf16 and writing [b, 8732, 81] and
    # [b, 8732, 4] in f32 (a partitioned core: its rows' anchors).
    cat_cls = t.vector("loss.concat_class", "convert", cls, elements=A_core * SSD_CLASSES,
                       out_dtype=F32)
    cat_box = t.vector("loss.concat_box", "convert", box, elements=A_core * 4, out_dtype=F32)
    # The classification loss: a softmax cross entropy per anchor (f32), then hard negative
    # mining on the per-anchor losses, then their masked sum.
    xent = t.vector("loss.class_xent", "softmax", [cat_cls], rows=A_core, cols=SSD_CLASSES,
                    dtype=F32)
    mine, back, src = {}, [], xent
    if part:
        # The per-anchor losses to the replica's core 0 (the mining runs there only).
        core0 = [g[0] for g in part.groups]
        src = t.op("loss.class_xent_to_core0", "all_gather", [xent],
                   bytes=A_core * SIZE[F32], dtype=F32, replica_groups=part.groups)
        mine = {"cores": core0}
    neg = t.vector("loss.neg_masked", "mul", [src], elements=A, dtype=F32,
                   operands=[src, None], **mine)
    if rnd == "v0.5":
        # v0.5 _classification_loss: relative_position = argsort(argsort(neg_masked, DESC)):
        # two tf.nn.top_k of all 8,732 (tf.contrib.framework.argsort), XLA sorts of each
        # image's row (xla_topk), the second of the first's int32 indices.
        order = xla_topk(t, "loss.argsort", [neg], b, SSD_ANCHORS, F32)
        rank = xla_topk(t, "loss.argsort_rank", [order], b, SSD_ANCHORS, "s32")
        mask = t.vector("loss.topk_neg_mask", "max", [rank], elements=A, dtype=F32,
                        vmem_operands=[1])
    else:
        # v0.6 topk_mask.py topk_mask: topk_mask_internal on the losses (a count of the
        # positives, then a while loop of 31 trips, one count of the values above the
        # trial value per trip: a binary search over the bits of the kth value; the mask),
        # the count and minimum of the selected, the duplicates of the kth value by index,
        # topk_mask_internal again on those, the final select.
        def topk_mask_internal(name, score, deps):
            sign = t.vector(f"{name}.sign_count", "reduce_sum", [score] + deps, rows=b,
                            cols=SSD_ANCHORS, dtype=F32, operands=[score], **mine)
            cnt = t.vector(f"{name}.larger_count", "reduce_sum", [score, sign], rows=b,
                           cols=SSD_ANCHORS, dtype=F32, carried=[f"{name}.larger_count"],
                           **mine)
            t.loop(f"{name}.search", 31, [cnt],
                   comment="topk_mask_internal's binary search: bits 30 down to 0")
            return t.vector(f"{name}.mask", "max", [score, cnt], elements=A, dtype=F32,
                            vmem_operands=[1], **mine)
        first = topk_mask_internal("loss.topk", neg, [])
        sel = t.vector("loss.topk.select_num", "reduce_sum", [first], rows=b,
                       cols=SSD_ANCHORS, dtype=F32, **mine)
        kth = t.vector("loss.topk.kth_value", "reduce_max", [first, neg, sel], rows=b,
                       cols=SSD_ANCHORS, dtype=F32, operands=[neg], **mine)
        dup = t.vector("loss.topk.kth_index", "mul", [neg, kth], elements=A, dtype=F32,
                       vmem_operands=[1], **mine)
        second = topk_mask_internal("loss.topk_dup", dup, [sel])
        mask = t.vector("loss.topk_neg_mask", "max", [second, first], elements=A, dtype=F32,
                        **mine)
    mined = t.vector("loss.class_mined", "reduce_sum", [src, mask], rows=b, cols=SSD_ANCHORS,
                     dtype=F32, operands=[src], **mine)
    if part:
        # Each core's slice of the per-anchor mask back from core 0.
        back = [t.op(f"loss.class_weights_from_core0_{j}", "collective_permute", [mask],
                     bytes=A_core * SIZE[F32], dtype=F32,
                     source_target_pairs=[[g[0], g[j]] for g in part.groups])
                for j in range(1, P)]
    box_l = t.vector("loss.box_smooth_l1", "sub", [cat_box], elements=A_core * 4, dtype=F32)
    # d logits = (softmax - one hot) x (positives + the mined mask); d boxes = the smooth
    # L1's gradient; each split back to the levels and transposed (concat_outputs' gradient).
    dcls = t.vector("loss.dclass", "sub", [xent, mined, mask, *back],
                    elements=A_core * SSD_CLASSES, dtype=F32, operands=[xent])
    dbox = t.vector("loss.dbox", "sub", [box_l], elements=A_core * 4, dtype=F32)
    dcls = t.vector("loss.dclass_split", "convert", [dcls], elements=A_core * SSD_CLASSES,
                    dtype=F32, out_dtype=BF16)
    dbox = t.vector("loss.dbox_split", "convert", [dbox], elements=A_core * 4, dtype=F32,
                    out_dtype=BF16)
    # Each head's gradient is its slice of dcls / dbox: walk the tape from the heads.
    t_dys = {}
    for kind, h_out, n in heads:
        t_dys[h_out] = dcls if kind == "class" else dbox
    grads = backward_convnet(net, None, dys=t_dys)
    for grp in reversed(list(net.params)):
        grad_sync_and_update(t, grp, grads.get(grp, []), net.params[grp], "sgd_momentum")
    return t, {"optimizer": "SGD momentum (MomentumOptimizer)",
               "precision": "bf16 (use_bfloat16=true), f32 loss, weights and gradients",
               "anchors": SSD_ANCHORS, "classes": SSD_CLASSES,
               **({"batch_per_replica": b, "cores_per_replica": P} if part else {})}


# ---------------------------------------------------------------------------------------------
# Mask R-CNN (v0.6), COCO


def _maskrcnn_v06(cores, grid, batch=128):
    """A v0.6 Mask R-CNN slice; grid (replica rows, columns): spatially partitioned 1,4,1."""
    flags = {}
    if grid:
        flags = {"input_partition_dims": [1, 4, 1], "num_shards": cores // 4,
                 "replica_grid": list(grid)}
    return Slice(cores, batch, 924, f"{V06} Google/benchmarks/mask/tpu-v3-{cores}/run_and_time.sh",
                 **flags)


MASKRCNN = {
    # v0.6: Google/benchmarks/mask/tpu-v3-N/run_and_time.sh: --hparams train_batch_size=128,
    # iterations_per_loop (924 on v3-32), --num_cores=N; implementations/tpu-v3-N-mask/mask_rcnn:
    # mask_rcnn_params.py (image_size (832, 1344), num_classes 91, rpn_pre_nms_topn 2000,
    # rpn_post_nms_topn 1000, batch_size_per_im 512, fg_fraction 0.25, fast_rcnn_mlp_head_dim
    # 1024, mrcnn_resolution 28, min_level 2 to max_level 6, 3 aspect ratios, resnet_depth 50,
    # use_bfloat16, momentum 0.9), mask_rcnn_model.py (MomentumOptimizer under
    # CrossShardOptimizer; the stem and the first ResNet stage frozen, batch norm frozen).
    # On 128 and 256 cores the runs split each image over 4 cores: --input_partition_dims=1
    # --input_partition_dims=4 --input_partition_dims=1 (tpu-v3-N/run_and_time.sh), num_shards
    # = num_cores / 4 replicas (mask_rcnn_main.py), each of two chips (computation_shape
    # [1, 2, 2] in train_and_eval_low_level_runner.py); `replica_grid`: the replicas' rows x
    # columns on the slice's chips_y / 2 x chips_x chips (configs/tpu_v3_N.json).
    "v0.6": {c: _maskrcnn_v06(c, grid) for c, grid in ((32, None), (128, (4, 8)),
                                                        (256, (8, 8)))},
}
MRCNN_IMAGE, MRCNN_CLASSES, MRCNN_ANCHORS_PER_CELL = (832, 1344), 91, 3
MRCNN_ROIS, MRCNN_MASKS, MRCNN_PRE_NMS, MRCNN_POST_NMS = 512, 128, 2000, 1000
# dataloader.py: MAX_NUM_INSTANCES 100 ground truth boxes and masks per image, the masks
# gt_mask_size 112 padded by 2 on each side; non_max_suppression.py: _NMS_TILE_SIZE 512.
MRCNN_MAX_INSTANCES, MRCNN_GT_MASK, NMS_TILE = 100, 112 + 4, 512
# The self-suppression while loop of each NMS tile runs until a trip suppresses nothing more:
# one trip that suppresses and one that finds nothing new, the fewest for a tile with any
# suppressed box (chains of suppression add trips; the data decide, the trace takes 2).
NMS_SELF_TRIPS = 2


def sort_passes(n):
    """Compare-exchange passes of a bitonic sorting network over n keys: s (s + 1) / 2 with
    s = ceil(log2 n) (the network XLA's public sort emitter builds; docs/hlo.md)."""
    s = max(1, (n - 1).bit_length())
    return s * (s + 1) // 2


def xla_sort(t, id_, deps, rows, n, dtype, operands=2):
    """An XLA Sort HLO of `operands` arrays of rows x n along n, written as `tpusim import
    hlo` writes one (docs/hlo.md, `sort`): a vector max over rows x n x sort_passes(n) x
    operands elements, of the keys' type (a result of s32 where the keys are narrower)."""
    kw = {"out_dtype": "s32"} if SIZE[dtype] < SIZE["s32"] else {}
    return t.vector(id_, "max", deps, elements=rows * n * sort_passes(n) * operands,
                    dtype=dtype, operands=[deps[0], None], **kw)


def xla_topk(t, id_, deps, rows, n, dtype):
    """tf.nn.top_k on the TPU in TF 1.13 (tf2xla topk_op.cc, xla/client/lib/sorting.cc TopK):
    a stable Sort HLO of (Neg(x), iota) along the whole row of n, then slices of its first k
    values and indices: the sort of every one of the n keys, whatever k is."""
    return xla_sort(t, id_, deps, rows, n, dtype)


def box_iou(t, id_, deps, elements, **kw):
    """box_utils.bbox_overlap: the IoU of every pair of two sets of boxes, one fusion that
    broadcasts both (small) box arrays on chip: written as its divide (intersection / union),
    the elementwise ops around it fused with it."""
    return t.vector(id_, "div", deps, elements=elements, dtype=F32, vmem_operands=[0, 1], **kw)


def nms_self_suppression(t, q, iou, s0, b, tile):
    """_self_suppression of one NMS tile on b images (non_max_suppression.py, and the SSD-Large
    code's copy): a while loop of NMS_SELF_TRIPS trips (the data decide; the fewest for a tile
    with any suppression) of the masked IoU's column maxima, the IoU masked by them, its sum,
    and whether the sum changed. `iou`: the tile's IoU matrices, b x tile x tile; `s0`: their
    sum. Returns the ids of the loop's IoU update and of its change flag."""
    rows, sq = b * tile, b * tile * tile
    upd = f"{q}.self_update"
    can = t.vector(f"{q}.self_can", "reduce_max", [iou, s0], rows=rows, cols=tile, dtype=F32,
                   carried=[upd])
    msk = t.vector(f"{q}.self_masked", "mul", [iou, can], elements=sq, dtype=F32,
                   vmem_operands=[1], carried=[upd])
    mx = t.vector(f"{q}.self_max", "reduce_max", [msk], rows=rows, cols=tile, dtype=F32,
                  fused=True)
    t.vector(upd, "mul", [iou, mx], elements=sq, dtype=F32, vmem_operands=[1], carried=[upd])
    ss = t.vector(f"{q}.self_sum", "reduce_sum", [upd], rows=b, cols=tile * tile, dtype=F32,
                  fused=True)
    chg = t.vector(f"{q}.self_changed", "reduce_max", [ss, s0], rows=1, cols=b, dtype=F32,
                   carried=[ss])
    t.loop(f"{q}.self", NMS_SELF_TRIPS, [can, msk, mx, upd, ss, chg],
           comment="_self_suppression, until a trip changes nothing")
    return upd, chg


def nms_padded(t, p, dec, b, k, post):
    """non_max_suppression.py non_max_suppression_padded on b images together: the k boxes
    (f32) padded to whole tiles of 512, then a while loop over the tiles (it stops early only
    once every image has `post` boxes, so the trace runs every tile). Trip idx: the tile's
    boxes suppressed by each earlier tile (an inner while of idx trips: IoU of 512 x 512,
    all-reduction, mask), its own IoU matrix, the self-suppression while (NMS_SELF_TRIPS
    trips: two column maxima, the IoU masked, its sum), the tile's surviving boxes written
    back and the count of selected boxes. Then the top_k of the selected (an XLA sort of
    the padded row, s32) and the gather of `post` boxes and scores. Returns (boxes, scores)."""
    pad = -(-k // NMS_TILE) * NMS_TILE
    tile = b * NMS_TILE * NMS_TILE
    rows = b * NMS_TILE
    boxes = t.vector(f"{p}.pad", "convert", [dec], elements=b * pad * 5, out_dtype=F32)
    gate = None
    for idx in range(pad // NMS_TILE):
        q = f"{p}.t{idx}"
        cur = boxes
        if idx:
            ci = box_iou(t, f"{q}.cross_iou", [boxes, gate], tile, carried=[f"{q}.cross_mask"])
            cr = t.vector(f"{q}.cross_all", "reduce_max", [ci], rows=rows, cols=NMS_TILE,
                          dtype=F32, fused=True)
            cur = t.vector(f"{q}.cross_mask", "mul", [cr, boxes], elements=rows * 4, dtype=F32,
                           carried=[f"{q}.cross_mask"])
            t.loop(f"{q}.cross", idx, [ci, cr, cur],
                   comment="_cross_suppression: the earlier tiles, one a trip")
        si = box_iou(t, f"{q}.self_iou", [cur, gate], tile)
        s0 = t.vector(f"{q}.self_sum0", "reduce_sum", [si], rows=b, cols=NMS_TILE * NMS_TILE,
                      dtype=F32)
        upd, chg = nms_self_suppression(t, q, si, s0, b, NMS_TILE)
        sup = t.vector(f"{q}.suppressed", "reduce_sum", [upd, chg], rows=rows, cols=NMS_TILE,
                       dtype=F32, operands=[upd])
        boxes = t.vector(f"{q}.update", "mul", [boxes, sup, cur], elements=b * pad * 4,
                         dtype=F32, operands=[boxes, cur])
        gate = t.vector(f"{q}.output_size", "reduce_sum", [boxes], rows=b, cols=NMS_TILE * 4,
                        dtype=F32)
    keys = t.vector(f"{p}.selected", "reduce_max", [boxes, gate], rows=b * pad, cols=4,
                    dtype=F32, operands=[boxes])
    top = xla_sort(t, f"{p}.topk", [keys], b, pad, "s32")
    g = t.vector(f"{p}.gather", "gather", [top, boxes], rows=b * post, cols=5,
                 table_rows=b * pad, dtype=F32, operands=[boxes, top])
    return g, g


def static_sampler(t, p, cand, n, k):
    """One image's BalancedPositiveNegativeSampler._static_subsample over the n candidates
    (balanced_positive_negative_sampler.py, ops.matmul_gather_on_zeroth_axis): tf.random_shuffle
    of range(n) (tf2xla RandomShuffleOp: random u32 keys and one sort, ceil(3 ln n / ln
    (2^32 - 1)) = 1 round for n = 1,100), the indicator and labels gathered by one-hot
    matmuls, the cumulative sums (XLA's reduce-window over the whole row), the top_k of the
    signed indices, the k sampled picked by a one-hot matmul, the sampled indicator
    (one-hot sum) and its reprojection by the one-hot of the permutation."""
    rng = t.vector(f"{p}.shuffle_keys", "dropout", [cand], elements=n, dtype=F32,
                   operands=[None])
    perm = xla_sort(t, f"{p}.shuffle", [rng], 1, n, F32)
    ind = t.matmul(f"{p}.gather_indicator", n, n, 1, deps=[perm, cand], dtype=F32)
    lab = t.matmul(f"{p}.gather_labels", n, n, 1, deps=[perm, cand], dtype=F32)
    cs = t.vector(f"{p}.cumsum", "reduce_sum", [ind], rows=n, cols=n, dtype=F32)
    top = xla_topk(t, f"{p}.topk", [cs, lab], 1, n, "s32")
    cs2 = t.vector(f"{p}.cumsum_select", "reduce_sum", [top], rows=n, cols=n, dtype=F32)
    pick = t.matmul(f"{p}.select", 1, n, k, deps=[top, cs2], dtype=F32)
    hot = t.vector(f"{p}.sampled", "reduce_sum", [pick], rows=n, cols=k, dtype=F32)
    return t.matmul(f"{p}.reproject", 1, n, n, deps=[hot, perm], dtype=F32)


def gen_mlperf_maskrcnn(rnd, sl, per_core):
    """Mask R-CNN training step (mask_rcnn_architecture.py, fpn.py, resnet.py): ResNet-50
    (the 7x7 stem as a 4x4 convolution of the 2x2 space-to-depth image, the input transposed
    on the TPU; the stem and stage 2 frozen: no weight gradients, no gradient below stage 3;
    batch norm frozen, an affine op) on 832x1344 images, FPN P2-P6 of 256 channels (1x1
    laterals, nearest 2x upsampling, 3x3 outputs, P6 a stride-2 max pool), the RPN head on
    every level (3x3 conv, 3 scores and 12 box values per cell), proposals per level and image
    (top 2000 scores, then NMS to 1000: the IoU matrix of the 2000 boxes and its suppression
    passes, forward only), 512 sampled RoIs per image through multi-level RoIAlign to 7x7x256
    (bilinear: 4 gathered points per output), two 1024-wide dense layers, 91 classes and 364
    box values; the 128 foreground RoIs per image through RoIAlign to 14x14x256, four 3x3
    convolutions, a 2x2 stride-2 transposed convolution and a 1x1 convolution to 91 masks of
    28x28 (sigmoid cross entropy on the target class's); SGD with momentum; bf16. Anchor
    labels are made by the host's input pipeline (dataloader.py). The detection work is the
    kernels the code makes XLA run (mask_rcnn_architecture.py, box_utils.py,
    non_max_suppression.py, balanced_positive_negative_sampler.py): every tf.nn.top_k an XLA
    sort of its whole row (xla_topk), the padded NMS with its while loops (nms_padded: trace
    loops, the outer one over the tiles written out), the static sampler (static_sampler),
    RoIAlign's gather from the five levels padded and stacked to P2's size and its gradient
    a scatter-add into zeros of that stack, the mask targets' 2x2 convolution, transpose and
    gather (get_mask_targets).

    With --input_partition_dims=1,4,1 (v3-128, v3-256; mlcommons/training_results_v0.6
    @ f312518c, Google/benchmarks/mask/): tpu-v3-N/run_and_time.sh gives the flags;
    implementations/tpu-v3-N-mask/mask_rcnn/: mask_rcnn_main.py (num_cores_per_replica = 4,
    num_shards = num_cores / 4; the image, infed transposed as [H/2, W/2, N, 12], partitioned
    [4, 1, 1]: its rows; every label unpartitioned, so every core of a replica infeeds all of
    them), train_and_eval_low_level_runner.py (computation_shape [1, 2, 2]: a replica is two
    chips stacked along y, convnet.replica_grid), mask_rcnn_params.py (is_training_bn=False:
    frozen batch norm, a per-channel affine, so no statistics to sum over the partition),
    resnet.py (conv2d_fixed_padding: a strided convolution pads (k - 1) // 2 rows before,
    the space-to-depth stem space_to_depth_fixed_padding's 2), core_assignment_utils.py
    (tf.contrib.tpu.core(n % num_cores_per_replica)), mask_rcnn_architecture.py and
    mask_rcnn_model.py (where each part runs). The replica's b = train_batch_size / num_shards
    images (4 on v3-128, 2 on v3-256) on every core; each core holds ceil(H / 4) rows of every
    activation. What the trace has:
    - the backbone, FPN and RPN head through the partitioned ConvNet: every convolution's
      and the stem max pool's halo collective-permutes (forward; backward for the trained
      layers), the FPN's nearest upsampling P5 -> P4 (26 rows in slices of 7 against 52 in
      slices of 13: the coarse rows a slice's upsampled rows read, and the mirror in the
      backward pass) and P6 (max_pool2d 1x1, stride 2) the same way; the RPN head and its
      loss on each core's rows;
    - the proposals (proposal_op, no device): their reshape merges the partitioned rows, so
      each level's RPN scores and boxes are all-gathered within the replica and the
      proposals, NMS, proposal_label_op and select_fg_for_masks run on every core of the
      replica (an assumption: the submission does not say where XLA put them; all-gather is
      XLA's reshard of a partitioned tensor to a replicated one);
    - RoIAlign (multilevel_crop_and_resize): the levels are padded and stacked outside the
      heads' device scopes and gathered inside them; the trace all-gathers each level within
      the replica and stacks on cores 1 and 2 (assumed: the stack's two consumers);
    - on core 2 (faster_rcnn_heads, fast_rcnn_loss: CORE_2): the box RoIAlign gather, fc6,
      fc7, the class and box outputs, the loss and their backward, the box variables'
      gradient all-reduce (over the replicas' core 2) and update;
    - on core 0 (get_mask_targets: CORE_0): the mask targets (the trace puts the 2x2
      convolution and transpose, outside the device scope, with the gather), sent to core 1
      by a collective-permute;
    - on core 1 (mask_rcnn_heads, mask_post_processing, mask_rcnn_loss: CORE_1): the mask
      RoIAlign gather, the mask head, the loss, their backward, the mask variables'
      all-reduce and update;
    - the two RoIAlign scatters' level gradients back to the partitioned levels: from core 2
      and from core 1 each other core's rows of the five levels (one collective-permute per
      head and destination), added into each core's FPN output gradients;
    - the backbone's, FPN's and RPN's weight gradients are partial sums per core, summed by
      the gradient all-reduce over every core (as SSD's)."""
    f = sl.flags
    dims = f.get("input_partition_dims")
    P_ = dims[1] if dims else 1  # the rows (H) split P_ ways; the other dims are 1 in the runs
    assert not dims or (dims[0], dims[2]) == (1, 1), dims
    b = round(per_core * P_)  # the replica's images: every core of a replica holds all of them
    H, W = MRCNN_IMAGE
    t = Trace(f"mlperf_{rnd}_maskrcnn_{sl.cores}", sl.cores,
              f"Mask R-CNN (ResNet-50 FPN) {H}x{W} training step, batch {b} per core x "
              f"{sl.cores} cores: forward, proposals, RoI heads, backward, gradient "
              "all-reduce, SGD momentum" if not dims else
              f"Mask R-CNN (ResNet-50 FPN) {H}x{W} training step, batch {b} per replica x "
              f"{sl.cores // P_} replicas of {P_} cores (each image's rows split over the "
              "replica's cores, halo exchanges; the box head on each replica's core 2, the "
              "mask targets on core 0, the mask head on core 1): forward, proposals, RoI "
              "heads, backward, gradient all-reduce, SGD momentum")
    part, on = None, {}
    if dims:
        rows, cols = f["replica_grid"]
        replicas = replica_grid(rows, cols, cols)
        assert len(replicas) * P_ == sl.cores == f["num_shards"] * P_, (len(replicas), sl.cores)
        part = SpatialPartition(P_, replicas, "input_partition_dims")
        # core_assignment_utils CORE_0, CORE_1, CORE_2: logical cores of the replica.
        on = {k: sorted(g[k] for g in replicas) for k in range(P_)}
    net = ConvNet(t, b, partition=part, frozen_bn=True)
    img = t.op("input", "infeed", bytes=net.elems((H // 2, W // 2), 12) * SIZE[BF16])
    # transpose_input and conv0_space_to_depth_block_size=2 (mask_rcnn_params.py defaults,
    # which run_and_time.sh keeps): the host infeeds the 2x2 space-to-depth image as [H/2,
    # W/2, b, 12], transposed to [b, H/2, W/2, 12] on the TPU (_model_outputs), and conv0 is
    # the 7x7 kernel padded and reshaped to 4x4 on 12 channels, stride 1 (resnet.py
    # conv0_space_to_depth).
    img = t.op("input.transpose", "copy", [img], bytes=net.elems((H // 2, W // 2), 12)
               * SIZE[BF16])
    net.no_grad.add(img)
    net.size[img] = net.elems((H // 2, W // 2), 12)
    # pad_before: the rows resnet.py pads before the first (space_to_depth_fixed_padding for
    # the stem, fixed_padding (k - 1) // 2 for a strided convolution), read only by a spatial
    # partition's halo.
    y, hw = net.conv("stem", img, (H // 2, W // 2), 12, 64, 4, group="frozen", pad_before=2)
    pool_hw = (out_dim(hw[0], 2), out_dim(hw[1], 2))
    halo = []
    if part:  # the 3x3 stride-2 window's rows of the neighbours (frozen: no backward)
        halo = part.exchange(t, "stem.maxpool.halo", y, b, hw[1], 64, part.forward_halo(
            hw[0], pool_hw[0], 3, 2, pad_lo(hw[0], pool_hw[0], 3, 2, "same")), hw[0])
    x = t.vector("stem.maxpool", "max", [y, *halo], elements=net.elems(hw, 64) // 2)
    hw, c = pool_hw, 64
    feats = {}
    for si, (width, blocks, stride0) in enumerate([(64, 3, 1), (128, 4, 2), (256, 6, 2),
                                                   (512, 3, 2)]):
        grp = "frozen" if si == 0 else f"res{si + 2}"
        for bi in range(blocks):
            p = f"res{si + 2}b{bi}"
            stride = stride0 if bi == 0 else 1
            sc = x
            if bi == 0:
                sc, _ = net.conv(f"{p}.proj", x, hw, c, 4 * width, 1, stride=stride,
                                 relu=False, group=grp, pad_before=0)
            y1, hw1 = net.conv(f"{p}.c1", x, hw, c, width, 1, group=grp)
            net.size[y1] = net.elems(hw1, width)
            y2, hw2 = net.conv(f"{p}.c2", y1, hw1, width, width, 3, stride=stride, group=grp,
                               pad_before=1 if stride > 1 else None)
            net.size[y2] = net.elems(hw2, width)
            y3, _ = net.conv(f"{p}.c3", y2, hw2, width, 4 * width, 1, relu=False, group=grp)
            n = net.elems(hw2, 4 * width)
            net.size[y3] = n
            if bi == 0:
                net.size[sc] = n
            x, hw, c = net.residual(p, y3, sc, n), hw2, 4 * width
        feats[si + 2] = (x, hw, c)
        if si == 0:
            net.no_grad.add(x)  # frozen below: nothing needs the gradient of C2
    # FPN: laterals, top-down nearest upsampling and adds, 3x3 outputs, P6.
    lat = {}
    for lvl in range(2, 6):
        f, fhw, fc = feats[lvl]
        lat[lvl], _ = net.conv(f"fpn.lateral{lvl}", f, fhw, fc, 256, 1, bn=False, relu=False,
                               group="fpn")
        net.size[lat[lvl]] = net.elems(fhw, 256)
    top = {5: lat[5]}

    def up_rows(r):  # nearest 2x upsampling: output row r reads row r // 2
        return r // 2, r // 2

    for lvl in range(4, 1, -1):
        fhw, chw = feats[lvl][1], feats[lvl + 1][1]
        n = net.elems(fhw, 256)
        halo = []
        if part:  # the coarser level's rows this slice's upsampled rows read (P5 -> P4)
            halo = part.exchange(t, f"fpn.topdown{lvl}.halo", top[lvl + 1], b, chw[1], 256,
                                 part.read_halo(chw[0], fhw[0], up_rows), chw[0])
        s_ = t.vector(f"fpn.topdown{lvl}", "add", [lat[lvl], top[lvl + 1], *halo], elements=n,
                      **({"operands": [lat[lvl], top[lvl + 1]]} if part else {}))
        net.size[s_] = n

        def up_bwd(g, lvl=lvl, n=n, fhw=fhw, chw=chw):
            # The upsampling's gradient sums each 2x2 block into the coarser level (a
            # partitioned core: the finer gradient's rows of its coarse rows' blocks).
            dhalo = []
            if part:
                dhalo = part.exchange(t, f"fpn.topdown{lvl}.up_grad_halo", g, b, fhw[1], 256,
                                      part.read_grad_halo(chw[0], fhw[0], up_rows), fhw[0])
            d_up = t.vector(f"fpn.topdown{lvl}.up_grad", "reduce_sum", [g, *dhalo],
                            rows=n // 4, cols=4, **({"operands": [g]} if part else {}))
            return [(lat[lvl], g), (top[lvl + 1], d_up)]

        net.tape.append(("up", f"fpn.topdown{lvl}", {"out": s_, "bwd": up_bwd}))
        top[lvl] = s_
    P = {}
    for lvl in range(2, 6):
        fhw = feats[lvl][1]
        P[lvl], _ = net.conv(f"fpn.out{lvl}", top[lvl], fhw, 256, 256, 3, bn=False,
                             relu=False, group="fpn")
        net.size[P[lvl]] = net.elems(fhw, 256)
    p5_hw = feats[5][1]
    p6_hw = (out_dim(p5_hw[0], 2), out_dim(p5_hw[1], 2))
    halo = []
    if part:  # P6 = max_pool2d(P5, 1, stride 2): row r of P6 reads row 2 r of P5
        halo = part.exchange(t, "fpn.p6.halo", P[5], b, p5_hw[1], 256, part.forward_halo(
            p5_hw[0], p6_hw[0], 1, 2, 0), p5_hw[0])
    P[6] = t.vector("fpn.p6", "max", [P[5], *halo], elements=net.elems(p6_hw, 256),
                    **({"operands": [P[5]]} if part else {}))
    net.size[P[6]] = net.elems(p6_hw, 256)
    level_hw = {lvl: feats[lvl][1] for lvl in range(2, 6)}
    level_hw[6] = p6_hw

    def p6_bwd(g):
        dhalo = []
        if part:
            dhalo = part.exchange(t, "fpn.p6_grad.halo", g, b, p6_hw[1], 256,
                                  part.backward_halo(p5_hw[0], p6_hw[0], 1, 2, 0), p6_hw[0])
        return [(P[5], t.vector("fpn.p6_grad", "relu_grad", [g, P[5], *dhalo],
                                elements=net.size[P[5]],
                                **({"operands": [g, P[5]]} if part else {})))]

    net.tape.append(("pool", "fpn.p6", {"out": P[6], "bwd": p6_bwd}))
    # The RPN head on every level (shared weights), its loss against the host's anchor labels.
    rpn_out = []
    for lvl in range(2, 7):
        fhw = level_hw[lvl]
        r, _ = net.conv(f"rpn{lvl}.conv", P[lvl], fhw, 256, 256, 3, bn=False, group="rpn")
        net.size[r] = net.elems(fhw, 256)
        sc_, _ = net.conv(f"rpn{lvl}.scores", r, fhw, 256, MRCNN_ANCHORS_PER_CELL, 1, bn=False,
                          relu=False, group="rpn")
        bx, _ = net.conv(f"rpn{lvl}.boxes", r, fhw, 256, 4 * MRCNN_ANCHORS_PER_CELL, 1,
                         bn=False, relu=False, group="rpn")
        cells = net.elems(fhw, 1)  # this core's (a partitioned core: its rows')
        net.size[sc_], net.size[bx] = cells * 3, cells * 12
        rpn_out.append((lvl, sc_, bx, cells))
    # The labels are not partitioned (mask_rcnn_main.py: labels_partition_dims all None):
    # every core of a replica infeeds all of them (_partition_or_replicate_on_host).
    anchors = b * sum(h * w for h, w in level_hw.values()) * MRCNN_ANCHORS_PER_CELL
    gt = t.op("targets", "infeed", bytes=anchors // b * 5 * SIZE[F32] * b
              + b * MRCNN_MAX_INSTANCES * (MRCNN_GT_MASK ** 2 + 5) * SIZE[F32])
    # Proposals (no gradient), per level for the b images together (_proposal_op_per_level):
    # sigmoid of the scores, tf.nn.top_k of the top min(anchors, 2000) (an XLA sort of every
    # anchor's score, xla_topk), gathers of their box outputs and anchors, decoding, clipping
    # and filtering, then non_max_suppression_padded to min(anchors, 1000) boxes, its top_k
    # and gather; then the top 1000 of the five levels' proposals (proposal_op).
    # Spatially partitioned: the proposals carry no device (mask_rcnn_architecture.py
    # proposal_op), and their reshape of [b, h, w, anchors] to [b, h w anchors] merges the
    # partitioned rows, so the trace gathers each level's scores and boxes to every core of
    # the replica (an all-gather: XLA's reshard of a partitioned tensor to a replicated one)
    # and runs the proposals and the RoI sampling on every core (an assumption: where XLA
    # placed them is not in the submission).
    props = []
    for lvl, sc_, bx, cells in rpn_out:
        n_anc = level_hw[lvl][0] * level_hw[lvl][1] * MRCNN_ANCHORS_PER_CELL
        if part:
            sc_ = t.op(f"prop{lvl}.gather_scores", "all_gather", [sc_],
                       bytes=cells * MRCNN_ANCHORS_PER_CELL * SIZE[BF16], dtype=BF16,
                       replica_groups=part.groups)
            bx = t.op(f"prop{lvl}.gather_box_outputs", "all_gather", [bx],
                      bytes=cells * 4 * MRCNN_ANCHORS_PER_CELL * SIZE[BF16], dtype=BF16,
                      replica_groups=part.groups)
        k = min(n_anc, MRCNN_PRE_NMS)
        post = min(k, MRCNN_POST_NMS)
        sig = t.vector(f"prop{lvl}.sigmoid", "sigmoid", [sc_], elements=b * n_anc)
        top = xla_topk(t, f"prop{lvl}.topk", [sig], b, n_anc, BF16)
        g_box = t.vector(f"prop{lvl}.gather_boxes", "gather", [top, bx], rows=b * k, cols=4,
                         table_rows=b * n_anc, operands=[bx, top])
        g_anc = t.vector(f"prop{lvl}.gather_anchors", "gather", [top], rows=b * k, cols=4,
                         table_rows=b * n_anc, operands=[None, top])
        dec = t.vector(f"prop{lvl}.decode", "exp", [g_box, g_anc], elements=b * k * 4,
                       operands=[g_box])
        boxes, scores = nms_padded(t, f"nms{lvl}", dec, b, k, post)
        top2 = xla_topk(t, f"prop{lvl}.post_topk", [scores], b, post, F32)
        props.append(t.vector(f"prop{lvl}.post_gather", "gather", [top2, boxes], rows=b * post,
                              cols=4, table_rows=b * post, dtype=F32, operands=[boxes, top2]))
    n_props = sum(min(h * w * MRCNN_ANCHORS_PER_CELL, MRCNN_POST_NMS)
                  for h, w in level_hw.values())
    top_all = xla_topk(t, "prop.topk_all", props, b, n_props, F32)
    rois = t.vector("prop.gather_all", "gather", [top_all], rows=b * MRCNN_POST_NMS, cols=4,
                    table_rows=b * n_props, dtype=F32, operands=[None, top_all])
    # The RoIs' targets (proposal_label_op): IoU of the 1000 proposals and the 100 ground
    # truth boxes appended to them with the 100 ground truth boxes, its argmax, max and min
    # over the ground truth, the gathers of each proposal's class and box, then per image
    # the static balanced sampler of 512 (BalancedPositiveNegativeSampler(is_static=True)),
    # the top_k that turns its indicator into indices, and the gathers of the 512.
    n_cand = MRCNN_POST_NMS + MRCNN_MAX_INSTANCES
    iou = box_iou(t, "roi.iou", [rois], b * n_cand * MRCNN_MAX_INSTANCES)
    best = t.vector("roi.iou_argmax", "reduce_max", [iou], rows=b * n_cand,
                    cols=MRCNN_MAX_INSTANCES, dtype=F32, fused=True)
    worst = t.vector("roi.iou_min", "reduce_max", [iou], rows=b * n_cand,
                     cols=MRCNN_MAX_INSTANCES, dtype=F32)
    cand = t.vector("roi.gather_targets", "gather", [best, worst], rows=b * n_cand, cols=5,
                    table_rows=b * MRCNN_MAX_INSTANCES, dtype=F32, operands=[None, best])
    samples = [static_sampler(t, f"roi.sample{i}", cand, n_cand, MRCNN_ROIS)
               for i in range(b)]
    pick = xla_topk(t, "roi.sample_topk", samples, b, n_cand, "s32")
    labels = t.vector("roi.gather_samples", "gather", [pick, cand], rows=b * MRCNN_ROIS, cols=9,
                      table_rows=b * n_cand, dtype=F32, operands=[cand, pick])
    # The 128 foreground RoIs per image for the mask branch (select_fg_for_masks: a top_k of
    # the 512 class targets' foreground indicator, then gathers).
    fg = xla_topk(t, "roi.fg_topk", [labels], b, MRCNN_ROIS, F32)
    fg_rois = t.vector("roi.gather_fg", "gather", [fg, labels], rows=b * MRCNN_MASKS, cols=10,
                       table_rows=b * MRCNN_ROIS, dtype=F32, operands=[labels, fg])
    # RoIAlign (multilevel_crop_and_resize), on R = b x 512 RoIs (boxes) and M = b x 128
    # (masks): the five levels P2-P6 padded to P2's size and stacked, [b, 5, 208, 336, 256]
    # (one array for both heads: XLA's CSE merges the two calls' identical pads), then one
    # gather of (2 x size)^2 single 256-channel pixels per RoI from it (the bilinear
    # corners), weighted and 2x2 average-pooled in the gather's fusion.
    R, M = b * MRCNN_ROIS, b * MRCNN_MASKS
    H2, W2 = level_hw[2]
    stacked_rows = b * 5 * H2 * W2
    # One fusion: it reads the levels and writes the stack, the padding made on chip.
    level_px = b * sum(level_hw[lvl][0] * level_hw[lvl][1] for lvl in range(2, 7))

    def place(start, cores):
        """Spatially partitioned: the ops from t.ops[start] on `cores` only."""
        for o in t.ops[start:] if part else ():
            o["cores"] = cores

    feat = {lvl: P[lvl] for lvl in range(2, 7)}
    if part:
        # The stack is made outside the heads' device scopes (multilevel_crop_and_resize),
        # its gathers inside them (core 2: boxes, core 1: masks): the trace gathers each
        # level's rows to every core of the replica and stacks on cores 1 and 2.
        feat = {lvl: t.op(f"roi.gather_level{lvl}", "all_gather", [P[lvl]],
                          bytes=net.elems(level_hw[lvl], 256) * SIZE[BF16], dtype=BF16,
                          replica_groups=part.groups) for lvl in range(2, 7)}
    start = len(t.ops)
    stack = t.vector("roi.stack_levels", "convert", [feat[lvl] for lvl in range(2, 7)],
                     elements=level_px * 256, operands=[feat[2]])
    stack = t.vector("roi.stack_padding", "scale", [stack],
                     elements=(stacked_rows - level_px) * 256, vmem_operands=[0])
    place(start, sorted(on[1] + on[2]) if part else None)
    roi_grads = []

    def roi_align(name, n_rois, size, deps):
        g = t.vector(f"{name}.gather", "gather", [*deps, stack], rows=n_rois * size * size * 4,
                     cols=256, table_rows=stacked_rows, operands=[stack, deps[0]])
        return t.vector(f"{name}.bilinear", "reduce_sum", [g], rows=n_rois * size * size * 256,
                        cols=4, fused=True)

    def roi_align_bwd(name, n_rois, size, dy):
        # The gather's gradient (tf.gather's IndexedSlices made dense by the reshape's
        # gradient): an unsorted segment sum, an XLA scatter-add into zeros of the whole
        # padded stack, whose level slices are the features' gradients.
        d = t.vector(f"{name}.bilinear_grad", "scale", [dy],
                     elements=n_rois * size * size * 4 * 256)
        zeros = t.vector(f"{name}.scatter_zeros", "scale", [d], elements=stacked_rows * 256,
                         vmem_operands=[0])
        roi_grads.append(t.vector(f"{name}.scatter", "scatter_add", [d, zeros],
                                  rows=n_rois * size * size * 4, cols=256,
                                  table_rows=stacked_rows, operands=[d, None, zeros]))

    start_box = len(t.ops)
    box_in = roi_align("box_roi", R, 7, [labels])
    fc6, s6 = dense_fwd(t, "box.fc6", box_in, R, 7 * 7 * 256, 1024, act="relu")
    fc7, s7 = dense_fwd(t, "box.fc7", fc6, R, 1024, 1024, act="relu")
    cls, s_cls = dense_fwd(t, "box.class", fc7, R, 1024, MRCNN_CLASSES)
    bxo, s_box = dense_fwd(t, "box.box", fc7, R, 1024, 4 * MRCNN_CLASSES)
    p_cls = t.vector("box.softmax", "softmax", [cls], rows=R, cols=MRCNN_CLASSES, fused=True,
                     out_dtype=F32)
    # fast_rcnn_loss picks each RoI's box of its target class by a matmul of a one-hot of
    # the R indices over all R x 91 boxes (losses.py: tf.matmul(tf.one_hot(box_indices,
    # batch_size * num_rois * num_classes), box_outputs as [-1, 4]), in f32: the outputs are
    # cast to f32); the trace reads the one-hot as the dot's operand.
    box_sel = t.matmul("box.loss_select", R, R * MRCNN_CLASSES, 4, deps=[bxo, labels],
                       dtype=F32)
    place(start_box, on.get(2))  # faster_rcnn_heads and fast_rcnn_loss: CORE_2
    start_mask = len(t.ops)
    mnet = ConvNet(t, M)
    m_in = roi_align("mask_roi", M, 14, [fg_rois])
    x, mhw = m_in, (14, 14)
    for i in range(4):
        x, _ = mnet.conv(f"mask.conv{i}", x, mhw, 256, 256, 3, bn=False, group="mask")
        mnet.size[x] = M * 14 * 14 * 256
    # 2x2 stride-2 transposed convolution: each input pixel writes a 2x2 patch.
    up = t.matmul("mask.deconv", M * 14 * 14, 256, 4 * 256, deps=[x])
    up = t.vector("mask.deconv.relu", "relu", [up], elements=M * 28 * 28 * 256, fused=True)
    logits = t.matmul("mask.logits", M * 28 * 28, 256, MRCNN_CLASSES, deps=[up])
    place(start_mask, on.get(1))  # mask_rcnn_heads: CORE_1
    start_targets = len(t.ops)
    # Mask targets (get_mask_targets): the 100 ground truth masks per image (112x112 padded to
    # 116x116, f32) through a 2x2 convolution with four fixed filters (each pixel's four
    # bilinear corners as channels), transposed to [116, 116, masks, 4], then one gather of a
    # 4-value row per target pixel of each foreground RoI, weighted and summed.
    gm = b * MRCNN_MAX_INSTANCES
    mconv = t.op("mask.targets_conv", "conv2d", [gt], batch=gm, h=MRCNN_GT_MASK,
                 w=MRCNN_GT_MASK, c_in=1, c_out=4, kh=2, kw=2, dtype=F32)
    mtr = t.vector("mask.targets_transpose", "transpose", [mconv],
                   elements=gm * MRCNN_GT_MASK ** 2 * 4, dtype=F32)
    mg = t.vector("mask.targets_gather", "gather", [mtr, fg_rois], rows=M * 28 * 28, cols=4,
                  table_rows=gm * MRCNN_GT_MASK ** 2, dtype=F32, operands=[mtr, fg_rois])
    mtarget = t.vector("mask.targets", "reduce_sum", [mg], rows=M * 28 * 28, cols=4, dtype=F32,
                       fused=True)
    # get_mask_targets: CORE_0 (the trace places its convolution and transpose, outside the
    # device scope, with its gather); the targets then go to core 1, where the mask loss is.
    place(start_targets, on.get(0))
    if part:
        mtarget = t.op("mask.targets_to_core1", "collective_permute", [mtarget],
                       bytes=M * 28 * 28 * SIZE[F32], dtype=F32,
                       source_target_pairs=[[g[0], g[1]] for g in part.groups])
    start_mask = len(t.ops)
    # mask_post_processing: each mask's channel of its target class by a one-hot einsum
    # ('bnhwf,bnf->bnhw': per mask a 784 x 91 by 91 x 1 dot), then the sigmoid cross entropy.
    msel = t.matmul("mask.select", 28 * 28, MRCNN_CLASSES, 1, deps=[logits, fg_rois], batch=M)
    mloss = t.vector("mask.sigmoid_xent", "sigmoid", [msel, mtarget], elements=M * 28 * 28,
                     dtype=F32, operands=[msel])
    # Backward: the heads, then RoIAlign's scatter into P2-P6, then the network. The einsum's
    # gradient is per mask the outer product of its 784 pixel gradients and the one-hot.
    dsel = t.vector("mask.dselect", "sub", [mloss, mtarget], elements=M * 28 * 28, dtype=F32,
                    out_dtype=BF16, operands=[mloss])
    dm = t.matmul("mask.dlogits", 28 * 28, 1, MRCNN_CLASSES, deps=[dsel], batch=M)
    dup = t.matmul("mask.logits.dx", M * 28 * 28, MRCNN_CLASSES, 256, deps=[dm],
                   transpose_rhs=True)
    g_mlog = t.matmul("mask.logits.dw", 256, M * 28 * 28, MRCNN_CLASSES, deps=[up, dm],
                      transpose_lhs=True, out_dtype=F32)
    dup = t.vector("mask.deconv.relu_grad", "relu_grad", [dup, up],
                   elements=M * 28 * 28 * 256, fused=True)
    dx = t.matmul("mask.deconv.dx", M * 14 * 14, 4 * 256, 256, deps=[dup], transpose_rhs=True)
    g_dec = t.matmul("mask.deconv.dw", 256, M * 14 * 14, 4 * 256, deps=[x, dup],
                     transpose_lhs=True, out_dtype=F32)
    mgrads = backward_convnet(mnet, dx)
    roi_align_bwd("mask_roi", M, 14, "mask.conv0.dx")  # the mask head input's gradient
    place(start_mask, on.get(1))  # mask_post_processing, mask_rcnn_loss: CORE_1
    start_box = len(t.ops)
    dcls = t.vector("box.dclass", "sub", [p_cls], elements=R * MRCNN_CLASSES, dtype=F32,
                    fused=True, out_dtype=BF16)
    dsel_box = t.vector("box.dbox_select", "sub", [box_sel], elements=R * 4, dtype=F32)
    dbox = t.matmul("box.dbox", R * MRCNN_CLASSES, R, 4, deps=[dsel_box], transpose_lhs=True,
                    dtype=F32, out_dtype=BF16)
    d7a, g_cls = dense_bwd(t, s_cls, dcls)
    d7b, g_box = dense_bwd(t, s_box, dbox)
    d7 = t.vector("box.fc7.dsum", "add", [d7b, d7a], elements=R * 1024, fused=True)
    d6, g7 = dense_bwd(t, s7, d7)
    din, g6 = dense_bwd(t, s6, d6)
    roi_align_bwd("box_roi", R, 7, din)
    place(start_box, on.get(2))
    if part:
        # Each core's rows of the levels' gradients from the cores of the two scatters (XLA's
        # reshard of a one-core tensor to the partitioned levels): one collective-permute
        # per head and other core, all five levels' slices.
        slice_bytes = sum(net.elems(level_hw[lvl], 256) for lvl in range(2, 7)) * SIZE[BF16]
        roi_grads = [t.op(f"{head}_roi.grad_to_core{j}", "collective_permute", [g_],
                          bytes=slice_bytes, dtype=BF16,
                          source_target_pairs=[[g[src], g[j]] for g in part.groups])
                     for head, src, g_ in (("box", 2, roi_grads[1]), ("mask", 1, roi_grads[0]))
                     for j in range(P_) if j != src] + roi_grads
    # The RPN losses' gradients, and RoIAlign's into P2-P5 (one scatter per RoI set, added
    # to every level's gradient).
    dys = {}
    for lvl, sc_, bx, cells in rpn_out:
        dys[sc_] = t.vector(f"rpn{lvl}.dscores", "sigmoid_grad", [sc_], elements=cells * 3,
                            dtype=F32, out_dtype=BF16, operands=[sc_, None])
        dys[bx] = t.vector(f"rpn{lvl}.dboxes", "sub", [bx], elements=cells * 12, dtype=F32,
                           out_dtype=BF16)
    # Each level's slice of the two scatters' padded stacks (the pad's and the stack's
    # gradients), added (RoIs map to P2-P6: the level is clamped to the features' levels).
    for lvl in range(2, 7):
        fhw = level_hw[lvl]
        dys[P[lvl]] = t.vector(f"fpn.out{lvl}.roi_grad", "add", roi_grads,
                               elements=net.elems(fhw, 256),
                               # a core reads the two heads' slices (box: the first P_ - 1)
                               **({"operands": [roi_grads[0], roi_grads[P_ - 1]]}
                                  if part else {}))
    grads = backward_convnet(net, None, dys=dys)
    grads.pop("frozen", None)
    grads["mask"] = mgrads.get("mask", []) + [g_mlog, g_dec]
    grads["box"] = g_cls + g_box + g7 + g6
    params = dict(net.params)
    params.pop("frozen", None)
    params["mask"] = mnet.params["mask"] + 256 * MRCNN_CLASSES + MRCNN_CLASSES + 256 * 1024 + 256
    params["box"] = (7 * 7 * 256 * 1024 + 1024 + 1024 * 1024 + 1024
                     + 1024 * 5 * MRCNN_CLASSES + 5 * MRCNN_CLASSES)
    for grp in reversed(list(params)):
        start = len(t.ops)
        grad_sync_and_update(t, grp, grads.get(grp, []), params[grp], "sgd_momentum")
        if grp in ("mask", "box"):  # the heads' variables live on their cores only
            place(start, on.get(1 if grp == "mask" else 2))
    return t, {"optimizer": "SGD momentum (MomentumOptimizer)",
               "precision": "bf16 (use_bfloat16), f32 losses, weights and gradients",
               "image": [H, W], "rois_per_image": MRCNN_ROIS, "masks_per_image": MRCNN_MASKS,
               **({"batch_per_replica": b, "cores_per_replica": P_,
                   "batch_norm": "frozen (is_training_bn=False): a per-channel affine"}
                  if part else {})}


# ---------------------------------------------------------------------------------------------
# MLPerf Inference v0.5, offline scenario, on one v3-8 (closed/Google, "tpu-v3.8x1")

INF05 = "mlcommons/inference_results_v0.5@4191ca07"

RESNET50_INFERENCE = {
    # closed/Google/measurements/tpu-v3.8x1/resnet/offline/README.md, the table's "resnet 1x
    # Offline" row: batch_size 256, space_to_depth_block_size 0 (the 7x7 stem on 3 channels).
    # code/resnet/tpu-resnet/.../resnet/model/backend_tf.py: each predict() runs its whole
    # batch on one TensorCore (TPUPartitionedCall with tpu_ordinal_selector), bf16
    # (use_bfloat16), batch norm with frozen statistics (is_training=False), the images 8-bit
    # pixels gathered on the host and infed packed, unpacked, transposed to NHWC, cast and
    # mean-subtracted on the chip, argmax of the logits; main.py: 200 worker threads keep the
    # eight cores busy with batches of their own. So a step is every core running one batch
    # of 256: 2048 images, no collective.
    "v0.5": {8: Slice(8, 2048, None, f"{INF05} closed/Google/measurements/tpu-v3.8x1/resnet/"
                      "offline/README.md (batch_size 256, space_to_depth_block_size 0); "
                      "code/resnet/tpu-resnet/third_party/mlperf/inference/resnet/model/"
                      "backend_tf.py")},
}


def gen_mlperf_resnet50_inference(rnd, sl, per_core):
    """ResNet-50 v1.5 inference (resnet_model.resnet_v1, depth 50, 1000 classes), bf16, one
    batch per core: gen_resnet50 with `inference` (frozen batch norm, 8-bit input, argmax)."""
    a = argparse.Namespace(batch=per_core, cores=sl.cores, image=224, space_to_depth=False,
                           forward_only=True, inference=True,
                           name=f"mlperf_{rnd}_inference_resnet50_offline_{sl.cores}")
    return gen_resnet50(a), {"scenario": "offline", "precision": "bf16",
                             "batching": "one batch per TensorCore (tpu_ordinal_selector)"}


# SSD-Large: SSD-ResNet34 at 1200x1200 (closed/Google/code/ssd-large/tpu-ssd-large/.../ssd/offline)
SSD_LARGE_INFERENCE = {
    # closed/Google/measurements/tpu-v3.8x1/ssd-large/server/README.md (the repository's one
    # README for SSD-Large on tpu-v3.8x1; its table holds the Offline rows too), "SSD
    # Per-Configuration Settings", row `ssd|1x|128|20000|64|100|Offline|700|32|true|96|false|
    # false`: batch_size 128, use_bfloat16 true, use_space_to_depth false. backend_tf.py: one
    # batch per program call on one TensorCore (TPUPartitionedCall with tpu_ordinal_selector),
    # the in-memory images gathered on the host; main.py: the worker threads (96) keep the
    # eight cores running batches of their own. A step is every core running one batch: 1,024
    # images, no collective.
    "v0.5": {8: Slice(8, 8 * 128, None, f"{INF05} closed/Google/measurements/tpu-v3.8x1/"
                      "ssd-large/server/README.md (row ssd|1x|...|Offline: batch_size 128, "
                      "use_bfloat16 true, use_space_to_depth false); code/ssd-large/"
                      "tpu-ssd-large/.../ssd/offline/backend_tf.py")},
}
# ssd_constants.py: IMAGE_SIZE 1200, NUM_CLASSES 81 (with the background), NUM_SSD_BOXES 15130,
# FEATURE_SIZES (50, 25, 13, 7, 3, 3) with NUM_DEFAULTS (4, 6, 6, 6, 4, 4), MAX_NUM_EVAL_BOXES
# 200 (the candidates per class before NMS and the detections per image after it),
# OVERLAP_CRITERIA 0.5, MIN_SCORE 0.05; ssd_architecture.py: _NMS_TILE_SIZE 256.
SSDL_IMAGE, SSDL_CLASSES, SSDL_ANCHORS = 1200, 81, 15130
SSDL_FEATURES = ((50, 4), (25, 6), (13, 6), (7, 6), (3, 4), (3, 4))  # (size, anchors per cell)
# The extra layers at 1200x1200 (ssd_architecture.py of the inference code): as SSD_EXTRAS
# but the fourth 3x3 convolution strided (13 -> 7 -> 3 -> 3 rows).
SSDL_EXTRAS = ((256, 512, 2, "same"), (256, 512, 2, "same"), (128, 256, 2, "same"),
               (128, 256, 2, "valid"), (128, 256, 1, "valid"))
SSDL_DETECTIONS, SSDL_NMS_TILE = 200, 256


def ssd_large_nms(t, p, cand, b):
    """One class's ssd_architecture.non_max_suppression_padded on b images (the SSD-Large
    inference code's own copy, with _NMS_TILE_SIZE 256; nms_padded models Mask R-CNN's, with
    tiles of 512): the class's 200 candidates (f32) padded to 256, one tile, so the
    tile loop runs once and its cross-suppression loop not at all. The tile's IoU matrix
    (_bbox_overlap, masked to the upper triangle and the 0.5 threshold in its fusion) and its
    sum, the self-suppression while (NMS_SELF_TRIPS trips: column maxima, the IoU masked,
    its sum), the suppressed boxes zeroed and the count of the selected, then the top_k of
    the selected (an XLA sort of the 256, s32) and the two einsums with its one-hot (per
    image 200 x 256 by 256 x 4 for the boxes and by 256 x 1 for the scores, f32). Returns
    (boxes, scores)."""
    tile, n = SSDL_NMS_TILE, SSDL_DETECTIONS
    pad = -(-n // tile) * tile
    assert pad == tile, (n, tile)
    rows, sq = b * tile, b * tile * tile
    padded = t.vector(f"{p}.pad", "convert", [cand], elements=b * pad * 5, dtype=F32)
    iou = box_iou(t, f"{p}.iou", [padded], sq)
    s0 = t.vector(f"{p}.iou_sum", "reduce_sum", [iou], rows=b, cols=tile * tile, dtype=F32)
    upd, chg = nms_self_suppression(t, p, iou, s0, b, tile)
    sup = t.vector(f"{p}.suppressed", "reduce_sum", [upd, chg], rows=rows, cols=tile,
                   dtype=F32, operands=[upd])
    kept = t.vector(f"{p}.update", "mul", [padded, sup], elements=b * pad * 4, dtype=F32,
                    operands=[padded])
    size = t.vector(f"{p}.output_size", "reduce_sum", [kept], rows=b, cols=tile * 4,
                    dtype=F32)
    keys = t.vector(f"{p}.selected", "reduce_max", [kept, size], rows=b * pad, cols=4,
                    dtype=F32, operands=[kept])
    top = xla_topk(t, f"{p}.topk", [keys], b, pad, "s32")
    boxes = t.matmul(f"{p}.boxes", n, pad, 4, deps=[top, kept], batch=b, dtype=F32)
    scores = t.matmul(f"{p}.scores", n, pad, 1, deps=[top, padded], batch=b, dtype=F32)
    return boxes, scores


def gen_mlperf_ssd_large_inference(rnd, sl, per_core):
    """SSD-Large (SSD-ResNet34, 1200x1200) inference, as the submission's code in
    closed/Google/code/ssd-large/tpu-ssd-large/.../ssd/offline runs it, one batch per core.
    Flags: batch 128 and use_bfloat16 true, use_space_to_depth false (the README row of
    SSD_LARGE_INFERENCE; main.py passes them as params conv0_space_to_depth and use_bfloat16,
    and use_fused_bn keeps its default false). Input (backend_tf.py, dataloader.py): the
    images resized to 1200x1200 on the host and packed, one int32 word per pixel (backend_tf.py
    reshapes the input to [1200, 1200, 1, N] int32 before packing_utils.unpack), unpacked on
    the chip, transposed to NHWC, cast to bf16 and normalised (/255, mean, std): one
    elementwise kernel over the batch. Network (ssd_architecture.py, ssd_constants.py): bf16
    (bfloat16_scope); ResNet-34 to its third block group (the 7x7 stride-2 stem, batch norm
    with frozen statistics, is_training_bn=False: an affine in each convolution's epilogue;
    the 3x3 stride-2 max pool; basic blocks [3, 4, 6], the third group at stride 1:
    150x150x256), five extra stages (1x1 then 3x3 convolutions with bias and ReLU: 75x75x512,
    38x38x512, 19x19x256, 9x9x256 (3x3 'valid', stride 2), 7x7x256 (3x3 'valid')), and on
    every level a class head (81 x anchors channels) and a box head (4 x anchors), 3x3
    convolutions at stride 3 (class_net, box_net: strides=(3, 3)): 50, 25, 13, 7, 3 and 3
    cells, 15,130 anchors (NUM_DEFAULTS 4, 6, 6, 6, 4, 4). Post-processing on the TPU
    (ssd_model.py _model_fn, nms_on_tpu): the heads cast to f32 and concatenated
    (concat_outputs: [b, 81, 15130] and [b, 4, 15130]), the boxes decoded against the
    anchors (decode_boxes: exp, clipped), softmax over the 81 classes; select_top_k_scores:
    tf.nn.top_k of the 200 best of all 15,130 anchors for every image and class (an XLA sort
    of each of the b x 81 rows, xla_topk); non_max_suppression: for each of the 80 classes
    (the background skipped) a gather of its 200 boxes, the 0.05 score filter, and
    ssd_large_nms (per-class NMS, IoU 0.5, 200 kept); the 80 x 200 results concatenated,
    tf.nn.top_k of the 200 best (an XLA sort of the 16,000), the gathers of their boxes and
    classes, the [b, 200, 7] detections. The self-suppression loop's trips depend on the
    boxes (NMS_SELF_TRIPS, the fewest for a tile with any suppression)."""
    b = per_core
    H = SSDL_IMAGE
    t = Trace(f"mlperf_{rnd}_inference_ssd_large_offline_{sl.cores}", sl.cores,
              f"SSD-ResNet34 {H}x{H} inference, batch {b} per core x {sl.cores} cores: "
              "forward, box decoding, per-class top-k and NMS, top-k of the detections")
    net = ConvNet(t, b, inference=True)
    px = b * H * H
    x = t.op("input", "infeed", bytes=px * SIZE["s32"])
    x = t.vector("input.unpack", "convert", [x], elements=px * 3, dtype="u8", out_dtype=BF16)
    net.no_grad.add(x)
    net.size[x] = px * 3
    y, hw = net.conv("stem", x, (H, H), 3, 64, 7, stride=2, group="stem")
    pool_hw = (out_dim(hw[0], 2), out_dim(hw[1], 2))
    x = t.vector("stem.maxpool", "max", [y], elements=b * hw[0] * hw[1] * 64 // 2)
    feats = ssd_features(net, x, pool_hw, SSDL_EXTRAS)
    cls, box = [], []
    cells = []
    for lvl, ((f, fhw, fc), (_, k)) in enumerate(zip(feats, SSDL_FEATURES)):
        h_c, ohw = net.conv(f"head{lvl + 3}.class", f, fhw, fc, SSDL_CLASSES * k, 3, stride=3,
                            bn=False, relu=False, group="heads")
        h_b, _ = net.conv(f"head{lvl + 3}.box", f, fhw, fc, 4 * k, 3, stride=3, bn=False,
                          relu=False, group="heads")
        cls.append(h_c)
        box.append(h_b)
        cells.append(ohw)
    assert [h for h, _ in cells] == [s for s, _ in SSDL_FEATURES], cells
    assert sum(h * w * k for (h, w), (_, k) in zip(cells, SSDL_FEATURES)) == SSDL_ANCHORS
    N, C, K = SSDL_ANCHORS, SSDL_CLASSES, SSDL_DETECTIONS
    # concat_outputs with the cast to f32: [b, 81, N] and [b, 4, N], one fusion each.
    cat_cls = t.op("post.concat_class", "copy", cls, bytes=b * C * N * SIZE[F32])
    cat_box = t.op("post.concat_box", "copy", box, bytes=b * 4 * N * SIZE[F32])
    # The coordinates reordered and transposed to [b, N, 4], decoded against the anchors.
    dec = t.vector("post.decode", "exp", [cat_box], elements=b * N * 4, dtype=F32)
    scores = t.vector("post.softmax", "softmax", [cat_cls], rows=b * N, cols=C, dtype=F32)
    # select_top_k_scores: top_k(k=200) of every image's and class's N scores (xla_topk:
    # an XLA sort of each row; written as a loop over the b x 81 rows, one row a trip, whose
    # trips are alike, so that a core holds one row's sort buffers at a time), transposed
    # to [b, 200, 81] (values and indices).
    top = xla_topk(t, "post.class_topk", [scores], 1, N, F32)
    t.loop("post.class_topk_rows", b * C, [top], comment="select_top_k_scores: one "
           "image's and class's row of anchors a trip")
    top = t.op("post.class_topk_transpose", "copy", [top], bytes=b * K * C * 2 * SIZE[F32])
    out_boxes, out_scores = [], []
    for ci in range(1, C):
        q = f"post.c{ci}"
        g = t.vector(f"{q}.gather", "gather", [top, dec], rows=b * K, cols=4, table_rows=b * N,
                     dtype=F32, operands=[dec, top])
        # _filter_scores (scores above 0.05, boxes zeroed else) fused with the pad of the NMS
        bx, sc = ssd_large_nms(t, f"{q}.nms", g, b)
        out_boxes.append(bx)
        out_scores.append(sc)
    n_all = (C - 1) * K
    cat_b = t.op("post.concat_boxes", "copy", out_boxes, bytes=b * n_all * 4 * SIZE[F32])
    cat_s = t.op("post.concat_scores", "copy", out_scores, bytes=b * n_all * SIZE[F32])
    final = xla_topk(t, "post.topk", [cat_s], b, n_all, F32)
    det = t.vector("post.gather", "gather", [final, cat_b], rows=b * K, cols=5,
                   table_rows=b * n_all, dtype=F32, operands=[cat_b, final])
    t.vector("post.detections", "convert", [det], elements=b * K * 7, dtype=F32)
    return t, {"scenario": "offline", "precision": "bf16 network (use_bfloat16), f32 "
               "post-processing", "image": H, "anchors": N, "classes": C,
               "detections_per_image": K, "nms": "per class, IoU 0.5, tiles of 256",
               "batching": "one batch per TensorCore (tpu_ordinal_selector)"}


# GNMT (closed/Google/code/gnmt/tpu-gnmt/.../gnmt: nmt/tpu for the model, offline for the runner)
GNMT_INFERENCE = {
    # closed/Google/measurements/tpu-v3.8x1/gnmt/offline/README.md, "GNMT Per-Configuration
    # Settings", row `gnmt|1x|128|Offline|...`: batch_size 128 (main.py --batch_size, which
    # loadgen_gnmt.py parse_options makes infer_batch_size). offline/backend_tf.py: one batch
    # per program call on one TensorCore (TPUPartitionedCall with tpu_ordinal_selector);
    # loadgen_gnmt.py: the worker threads keep the eight cores running batches of their own.
    # A step is every core running one batch: 1,024 sentences, no collective.
    "v0.5": {8: Slice(8, 8 * 128, None, f"{INF05} closed/Google/measurements/tpu-v3.8x1/gnmt/"
                      "offline/README.md (row gnmt|1x|128|Offline: batch_size 128); code/gnmt/"
                      "tpu-gnmt/.../gnmt/offline/backend_tf.py")},
}
# nmt/tpu/nmt.py add_arguments defaults, which loadgen_gnmt.py keeps (parse_options sets only
# infer_batch_size and the paths; setup() builds the hparams with create_hparams and
# extend_hparams, not from the hparams file): --beam_width 10, --src_max_len_infer 160 (the
# width of the source placeholder, backend_tf.py), --tgt_max_len_infer 160 (model.py:
# maximum_iterations of the decode loop and the width of beam_search_decoder.py's pred_ids),
# --length_penalty_weight 1.0, --coverage_penalty_weight 0.0, --num_units 1024,
# --num_layers 4, --activation_dtype bfloat16. model.py BaseModel: the graph is built for a
# source of 32, 64, 96 or 128 tokens, the first that holds the batch's longest (tf.cond on
# tf.reduce_max(source_sequence_length)).
GNMT_BEAM, GNMT_SRC_INFER, GNMT_TGT_INFER = 10, 160, 160
GNMT_SRC_BRANCHES = (32, 64, 96, 128)


def topk_rows_in_vmem(t, id_, deps, rows, n, dtype):
    """tf.nn.top_k of `rows` rows of n where xla_topk cannot be written: the same stable XLA
    sort of (keys, iota) along each whole row, with xla_sort's compare-exchange count
    (rows x n x sort_passes(n) x 2 operands, as `tpusim import hlo` prices a sort), but each
    row's keys and indices held in VMEM through the passes (a row of 32,316 keys and s32
    indices is 259 KB of the core's 16 MiB): both operands moved between HBM and the core
    once each way (`id_`.io), the compare-exchanges on chip (`id_`: one pass
    over each operand's row per stage of the network, a maximum along the row, its input in
    VMEM). xla_sort's single `max` op streams every pass
    through HBM and needs a parameter and a result buffer of rows x n x passes x 2 elements:
    40 GB for GNMT's beam search (1,280 rows of 32,316), more than a core's 16 GiB, inside a
    loop that cannot be split into a loop of its own (trace loops do not nest). Returns the
    id of the sorted result."""
    io = t.vector(f"{id_}.io", "convert", deps, elements=rows * n * 2, dtype=dtype,
                  operands=[deps[0]])
    return t.vector(id_, "reduce_max", [io], rows=rows * 2 * sort_passes(n), cols=n,
                    dtype=dtype, vmem_operands=[0])


def gnmt_lstm_step(t, p, rows, k, deps, carried_h, carried_c, u=GNMT_UNITS):
    """One step of tf.contrib.rnn.BasicLSTMCell (forget_bias 1.0) inside a trace loop:
    matmul(concat([inputs, h]), kernel) of k = input width + u, the bias, the gates'
    sigmoid and tanh, the new c and h. carried_h / carried_c: the ids whose previous trip
    holds h and c (None where the state comes from outside the loop each trip). Returns the
    ids of (h, c)."""
    g4, g3 = 4 * u, 3 * u
    mm = t.matmul(f"{p}.gates", rows, k, g4, deps=deps,
                  **({"carried": [carried_h]} if carried_h else {}))
    sig = t.vector(f"{p}.sigmoid", "sigmoid", [mm], elements=rows * g3, fused=True)
    gg = t.vector(f"{p}.tanh_g", "tanh", [mm], elements=rows * u)
    ig = t.vector(f"{p}.i_g", "mul", [sig, gg], elements=rows * u)
    fc = t.vector(f"{p}.f_c", "mul", [sig], elements=rows * u,
                  **({"carried": [carried_c]} if carried_c else {}))
    c = t.vector(f"{p}.c", "add", [ig, fc], elements=rows * u)
    tc = t.vector(f"{p}.tanh_c", "tanh", [c], elements=rows * u, fused=True)
    h = t.vector(f"{p}.h", "mul", [tc, sig], elements=rows * u, fused=True)
    return h, c


def gen_mlperf_gnmt_inference(rnd, sl, per_core, bucket=len(GNMT_SRC_BRANCHES) - 1):
    """GNMT inference with beam search, as the submission's nmt/tpu/model.py (BaseModel, INFER
    mode), beam_search_decoder.py and decoder.py run it on one batch per core, bf16
    (activation_dtype bfloat16: bf16 weights and activations). Figures: batch 128
    (GNMT_INFERENCE), beam 10, units 1024, 4 + 4 layers, source and decode bounds 160
    (GNMT_BEAM, GNMT_SRC_INFER, GNMT_TGT_INFER: nmt.py defaults), vocabulary 32,316
    (GNMT_VOCAB: the entries of vocab.bpe.32000, main.py's --vocab_prefix, as the v0.5
    training log counts the same file; backend_tf.py pads the output projection to
    128 x (V // 128 + 1) columns, model.py slices it back to V). backend_tf.py model_fn: the source ids and lengths infed
    ([128, 160] and [128] int32), an end-of-sentence token appended where missing. Encoder
    (model.py _build_encoder), on the source sliced to the graph's length L (the tf.cond
    branch: 32, 64, 96 or 128, the first above the batch's longest source; `bucket` 0 to 3,
    default 3: the bound): the embedding gather, a bidirectional LSTM layer and three more
    (residual from the second on), each a functional_rnn loop of L BasicLSTMCell steps
    (matmul of concat([x, h]) with the 4-gate kernel); then the memory: transposed,
    tiled by the beam (tile_batch, [1280, L, 1024]) and its keys (BahdanauAttention's
    memory_layer on the tiled memory, normalize=True), the encoder states tiled. Decode loop
    (decoder.dynamic_decode, BeamSearchDecoder.step, _beam_search_step) over 1,280 = 128 x 10
    hypotheses per trip: the attention LSTM (AttentionWrapper: concat([inputs, attention])
    with h), the Bahdanau attention (query layer, tanh of keys + query over the L positions,
    the score, softmax, the context as a weighted sum of the memory), three LSTM layers on
    concat([output, attention]) (residual from the second), the output projection to V
    logits (bf16), log-softmax (logits - log sum exp), the finished mask and the beams'
    scores added, cast to f32, tf.math.top_k of 10 over each hypothesis's V (an XLA sort of
    each row; topk_rows_in_vmem), tf.math.top_k of 10 over each sentence's 100, the gathers
    of the beam state by the chosen beams (four LSTM layers' c and h, the attention, the
    alignments and attention state, pred_ids [1280, 160] updated at the step), the next
    inputs' embedding gather. Trips: the while loop runs until every hypothesis has ended
    (decoder.py condition: not all finished) or for maximum_iterations = tgt_max_len_infer =
    160 (model.py): the data decide, the trace runs the bound, 160. Left out: the host side
    (loadgen, the sort of the queries by length, the vocabulary lookup of the result)."""
    B, U, V, W = per_core, GNMT_UNITS, GNMT_VOCAB, GNMT_BEAM
    U4 = 4 * U
    L = GNMT_SRC_BRANCHES[bucket]
    BW = B * W
    T = GNMT_TGT_INFER
    t = Trace(f"mlperf_{rnd}_inference_gnmt_offline_{sl.cores}", sl.cores,
              f"GNMT inference (4+4 LSTM layers of {U} units, attention, vocab {V}), {B} "
              f"sentences per core x {sl.cores} cores, source length {L}, beam search of "
              f"width {W} for {T} steps")
    ids = t.op("input", "infeed", bytes=B * (GNMT_SRC_INFER + 1) * SIZE["s32"])
    src = t.vector("input.eos", "max", [ids], elements=B * GNMT_SRC_INFER, dtype="s32")
    # Encoder: the embedding gather of the L x B ids (time-major), then the layers' loops.
    emb = t.vector("enc.emb", "gather", [src], rows=L * B, cols=U, table_rows=V,
                   operands=[None, src])

    def layer(p, x, d_in):
        h_id, c_id = f"{p}.h", f"{p}.c"
        start = len(t.ops)
        h, c = gnmt_lstm_step(t, p, B, d_in + U, [x], h_id, c_id)
        t.loop(f"{p}.steps", L, [o["id"] for o in t.ops[start:]],
               comment="functional_rnn over the source, one step a trip")
        return h, c

    fw, fw_c = layer("enc.l0.fw", emb, U)
    bw, bw_c = layer("enc.l0.bw", emb, U)
    out = t.vector("enc.l0.concat", "add", [fw, bw], elements=L * B * 2 * U, operands=[fw])
    states = [bw, bw_c]
    for i in range(1, 4):
        h, c = layer(f"enc.l{i}", out, 2 * U if i == 1 else U)
        states += [h, c]
        out = t.vector(f"enc.l{i}.residual", "add", [h, out], elements=L * B * U) if i > 1 \
            else h
    # The memory tiled by the beam, its keys, the encoder states tiled.
    mem = t.op("dec.memory_tile", "copy", [out], bytes=BW * L * U * SIZE[BF16])
    keys = t.matmul("dec.memory_layer", BW * L, U, U, deps=[mem])
    st0 = t.op("dec.state_tile", "copy", states, bytes=8 * BW * U * SIZE[BF16])
    emb0 = t.vector("dec.start_emb", "gather", [st0], rows=BW, cols=U, table_rows=V,
                    operands=[None])
    # The decode loop: one beam-search step a trip.
    start = len(t.ops)
    g = {n: f"beam.gather_{n}" for n in ("inputs", "attention", "h0", "c0", "h1", "c1", "h2",
                                         "c2", "h3", "c3", "alignments", "pred_ids")}
    h, c = gnmt_lstm_step(t, "dec.l0", BW, 3 * U, [emb0, st0], g["h0"], g["c0"])
    t.ops[start]["carried"] = [g["inputs"], g["attention"], g["h0"]]
    q = t.matmul("dec.att.query", BW, U, U, deps=[h])
    e = t.vector("dec.att.energy", "tanh", [q, keys], elements=BW * L * U, operands=[keys])
    sc = t.vector("dec.att.score", "reduce_sum", [e], rows=BW * L, cols=U, fused=True)
    al = t.vector("dec.att.align", "softmax", [sc], rows=BW, cols=L)
    # The alignments ([1280, L], broadcast over the units in the fusion) stay on chip; the
    # tiled memory streams.
    wsum = t.vector("dec.att.weighted", "mul", [al, mem], elements=BW * L * U,
                    operands=[mem, al], vmem_operands=[1])
    ctx = t.vector("dec.att.context", "reduce_sum", [wsum], rows=BW * U, cols=L, fused=True)
    o = h
    new = {"h0": h, "c0": c, "attention": ctx, "alignments": al}
    for i in range(1, 4):
        h, c = gnmt_lstm_step(t, f"dec.l{i}", BW, 3 * U, [o, ctx, st0], g[f"h{i}"],
                              g[f"c{i}"])
        new[f"h{i}"], new[f"c{i}"] = h, c
        o = t.vector(f"dec.l{i}.residual", "add", [h, o], elements=BW * U, fused=True) \
            if i > 1 else h
    logits = t.matmul("dec.projection", BW, U, V, deps=[o])
    lse = t.vector("beam.logsumexp", "reduce_sum", [logits], rows=BW, cols=V)
    # logits - log(sum exp), the finished mask, + the beams' log-probs, cast to f32: one
    # fusion; the per-row sums are broadcast on chip.
    total = t.vector("beam.total_probs", "sub", [logits, lse], elements=BW * V,
                     out_dtype=F32, vmem_operands=[1], carried=["beam.topk_beams"])
    top = topk_rows_in_vmem(t, "beam.topk_words", [total], BW, V, F32)
    top2 = xla_topk(t, "beam.topk_beams", [top], B, W * W, F32)
    # The chosen beams' ids, finished flags and lengths (tf.gather and arithmetic on 1,280).
    sel = t.vector("beam.select", "gather", [top2, top], rows=BW, cols=4, table_rows=BW * W,
                   dtype="s32", operands=[top, top2])
    for n in ("attention", "h0", "c0", "h1", "c1", "h2", "c2", "h3", "c3"):
        t.vector(g[n], "gather", [new[n], sel], rows=BW, cols=U, table_rows=BW,
                 operands=[new[n], sel])
    t.vector(g["alignments"], "gather", [new["alignments"], sel], rows=BW, cols=2 * L,
             table_rows=BW, operands=[new["alignments"], sel])
    t.vector(g["pred_ids"], "gather", [sel], rows=BW, cols=T, table_rows=BW, dtype="s32",
             carried=[g["pred_ids"]])
    t.vector(g["inputs"], "gather", [sel], rows=BW, cols=U, table_rows=V,
             operands=[None, sel])
    t.vector("beam.all_finished", "reduce_max", [sel], rows=1, cols=BW, dtype="s32")
    t.loop("decode", T, [op["id"] for op in t.ops[start:]],
           comment="decoder.dynamic_decode: one beam-search step a trip, to "
                   "maximum_iterations (tgt_max_len_infer 160); the data may end it earlier")
    t.vector("output.best", "gather", [g["pred_ids"]], rows=B, cols=T, table_rows=BW,
             dtype="s32")
    return t, {"scenario": "offline", "precision": "bf16 (activation_dtype bfloat16), f32 "
               "beam scores", "beam_width": W, "source_length": L, "decode_steps": T,
               "vocab": V, "bucket": bucket,
               "batching": "one batch per TensorCore (tpu_ordinal_selector)"}


INFERENCE_BENCHES = {
    "resnet50": (RESNET50_INFERENCE, gen_mlperf_resnet50_inference, "images"),
    "ssd-large": (SSD_LARGE_INFERENCE, gen_mlperf_ssd_large_inference, "images"),
    "gnmt": (GNMT_INFERENCE, gen_mlperf_gnmt_inference, "sentences"),
}


# ---------------------------------------------------------------------------------------------
# The table of benchmarks and the CLI entry


BENCHES = {
    "resnet50": (RESNET50, gen_mlperf_resnet50, "images"),
    "bert": (BERT, gen_mlperf_bert, "sequences"),
    "transformer": (TRANSFORMER, gen_mlperf_transformer, "packed sequences of 256 tokens"),
    "gnmt": (GNMT, gen_mlperf_gnmt, "sentence pairs"),
    "ssd": (SSD, gen_mlperf_ssd, "images"),
    "maskrcnn": (MASKRCNN, gen_mlperf_maskrcnn, "images"),
}


class MlperfError(Exception):
    """Bad input: gen_trace.py prints it as one `error:` line and exits 2."""


def gen_mlperf(a):
    inference = getattr(a, "inference", False)
    where = f"gen_trace.py mlperf {a.bench} --round {a.round}" + (
        f" --inference --scenario {a.scenario}" if inference else "")
    if inference:
        if a.scenario != "offline":
            raise MlperfError(f"{where}: only the offline scenario is modelled")
        if a.bench not in INFERENCE_BENCHES:
            raise MlperfError(f"{where}: no inference generator for {a.bench} (inference: "
                              f"{', '.join(sorted(INFERENCE_BENCHES))})")
        table, make, unit = INFERENCE_BENCHES[a.bench]
    else:
        if getattr(a, "scenario", None) is not None:
            raise MlperfError(f"{where}: --scenario goes with --inference")
        if a.bench not in BENCHES:
            raise MlperfError(f"{where}: {a.bench} is an MLPerf Inference benchmark (add "
                              "--inference --scenario offline)")
        table, make, unit = BENCHES[a.bench]
    if a.round not in table:
        raise MlperfError(f"{where}: no Google TPU submission of {a.bench} in round {a.round} "
                          f"(rounds: {', '.join(sorted(table))})")
    slices = table[a.round]
    if a.cores not in slices:
        raise MlperfError(f"{where} --cores {a.cores}: the submission ran on "
                          f"{', '.join(str(c) for c in sorted(slices))} cores")
    sl = slices[a.cores]
    if sl.flags.get("unsupported"):
        raise MlperfError(f"{where} --cores {a.cores}: {sl.flags['unsupported']}")
    # A spatially partitioned slice splits the batch over its replicas (num_shards), each
    # image over a replica's cores: the per-core batch may be a fraction (Mask R-CNN v3-256:
    # 2 images per replica of 4 cores).
    parts = 1
    for d in sl.flags.get("input_partition_dims") or [1]:
        parts *= d
    per_replica = sl.global_batch // (sl.cores // parts)
    if per_replica * (sl.cores // parts) != sl.global_batch:
        raise MlperfError(f"{where}: global batch {sl.global_batch} does not split over "
                          f"{sl.cores // parts} replicas of {parts} cores" if parts > 1 else
                          f"{where}: global batch {sl.global_batch} does not split over "
                          f"{sl.cores} cores")
    per_core = per_replica // parts if per_replica % parts == 0 else per_replica / parts
    what_if = a.per_core_batch is not None
    if what_if:
        if a.per_core_batch < 1:
            raise MlperfError(f"{where}: --per-core-batch must be positive")
        per_core = a.per_core_batch
    extra = {}
    if getattr(a, "bucket", None) is not None:
        if a.bench != "gnmt":
            raise MlperfError(f"{where}: --bucket is GNMT's (its length buckets)")
        if inference and not 0 <= a.bucket < len(GNMT_SRC_BRANCHES):
            raise MlperfError(f"{where}: --bucket {a.bucket}: the model's source lengths are "
                              f"buckets 0 to {len(GNMT_SRC_BRANCHES) - 1} ("
                              f"{', '.join(map(str, GNMT_SRC_BRANCHES))} tokens)")
        if not inference and not 0 <= a.bucket < GNMT_BUCKETS:
            raise MlperfError(f"{where}: --bucket {a.bucket}: the input pipeline has buckets "
                              f"0 to {GNMT_BUCKETS - 1}")
        extra["bucket"] = a.bucket
    t, fields = make(a.round, sl, per_core, **extra)
    t.samples_per_step = round(per_core * sl.cores)
    t.metadata = {
        "generator": f"scripts/gen_trace.py mlperf {a.bench} --round {a.round} --cores "
                     f"{sl.cores}" + (f" --inference --scenario {a.scenario}" if inference
                                      else "") + (f" --per-core-batch {per_core}" if what_if else "")
                     + (f" --bucket {extra['bucket']}" if extra else ""),
        "source": sl.source, "samples": unit, "global_batch": t.samples_per_step,
        "batch_per_core": per_core, "iterations_per_loop": sl.iterations_per_loop,
        **fields, **{k: v for k, v in sl.flags.items() if k not in fields},
        **({"what_if": f"per-core batch {per_core} instead of the submission's "
                       f"{sl.global_batch // sl.cores}"} if what_if else {})}
    if a.name:
        t.name = a.name
    return t
