#!/usr/bin/env python3
"""Writes tpusim trace files (format v1, docs/trace-format.md) for common models.

Shapes are per core (SPMD): a data-parallel step over C cores is one per-core program with
`"cores": C` and gradient all-reduces over all cores. Weights, gradients and optimizer state
are f32 (mixed precision as in the MLPerf TPU submissions); activations are bf16.

  gen_trace.py bert --layers 12 --seq 512 --batch 8 --cores 8 -o bert.json
  gen_trace.py resnet50 --batch 32 --cores 8 -o resnet50.json
  gen_trace.py lstm --batch 128 --cores 8 -o lstm.json
  gen_trace.py unet --batch 4 --image 256 --cores 8 -o unet.json
  gen_trace.py examples traces/     (the small committed examples)

Python 3 standard library only.
"""
import argparse
import json
import os
import sys

BF16, F32 = "bf16", "f32"
SIZE = {"bf16": 2, "f16": 2, "f32": 4, "s32": 4, "s8": 1, "u8": 1, "pred": 1}


class Trace:
    """Collects ops in program order; every helper returns the new op's id."""

    def __init__(self, name, cores, description="", metadata=None):
        self.name, self.cores, self.description = name, cores, description
        self.metadata = metadata or {}
        self.ops = []
        self.ids = set()
        self.param_count = 0
        # Dropout: applied in training only; its mask saved for the backward pass (what TF,
        # PyTorch and JAX do: stateful random bits) or regenerated from the seed.
        self.training = True
        self.dropout_mask = "saved"
        # Bytes per core of the weights and optimizer state resident in HBM (the trace's
        # parameter_bytes); None: the trace does not say.
        self.parameter_bytes = None

    def op(self, id_, kind, deps=(), fused=False, operands=None, **fields):
        """`operands`: the dep each HBM operand reads (None: a parameter), where the deps'
        order does not say it (docs/trace-format.md, "Which buffer an operand reads")."""
        assert id_ not in self.ids, id_
        self.ids.add(id_)
        o = {"id": id_, "kind": kind}
        o.update(fields)
        deps = [d for d in deps if d]
        if deps:
            o["deps"] = deps
        if operands is not None:
            o["operands"] = operands
        if fused:
            o["fused"] = True
        self.ops.append(o)
        return id_

    def matmul(self, id_, m, k, n, deps=(), batch=1, dtype=BF16, **kw):
        if batch != 1:
            kw["batch"] = batch
        return self.op(id_, "matmul", deps, m=m, k=k, n=n, dtype=dtype, **kw)

    def vector(self, id_, op, deps=(), rows=None, cols=None, elements=None, dtype=BF16,
               fused=False, **kw):
        shape = {"elements": elements} if elements is not None else {"rows": rows, "cols": cols}
        return self.op(id_, "vector", deps, fused, op=op, **shape, dtype=dtype, **kw)

    def write(self, path):
        doc = {"format": "tpusim.trace", "version": 1, "name": self.name, "cores": self.cores}
        if self.parameter_bytes is not None:
            doc["parameter_bytes"] = self.parameter_bytes
        if self.description:
            doc["description"] = self.description
        if self.metadata:
            doc["metadata"] = self.metadata
        head = json.dumps(doc)[:-1]
        lines = [json.dumps(o, separators=(", ", ": ")) for o in self.ops]
        text = head + ', "ops": [\n  ' + ",\n  ".join(lines) + "\n]}\n"
        if path == "-":
            sys.stdout.write(text)
        else:
            with open(path, "w") as f:
                f.write(text)


# ---------------------------------------------------------------------------------------------
# Dense layers: y = act(x W + b); backward dx = dy W^T, dW = x^T dy, db = sum over rows of dy.


def typed(**dtypes):
    """The dtype fields that differ from the trace's bf16 default (traces stay as they were
    where nothing is f32)."""
    return {k: v for k, v in dtypes.items() if v != BF16}


def dense_fwd(t, name, x, rows, n_in, n_out, deps=(), act=None, x_dtype=BF16):
    """Returns (output id, saved state for dense_bwd). x_dtype: the input's type in HBM (an
    f32 input is converted to bf16 inside the matmul, as XLA fuses the convert)."""
    t.param_count += n_in * n_out + n_out
    mm = t.matmul(f"{name}.mm", rows, n_in, n_out, deps=[x, *deps], **typed(lhs_dtype=x_dtype))
    y = t.vector(f"{name}.bias", "bias_add", [mm], rows=rows, cols=n_out, fused=True)
    pre = y
    if act:
        y = t.vector(f"{name}.{act}", act, [y], rows=rows, cols=n_out, fused=True)
    return y, {"name": name, "x": x, "pre": pre, "rows": rows, "in": n_in, "out": n_out,
               "act": act, "x_dtype": x_dtype}


def dense_bwd(t, s, dy):
    """Returns (dx id, gradient op ids)."""
    name, rows, n_in, n_out = s["name"], s["rows"], s["in"], s["out"]
    if s["act"]:
        dy = t.vector(f"{name}.{s['act']}_grad", s["act"] + "_grad", [dy, s["pre"]],
                      rows=rows, cols=n_out)
    # The bias gradient sums dy over its rows: a reduction of the transposed view.
    db = t.vector(f"{name}.dbias", "reduce_sum", [dy], rows=n_out, cols=rows, out_dtype=F32)
    dx = t.matmul(f"{name}.dx", rows, n_out, n_in, deps=[dy], transpose_rhs=True)
    dw = t.matmul(f"{name}.dw", n_in, rows, n_out, deps=[s["x"], dy], transpose_lhs=True,
                  out_dtype=F32, **typed(lhs_dtype=s.get("x_dtype", BF16)))
    return dx, [db, dw]


def layernorm_fwd(t, name, x, rows, cols, deps=(), fused=True, res=BF16):
    """res: the type of the residual stream around it (its input, output and gradients)."""
    t.param_count += 2 * cols
    y = t.vector(f"{name}", "layernorm", [x, *deps], rows=rows, cols=cols, fused=fused,
                 **({"dtype": res} if res != BF16 else {}))
    return y, {"name": name, "x": x, "rows": rows, "cols": cols, "res": res}


def layernorm_bwd(t, s, dy):
    res = s.get("res", BF16)
    return t.vector(f"{s['name']}.grad", "layernorm_grad", [dy, s["x"]], rows=s["rows"],
                    cols=s["cols"], dtype=res, out_dtype=res)


def grad_sync_and_update(t, name, grads, params, optimizer="adam"):
    """All-reduce a layer's f32 gradients over every core, then update its parameters.
    LAMB is two kernels: moments, update and the two norms (`lamb`), then the step
    p - lr (||p|| / ||u||) u, which needs both norms of the whole tensor (`sgd` on p, u)."""
    deps = grads
    if t.cores > 1:
        deps = [t.op(f"{name}.allreduce", "all_reduce", grads, bytes=params * SIZE[F32],
                     dtype=F32)]
    u = t.vector(f"{name}.{optimizer}", optimizer, deps, elements=params, dtype=F32)
    if optimizer == "lamb":
        return t.vector(f"{name}.lamb_step", "sgd", [u], elements=params, dtype=F32)
    return u


class GlobalNormClip:
    """tf.clip_by_global_norm(grads, 1.0) on each replica's gradients before they are
    all-reduced, as the MLPerf v0.7 BERT submission's `_compiled_local_step` does
    (tf2_common/modeling/model_training_utils.py): a sum of squares of each layer's f32
    gradients once they exist, the global norm once all of them are done, then every
    gradient scaled by clip / max(norm, clip) in its own kernel before its all-reduce and
    update. No all-reduce can start before the whole backward pass has ended."""

    ROW = 1024  # the gradients read as rows of 1024 f32 (reduce_sum runs along a row)

    def __init__(self, t):
        self.t, self.partials, self.rows, self.pending = t, [], 0, []

    def add(self, name, grads, params, optimizer):
        rows = -(-params // self.ROW)
        self.rows += rows
        # operands [None]: the layer's gradients, read as one array of `params` values.
        self.partials.append(self.t.vector(f"{name}.grad_sq", "reduce_sum", grads, rows=rows,
                                           cols=self.ROW, dtype=F32, operands=[None]))
        self.pending.append((name, grads, params, optimizer))

    def finish(self):
        t = self.t
        norm = t.vector("grad_global_norm", "reduce_sum", self.partials, rows=1,
                        cols=self.rows, dtype=F32, operands=[None])
        for name, grads, params, optimizer in self.pending:
            clipped = t.vector(f"{name}.clip", "scale", grads + [norm], elements=params,
                               dtype=F32, operands=[None])
            grad_sync_and_update(t, name, [clipped], params, optimizer)


# ---------------------------------------------------------------------------------------------
# Transformer encoder (BERT, post-LayerNorm)


def dropout_fwd(t, id_, x, elements):
    """Dropout fused into x's producer; none in an evaluation step (x passes through)."""
    if not t.training:
        return x
    return t.vector(id_, "dropout", [x], elements=elements, fused=True, mask=t.dropout_mask)


def dropout_bwd(t, id_, dy, fwd, elements, **kw):
    """Its gradient, fused into dy's producer; a saved mask is read from `fwd`."""
    deps = [dy, fwd] if t.dropout_mask == "saved" else [dy]
    return t.vector(id_, "dropout_grad", deps, elements=elements, fused=True,
                    mask=t.dropout_mask, **kw)


def attention_fwd(t, p, x, b, s, h, heads, deps=(), res=BF16):
    """res: the type of the residual stream (x, the residual sum, the LayerNorm's output)."""
    T, dh = b * s, h // heads
    st = {"x": x, "res": res}
    q, st["q"] = dense_fwd(t, f"{p}.q", x, T, h, h, deps, x_dtype=res)
    k, st["k"] = dense_fwd(t, f"{p}.k", x, T, h, h, deps, x_dtype=res)
    v, st["v"] = dense_fwd(t, f"{p}.v", x, T, h, h, deps, x_dtype=res)
    scores = t.matmul(f"{p}.scores", s, dh, s, deps=[q, k], batch=b * heads, transpose_rhs=True)
    # The backward pass reads the softmax's output y (softmax_grad), the probabilities after
    # dropout (dv) and the mask, so y is written to HBM as well.
    sm = t.vector(f"{p}.softmax", "softmax", [scores], rows=b * heads * s, cols=s, fused=True)
    probs = dropout_fwd(t, f"{p}.probs_dropout", sm, b * heads * s * s)
    ctx = t.matmul(f"{p}.context", s, s, dh, deps=[probs, v], batch=b * heads)
    o, st["o"] = dense_fwd(t, f"{p}.out", ctx, T, h, h)
    st["o_drop"] = o = dropout_fwd(t, f"{p}.out_dropout", o, T * h)
    r = t.vector(f"{p}.residual", "add", [o, x], elements=T * h, fused=True,
                 **typed(dtype=res, out_dtype=res))
    y, st["ln"] = layernorm_fwd(t, f"{p}.ln", r, T, h, res=res)
    st.update(q_out=q, k_out=k, v_out=v, probs=probs, softmax=sm, b=b, s=s, h=h, heads=heads)
    return y, st


def attention_bwd(t, p, st, dy):
    b, s, h, heads = st["b"], st["s"], st["h"], st["heads"]
    T, dh = b * s, h // heads
    res = st["res"]
    dr = layernorm_bwd(t, st["ln"], dy)
    do = dropout_bwd(t, f"{p}.out_dropout_grad", dr, st["o_drop"], T * h,
                     **({"dtype": res, "out_dtype": BF16} if res != BF16 else {}))
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
    dxk, g_k = dense_bwd(t, st["k"], dk)
    dxv, g_v = dense_bwd(t, st["v"], dv)
    # In a residual stream of f32 the input gradients (bf16 matmul results) are summed in f32.
    a1 = t.vector(f"{p}.dx_sum1", "add", [dxq, dxk], elements=T * h, **typed(out_dtype=res))
    a2 = t.vector(f"{p}.dx_sum2", "add", [a1, dxv], elements=T * h, fused=True,
                  **typed(out_dtype=res))
    dx = t.vector(f"{p}.dx", "add", [a2, dr], elements=T * h, fused=True,
                  **typed(dtype=res, out_dtype=res))
    return dx, g_o + g_q + g_k + g_v + [dr]


def ffn_fwd(t, p, x, T, h, f, res=BF16):
    st = {"res": res}
    a, st["in"] = dense_fwd(t, f"{p}.ffn_in", x, T, h, f, act="gelu", x_dtype=res)
    o, st["out"] = dense_fwd(t, f"{p}.ffn_out", a, T, f, h)
    st["drop"] = o = dropout_fwd(t, f"{p}.ffn_dropout", o, T * h)
    r = t.vector(f"{p}.ffn_residual", "add", [o, x], elements=T * h, fused=True,
                 **typed(dtype=res, out_dtype=res))
    y, st["ln"] = layernorm_fwd(t, f"{p}.ffn_ln", r, T, h, res=res)
    st.update(T=T, h=h)
    return y, st


def ffn_bwd(t, p, st, dy):
    T, h = st["T"], st["h"]
    res = st["res"]
    dr = layernorm_bwd(t, st["ln"], dy)
    do = dropout_bwd(t, f"{p}.ffn_dropout_grad", dr, st["drop"], T * h,
                     **({"dtype": res, "out_dtype": BF16} if res != BF16 else {}))
    da, g_out = dense_bwd(t, st["out"], do)
    dx, g_in = dense_bwd(t, st["in"], da)
    dx = t.vector(f"{p}.ffn_dx", "add", [dx, dr], elements=T * h, fused=True,
                  **typed(dtype=res, out_dtype=res))
    return dx, g_out + g_in + [dr]


def encoder_layer_params(h, f):
    return 4 * (h * h + h) + 2 * h * f + f + h + 4 * h


def encoder_layers_fwd(t, prefix, x, b, s, h, heads, f, L, res=BF16):
    """L encoder layers forward (ops named {prefix}l{i}.*); returns the output and, per
    layer, (name, attention state, FFN state) for the backward pass."""
    states = []
    for i in range(L):
        p = f"{prefix}l{i}"
        x, sa = attention_fwd(t, f"{p}.attn", x, b, s, h, heads, res=res)
        x, sf = ffn_fwd(t, p, x, b * s, h, f, res=res)
        states.append((p, sa, sf))
    return x, states


def siamese_fwd(t, a, L):
    """The second sequence of a Siamese encoder: same weights (not counted again), own
    activations; its pooled output joins the head's input."""
    b, s, h, heads, f, vocab = a.batch, a.seq2, a.hidden, a.heads, a.ffn, a.vocab
    T = b * s
    params = t.param_count
    x, emb_ln = None, None
    if a.embeddings:
        ids = t.op("s2.input_ids", "infeed", bytes=T * SIZE["s32"])
        tok = t.vector("s2.emb.tokens", "gather", [ids], rows=T, cols=h, table_rows=vocab,
                       operands=[None, ids])
        pos = t.vector("s2.emb.position", "add", [tok], elements=T * h, fused=True)
        x, emb_ln = layernorm_fwd(t, "s2.emb.ln", pos, T, h, res=residual_dtype(a))
    x, states = encoder_layers_fwd(t, "s2.", x, b, s, h, heads, f, L, res=residual_dtype(a))
    pool = t.vector("s2.pool", "reduce_sum", [x], rows=b * h, cols=s)
    t.param_count = params
    return {"T": T, "states": states, "emb_ln": emb_ln, "pool": pool}


def residual_dtype(a):
    """The residual stream's type: f32 where LayerNorm runs in f32 (--f32-layernorm)."""
    return F32 if getattr(a, "f32_layernorm", False) else BF16


def gen_bert(a):
    b, s, h, heads, f, L, vocab = a.batch, a.seq, a.hidden, a.heads, a.ffn, a.layers, a.vocab
    res = residual_dtype(a)
    T = b * s
    fwd_only = a.forward_only
    t = Trace(a.name or ("bert_fwd" if fwd_only else "bert_train_step"), a.cores,
              f"BERT encoder ({L} layers, hidden {h}, {heads} heads, FFN {f}), seq {s}, "
              f"batch {b} per core x {a.cores} cores" + ("" if fwd_only else
              ": forward, backward, gradient all-reduce per layer, "
              + ("LAMB" if a.optimizer == "lamb" else "Adam")),
              {"generator": "scripts/gen_trace.py bert", "layers": L, "seq": s,
               "batch_per_core": b, "hidden": h, "heads": heads, "ffn": f, "vocab": vocab,
               **({"seq2": a.seq2} if a.seq2 else {})})
    t.training = not fwd_only
    t.dropout_mask = getattr(a, "dropout_mask", "saved")
    if t.training:
        t.metadata["dropout_mask"] = t.dropout_mask
    x = None
    emb_params = (vocab + s + 2) * h + 2 * h
    # Over PCIe, a real step feeds only its input batch (int32 token ids); activations and
    # results stay in HBM.
    if a.embeddings:
        ids = t.op("input_ids", "infeed", bytes=T * SIZE["s32"])
        # operands: the table is a parameter; the ids are the gather's indices.
        tok = t.vector("emb.tokens", "gather", [ids], rows=T, cols=h, table_rows=vocab,
                       operands=[None, ids])
        pos = t.vector("emb.position", "add", [tok], elements=T * h, fused=True)
        typ = t.vector("emb.token_type", "add", [pos], elements=T * h, fused=True)
        x, emb_ln = layernorm_fwd(t, "emb.ln", typ, T, h, res=res)
    else:
        x = None  # layers of a deeper model: the input is the previous layer's output, in HBM
    x, states = encoder_layers_fwd(t, "", x, b, s, h, heads, f, L, res=res)
    # A Siamese model (seed 000's DualRobertaModel): the same encoder weights run a second
    # sequence of length seq2 (the answer beside the question); both passes' gradients of a
    # layer are summed before its one all-reduce.
    second = siamese_fwd(t, a, L) if a.seq2 else None
    if fwd_only:
        return t
    # Masked-LM head on the masked positions (BERT pre-training: 76 of 512), weights tied to
    # the token embedding; the loss gradient arrives as d(logits) = softmax - one_hot.
    P = b * a.predictions
    head_in = [x, second["pool"]] if second else [x]
    g = t.vector("mlm.gather", "gather", head_in, rows=P, cols=h, table_rows=T,
                 **typed(dtype=res))
    tr, s_tr = dense_fwd(t, "mlm.transform", g, P, h, h, act="gelu", x_dtype=res)
    tr, s_ln = layernorm_fwd(t, "mlm.ln", tr, P, h)
    logits = t.matmul("mlm.logits", P, h, vocab, deps=[tr], transpose_rhs=True)
    probs = t.vector("mlm.softmax", "softmax", [logits], rows=P, cols=vocab, fused=True,
                     out_dtype=F32)
    dlogits = t.vector("mlm.dlogits", "sub", [probs], elements=P * vocab, dtype=F32,
                       fused=True, out_dtype=BF16)
    dtr = t.matmul("mlm.dtransform_out", P, vocab, h, deps=[dlogits])
    demb_dec = t.matmul("mlm.dembedding", vocab, P, h, deps=[dlogits, tr], transpose_lhs=True,
                        out_dtype=F32)
    dtr = layernorm_bwd(t, s_ln, dtr)
    dg, g_mlm = dense_bwd(t, s_tr, dtr)
    dx = t.vector("mlm.scatter", "scatter_add", [dg], rows=P, cols=h, table_rows=T,
                  **typed(dtype=res))
    head_grads = g_mlm + [demb_dec, s_ln["name"] + ".grad"]
    clip = GlobalNormClip(t) if getattr(a, "clip_global_norm", False) else None
    update = clip.add if clip else (lambda *args: grad_sync_and_update(t, *args))
    if second:
        dx2 = t.vector("s2.pool_grad", "scale", [dg], elements=second["T"] * h)
    for i, (p, sa, sf) in reversed(list(enumerate(states))):
        dx, g_f = ffn_bwd(t, p, sf, dx)
        dx, g_a = attention_bwd(t, f"{p}.attn", sa, dx)
        grads = g_f + g_a
        if second:
            p2, sa2, sf2 = second["states"][i]
            dx2, g_f2 = ffn_bwd(t, p2, sf2, dx2)
            dx2, g_a2 = attention_bwd(t, f"{p2}.attn", sa2, dx2)
            grads = [t.vector(f"{p}.grad_sum", "add", grads + g_f2 + g_a2,
                              elements=encoder_layer_params(h, f), dtype=F32)]
        update(p, grads, encoder_layer_params(h, f), a.optimizer)
    update("mlm", head_grads, h * h + 3 * h + vocab, a.optimizer)
    if a.embeddings:
        dln = layernorm_bwd(t, emb_ln, dx)
        demb = t.vector("emb.tokens_grad", "scatter_add", [dln], rows=T, cols=h,
                        table_rows=vocab)
        if second:
            dln2 = layernorm_bwd(t, second["emb_ln"], dx2)
            demb = t.vector("s2.emb.tokens_grad", "scatter_add", [dln2, demb],
                            rows=second["T"], cols=h, table_rows=vocab)
        update("emb", [demb, demb_dec], emb_params, a.optimizer)
    if clip:
        clip.finish()
    # Resident per core: the f32 weights and Adam's or LAMB's two f32 moments.
    params = L * encoder_layer_params(h, f) + h * h + 3 * h + vocab
    params += emb_params if a.embeddings else 0
    t.parameter_bytes = params * 3 * SIZE[F32]
    return t


# ---------------------------------------------------------------------------------------------
# Convolutional networks (ResNet-50, UNet): conv2d + batchnorm + relu; backward as a conv for
# dx (stride 1) or its implicit GEMM (strided), and the implicit GEMM x^T dy for dw.


def out_dim(x, stride):
    return (x + stride - 1) // stride


class ConvNet:
    def __init__(self, t, b):
        self.t, self.b = t, b
        self.tape = []  # (name, state) in forward order
        self.params = {}
        self.size = {}  # activation id -> elements (for gradient sums)
        self.no_grad = set()  # activations that need no gradient (the input)

    def conv(self, name, x, hw, c_in, c_out, k, stride=1, bn=True, relu=True, deps=(),
             group="g"):
        t, b = self.t, self.b
        h, w = hw
        oh, ow = out_dim(h, stride), out_dim(w, stride)
        y = t.op(f"{name}.conv", "conv2d", [x, *deps], batch=b, h=h, w=w, c_in=c_in,
                 c_out=c_out, kh=k, kw=k, stride_h=stride, stride_w=stride, padding="same",
                 dtype=BF16)
        pre = y
        if bn:
            y = t.vector(f"{name}.bn", "batchnorm", [y], rows=b * oh * ow, cols=c_out,
                         fused=True)
        if relu:
            y = t.vector(f"{name}.relu", "relu", [y], elements=b * oh * ow * c_out, fused=True)
        self.params[group] = self.params.get(group, 0) + k * k * c_in * c_out + (
            2 * c_out if bn else c_out)
        self.tape.append(("conv", name, dict(x=x, pre=pre, out=y, h=h, w=w, oh=oh, ow=ow,
                                             c_in=c_in, c_out=c_out, k=k, stride=stride,
                                             bn=bn, relu=relu, group=group)))
        return y, (oh, ow)

    def conv_bwd(self, name, s, dy, need_dx=True):
        t, b = self.t, self.b
        pix = b * s["oh"] * s["ow"]
        # XLA fuses the ReLU mask and the batch-norm gradient's elementwise work into the
        # output fusion of the convolution that produced dy, as it fuses the forward BN and
        # ReLU into the forward convolution. dy is the primary (first) dep; the forward
        # tensors they also read come from HBM.
        fuse = fusable(t, dy) and not tiles_taken(t, dy)
        if s["relu"]:
            dy = t.vector(f"{name}.relu_grad", "relu_grad", [dy, s["out"]],
                          elements=pix * s["c_out"], fused=fuse)
        if s["bn"]:
            dy = t.vector(f"{name}.bn_grad", "batchnorm_grad", [dy, s["pre"]], rows=pix,
                          cols=s["c_out"], fused=fuse or bool(s["relu"]))
        k, c_in, c_out = s["k"], s["c_in"], s["c_out"]
        dx = None
        if not need_dx:
            pass
        elif s["stride"] == 1:
            dx = t.op(f"{name}.dx", "conv2d", [dy], batch=b, h=s["oh"], w=s["ow"], c_in=c_out,
                      c_out=c_in, kh=k, kw=k, padding="same", dtype=BF16)
        else:
            # dy dilated by the stride, convolved with the flipped filter: the same FLOPs as
            # the forward conv, written as its implicit GEMM over the output pixels.
            dx = t.matmul(f"{name}.dx", pix, k * k * c_out, c_in, deps=[dy],
                          transpose_rhs=True)
        dw = t.matmul(f"{name}.dw", k * k * c_in, pix, c_out, deps=[s["x"], dy],
                      transpose_lhs=True, out_dtype=F32)
        return dx, dw


def fusable(t, op_id):
    """True if op_id is a matmul / convolution or an op fused into one: XLA fuses elementwise
    consumers into the convolution's output fusion."""
    return any(o["id"] == op_id and (o["kind"] in ("matmul", "conv2d") or o.get("fused"))
               for o in t.ops)


def tiles_taken(t, op_id):
    """True if a fused op already takes op_id's tiles: a producer hands them to one fused
    consumer (docs/trace-format.md); a second consumer reads the tensor from HBM."""
    return any(o.get("fused") and o.get("deps", [None])[0] == op_id for o in t.ops)


def backward_convnet(net, dy, extra_grad_of=None):
    """Walks the tape backwards; skip connections add their gradient where they fork."""
    t = net.t
    grads = {}
    pending = {}  # activation id -> gradient ids still to be summed into it
    dys = {net.tape[-1][2]["out"]: dy}
    for kind, name, s in reversed(net.tape):
        out = s["out"]
        if out not in dys:
            continue
        g = dys.pop(out)
        if kind == "conv":
            dx, dw = net.conv_bwd(name, s, g, need_dx=s["x"] not in net.no_grad)
            grads.setdefault(s["group"], []).append(dw)
            targets = [(s["x"], dx)] if dx else []
        else:  # "add" (residual), "pool", "concat", "up": custom backward
            targets = s["bwd"](g)
        for x, dx in targets:
            if x in dys:
                # Summed in the output fusion of the convolution that produced dx (XLA fuses
                # the add; the other gradient is read from HBM).
                dys[x] = t.vector(f"{name}.gsum_{len(t.ops)}", "add", [dx, dys[x]],
                                  elements=net.size[x], fused=fusable(t, dx))
            else:
                dys[x] = dx
    return grads


def gen_resnet50(a):
    b = a.batch
    fwd = a.forward_only
    t = Trace(a.name or ("resnet50_eval_step" if fwd else "resnet50_train_step"), a.cores,
              f"ResNet-50 v1.5 {'eval' if fwd else 'training'} step, {a.image}x{a.image} images,"
              f" batch {b} per core x {a.cores} cores: " + (FWD_ONLY if fwd else
              "forward, backward, gradient all-reduce per stage, SGD momentum"),
              {"generator": "scripts/gen_trace.py resnet50", "batch_per_core": b,
               "image": a.image, **({"forward_only": True} if fwd else {})})
    net = ConvNet(t, b)
    x = t.op("input", "infeed", bytes=b * a.image * a.image * 3 * SIZE[BF16])
    net.no_grad.add(x)
    net.size[x] = b * a.image * a.image * 3
    if a.space_to_depth:
        # MLPerf's TPU ResNet-50 feeds the stem a space-to-depth image: 2 x 2 pixel blocks
        # folded into channels (224x224x3 -> 112x112x12), so the 7x7 stride-2 conv becomes a
        # 4x4 stride-1 conv with K = 4*4*12 = 192 instead of 7*7*3 = 147 (both two MXU row
        # tiles) and its input DMAs move 12-channel rows instead of 3-channel ones.
        y, hw = net.conv("stem", x, (a.image // 2, a.image // 2), 12, 64, 4, stride=1,
                         group="stem")
    else:
        y, hw = net.conv("stem", x, (a.image, a.image), 3, 64, 7, stride=2, group="stem")
    net.size[y] = b * hw[0] * hw[1] * 64
    pool_hw = (out_dim(hw[0], 2), out_dim(hw[1], 2))
    # XLA lowers the 3x3 stride-2 max pool as a reduce-window: lane-dense elementwise maxes
    # over shifted windows of the input, which it reads once (channels on lanes). Written as a
    # two-input max over the two halves of the input (reads the input once, VPU maxes).
    in_elems = net.size[y]
    pool = t.vector("stem.maxpool", "max", [y], elements=in_elems // 2)
    net.size[pool] = b * pool_hw[0] * pool_hw[1] * 64

    def pool_bwd(g, src=y, n_in=in_elems):
        # XLA's select-and-scatter: per window, select the input's maximum and add the
        # output gradient there; elementwise over the input (reads it and the upsampled
        # gradient, writes the input gradient), like a relu_grad's select.
        return [(src, t.vector("stem.maxpool_grad", "relu_grad", [g, src], elements=n_in))]

    net.tape.append(("pool", "stem.maxpool", {"out": pool, "bwd": pool_bwd}))
    x, hw, c = pool, pool_hw, 64
    stages = [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]
    for si, (width, blocks, stride0) in enumerate(stages):
        grp = f"stage{si + 1}"
        for bi in range(blocks):
            p = f"s{si + 1}b{bi}"
            stride = stride0 if bi == 0 else 1
            sc = x
            if bi == 0:
                # The projection first, so that the residual add can fuse into c3's output
                # fusion with the shortcut as its (already computed) second operand.
                sc, _ = net.conv(f"{p}.proj", x, hw, c, 4 * width, 1, stride=stride,
                                 relu=False, group=grp)
            y1, hw1 = net.conv(f"{p}.c1", x, hw, c, width, 1, group=grp)
            net.size[y1] = b * hw1[0] * hw1[1] * width
            y2, hw2 = net.conv(f"{p}.c2", y1, hw1, width, width, 3, stride=stride, group=grp)
            net.size[y2] = b * hw2[0] * hw2[1] * width
            y3, _ = net.conv(f"{p}.c3", y2, hw2, width, 4 * width, 1, relu=False, group=grp)
            net.size[y3] = b * hw2[0] * hw2[1] * 4 * width
            if bi == 0:
                net.size[sc] = net.size[y3]
            n = net.size[y3]
            add = t.vector(f"{p}.add", "add", [y3, sc], elements=n, fused=True)
            out = t.vector(f"{p}.relu", "relu", [add], elements=n, fused=True)
            net.size[out] = n

            def add_bwd(g, p=p, out=out, y3=y3, sc=sc, n=n):
                dg = t.vector(f"{p}.relu_grad", "relu_grad", [g, out], elements=n,
                              fused=fusable(t, g))
                return [(y3, dg), (sc, dg)]

            net.tape.append(("add", p, {"out": out, "bwd": add_bwd}))
            x, hw, c = out, hw2, 4 * width
    gap = t.vector("head.avgpool", "reduce_sum", [x], rows=b * c, cols=hw[0] * hw[1])
    fc, s_fc = dense_fwd(t, "head.fc", gap, b, c, 1000)
    net.params["head"] = 0
    sm = t.vector("head.softmax", "softmax", [fc], rows=b, cols=1000, fused=True, out_dtype=F32)
    if fwd:
        return t
    dlog = t.vector("head.dlogits", "sub", [sm], elements=b * 1000, dtype=F32, fused=True,
                    out_dtype=BF16)
    dgap, g_fc = dense_bwd(t, s_fc, dlog)
    dfeat = t.vector("head.avgpool_grad", "scale", [dgap], elements=b * c * hw[0] * hw[1])
    grads = backward_convnet(net, dfeat)
    grads["head"] = g_fc
    net.params["head"] = c * 1000 + 1000
    for grp in reversed(list(net.params)):
        grad_sync_and_update(t, grp, grads.get(grp, []), net.params[grp], "sgd_momentum")
    return t


def gen_unet(a):
    b, img, base, depth = a.batch, a.image, a.base, a.depth
    fwd = a.forward_only
    t = Trace(a.name or ("unet_eval_step" if fwd else "unet_train_step"), a.cores,
              f"UNet ({depth} levels, {base} base channels, 3x3 convs) on {img}x{img} images, "
              f"batch {b} per core x {a.cores} cores: " + (FWD_ONLY if fwd else
              "forward, backward, all-reduce, Adam"),
              {"generator": "scripts/gen_trace.py unet", "batch_per_core": b, "image": img,
               "base_channels": base, "depth": depth, **({"forward_only": True} if fwd else {})})
    net = ConvNet(t, b)
    x = t.op("input", "infeed", bytes=b * img * img * a.in_channels * SIZE[BF16])
    net.no_grad.add(x)
    net.size[x] = b * img * img * a.in_channels
    hw, c, skips = (img, img), a.in_channels, []
    for d in range(depth + 1):
        width = base << d
        grp = f"down{d}" if d < depth else "bottom"
        x, hw = net.conv(f"d{d}.c1", x, hw, c, width, 3, group=grp)
        net.size[x] = b * hw[0] * hw[1] * width
        x, hw = net.conv(f"d{d}.c2", x, hw, width, width, 3, group=grp)
        net.size[x] = b * hw[0] * hw[1] * width
        c = width
        if d == depth:
            break
        skips.append((x, hw, c))
        phw = (hw[0] // 2, hw[1] // 2)
        pool = t.vector(f"d{d}.maxpool", "reduce_max", [x], rows=b * phw[0] * phw[1] * c,
                        cols=4, fused=True)
        net.size[pool] = b * phw[0] * phw[1] * c

        def pool_bwd(g, d=d, src=x, n=net.size[x], rows=net.size[pool]):
            return [(src, t.vector(f"d{d}.maxpool_grad", "scatter_add", [g], rows=rows,
                                   cols=1, table_rows=n))]

        net.tape.append(("pool", f"d{d}.maxpool", {"out": pool, "bwd": pool_bwd}))
        x, hw = pool, phw
    for d in reversed(range(depth)):
        skip, shw, sc = skips[d]
        width = base << d
        grp = f"up{d}"
        # 2x2 transposed conv: each input pixel writes a 2x2 patch of `width` channels.
        up = t.matmul(f"u{d}.upconv", b * hw[0] * hw[1], c, 4 * width, deps=[x])
        n_up = b * shw[0] * shw[1] * width
        net.size[up] = n_up
        cat = t.op(f"u{d}.concat", "copy", [up, skip], bytes=2 * n_up * SIZE[BF16])
        net.size[cat] = 2 * n_up
        net.params[grp] = c * 4 * width + width

        def up_bwd(g, d=d, x=x, skip=skip, rows=b * hw[0] * hw[1], c=c, width=width,
                   grp=grp, n_up=n_up):
            dup = t.op(f"u{d}.concat_grad", "copy", [g], bytes=2 * n_up * SIZE[BF16])
            dx = t.matmul(f"u{d}.upconv_dx", rows, 4 * width, c, deps=[dup], transpose_rhs=True)
            dw = t.matmul(f"u{d}.upconv_dw", c, rows, 4 * width, deps=[x, dup],
                          transpose_lhs=True, out_dtype=F32)
            extra.setdefault(grp, []).append(dw)
            return [(x, dx), (skip, dup)]

        net.tape.append(("up", f"u{d}.upconv", {"out": cat, "bwd": up_bwd}))
        x, hw = cat, shw
        x, hw = net.conv(f"u{d}.c1", x, hw, 2 * width, width, 3, group=grp)
        net.size[x] = b * hw[0] * hw[1] * width
        x, hw = net.conv(f"u{d}.c2", x, hw, width, width, 3, group=grp)
        net.size[x] = b * hw[0] * hw[1] * width
        c = width
    extra = {}
    logits, _ = net.conv("head", x, hw, c, a.classes, 1, bn=False, relu=False, group="head")
    n = b * hw[0] * hw[1] * a.classes
    net.size[logits] = n
    sm = t.vector("loss.softmax", "softmax", [logits], rows=b * hw[0] * hw[1], cols=a.classes,
                  fused=True, out_dtype=F32)
    if fwd:
        return t
    dlog = t.vector("loss.dlogits", "sub", [sm], elements=n, dtype=F32, fused=True,
                    out_dtype=BF16)
    grads = backward_convnet(net, dlog)
    for grp in reversed(list(net.params)):
        grad_sync_and_update(t, grp, grads.get(grp, []) + extra.get(grp, []), net.params[grp])
    return t


# ---------------------------------------------------------------------------------------------
# LSTM (Keras IMDB example: Embedding(10000, 128) -> LSTM(32) -> Dense(1, sigmoid)), unrolled
# per timestep: one recurrent matmul and the gate arithmetic per step.


# An evaluation (validation) step: the forward pass and the loss, no backward, all-reduce or
# optimizer (`--forward-only`; tpusim train's eval passes, docs/train.md).
FWD_ONLY = "forward only (evaluation step)"


def gen_lstm(a):
    b, seq, emb, u, vocab = a.batch, a.seq, a.embedding, a.units, a.vocab
    fwd = a.forward_only
    t = Trace(a.name or ("lstm_imdb_eval_step" if fwd else "lstm_imdb_train_step"), a.cores,
              f"Keras IMDB LSTM (embedding {vocab}x{emb}, LSTM {u} units, seq {seq}), batch {b} "
              f"per core x {a.cores} cores: " + (FWD_ONLY if fwd else
              "forward, backward through time, all-reduce, Adam"),
              {"generator": "scripts/gen_trace.py lstm", "batch_per_core": b, "seq": seq,
               "embedding": emb, "units": u, "vocab": vocab,
               **({"forward_only": True} if fwd else {})})
    g4, g3 = 4 * u, 3 * u
    e = t.vector("embed", "gather", rows=b * seq, cols=emb, table_rows=vocab)
    xp, s_xp = dense_fwd(t, "x_proj", e, b * seq, emb, g4)
    h = c = None
    steps = []
    for i in range(seq):
        p = f"t{i}"
        gates = xp
        if h:
            rec = t.matmul(f"{p}.rec", b, u, g4, deps=[h, xp])
            gates = t.vector(f"{p}.gates", "add", [rec], elements=b * g4, fused=True)
        # One producer hands its tiles to one fused consumer (docs/trace-format.md): the
        # sigmoid takes the gates' tiles, the tanh of the cell input reads them from HBM, and
        # the new cell state (whose deps finish in two different ops) is not fused either.
        sig = t.vector(f"{p}.sigmoid", "sigmoid", [gates], elements=b * g3, fused=bool(h))
        gg = t.vector(f"{p}.tanh_g", "tanh", [gates], elements=b * u)
        ig = t.vector(f"{p}.i_g", "mul", [sig, gg], elements=b * u)
        if c:
            fc = t.vector(f"{p}.f_c", "mul", [sig, c], elements=b * u)
            c_new = t.vector(f"{p}.c", "add", [ig, fc], elements=b * u)
        else:
            c_new = ig
        tc = t.vector(f"{p}.tanh_c", "tanh", [c_new], elements=b * u, fused=True)
        h_new = t.vector(f"{p}.h", "mul", [tc, sig], elements=b * u, fused=True)
        steps.append(dict(p=p, h_prev=h, c_prev=c, sig=sig, gg=gg, c=c_new, tc=tc))
        h, c = h_new, c_new
    y, s_out = dense_fwd(t, "out", h, b, u, 1, act="sigmoid")
    if fwd:
        return t
    dy = t.vector("loss.dlogits", "sub", [y], elements=b, dtype=F32, fused=True,
                  out_dtype=BF16)
    dh, g_out = dense_bwd(t, s_out, dy)
    dc = None
    du_acc = None
    dgates_last = None
    for st in reversed(steps):
        p = st["p"]
        do = t.vector(f"{p}.do", "mul", [dh, st["tc"]], elements=b * u)
        dtc = t.vector(f"{p}.dtanh_c", "mul", [dh, st["sig"]], elements=b * u)
        dcc = t.vector(f"{p}.dc_in", "tanh_grad", [dtc, st["tc"]], elements=b * u, fused=True)
        if dc:
            dcc = t.vector(f"{p}.dc", "add", [dcc, dc], elements=b * u, fused=True)
        di = t.vector(f"{p}.di", "mul", [dcc, st["gg"]], elements=b * u)
        dg = t.vector(f"{p}.dg", "mul", [dcc, st["sig"]], elements=b * u)
        dsig_in = [di, do]
        if st["c_prev"]:
            df = t.vector(f"{p}.df", "mul", [dcc, st["c_prev"]], elements=b * u)
            dc = t.vector(f"{p}.dc_prev", "mul", [dcc, st["sig"]], elements=b * u)
            dsig_in.append(df)
        dsig = t.vector(f"{p}.dsigmoid", "sigmoid_grad", [*dsig_in, st["sig"]],
                        elements=b * g3)
        dgt = t.vector(f"{p}.dtanh_g", "tanh_grad", [dg, st["gg"]], elements=b * u)
        dgates = t.op(f"{p}.dgates", "copy", [dsig, dgt], bytes=b * g4 * SIZE[BF16])
        dgates_last = dgates
        if st["h_prev"]:
            dh = t.matmul(f"{p}.dh_prev", b, g4, u, deps=[dgates], transpose_rhs=True)
            du = t.matmul(f"{p}.du", u, b, g4, deps=[st["h_prev"], dgates], transpose_lhs=True,
                          out_dtype=F32)
            if du_acc:
                du = t.vector(f"{p}.du_acc", "add", [du, du_acc], elements=u * g4, dtype=F32,
                              fused=True)
            du_acc = du
    # The input projection's gradient for every step at once (all dgates done by now).
    de, g_xp = dense_bwd(t, s_xp, dgates_last)
    demb = t.vector("embed.grad", "scatter_add", [de], rows=b * seq, cols=emb, table_rows=vocab)
    grad_sync_and_update(t, "out", g_out, u + 1)
    grad_sync_and_update(t, "lstm", g_xp + [du_acc], emb * g4 + u * g4 + g4)
    grad_sync_and_update(t, "embed", [demb], vocab * emb)
    return t


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
    p.add_argument("--clip-global-norm", action="store_true",
                   help="clip the gradients by their global norm before the all-reduce, as "
                   "the MLPerf v0.7 BERT submission does: every all-reduce waits for the "
                   "whole backward pass")
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
                   help="stem as a 7x7 stride-2 conv on the 3-channel image (default: MLPerf's "
                   "space-to-depth input, a 4x4 conv on 12 channels)")
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
    p = sub.add_parser("examples", help="write the small committed examples into DIR")
    p.add_argument("dir")
    p.set_defaults(func=gen_examples)
    a = ap.parse_args(argv)
    if a.model == "examples":
        gen_examples(a)
        return 0
    for field in ("batch", "cores"):
        if getattr(a, field) < 1:
            ap.error(f"--{field} must be positive")
    a.func(a).write(a.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
