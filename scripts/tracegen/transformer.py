"""Transformer encoders: BERT, RoBERTa, the Siamese pair of seed 000."""
from .core import (
    BF16, F32, GlobalNormClip, SIZE, Trace, dense_bwd, dense_fwd, grad_sync_and_update,
    layernorm_bwd, layernorm_fwd, typed)


# ---------------------------------------------------------------------------------------------
# Transformer encoder (BERT, post-LayerNorm)


def dropout_fwd(t, id_, x, elements, **kw):
    """Dropout fused into x's producer; none in an evaluation step (x passes through)."""
    if not t.training:
        return x
    return t.vector(id_, "dropout", [x], elements=elements, fused=True, mask=t.dropout_mask,
                    **kw)


def embedding_ln_dropout(t, prefix, x, T, h, res):
    """The embeddings' LayerNorm and dropout (BERT's layer_norm_and_dropout; the TF 2 model
    garden's TransformerEncoder: LayerNormalization, then Dropout)."""
    y, st = layernorm_fwd(t, f"{prefix}emb.ln", x, T, h, res=res)
    y = dropout_fwd(t, f"{prefix}emb.dropout", y, T * h, **typed(dtype=res, out_dtype=res))
    st["drop"] = y if t.training else None
    return y, st


def embedding_ln_dropout_bwd(t, prefix, st, dy, T, h):
    if st.get("drop"):
        res = st["res"]
        dy = dropout_bwd(t, f"{prefix}emb.dropout_grad", dy, st["drop"], T * h,
                         **typed(dtype=res, out_dtype=res))
    return layernorm_bwd(t, st, dy)


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
    # dropout (dv) and the mask, so y is written to HBM as well. Not fused into the scores
    # matmul: a row reduction ends an XLA fusion, so the softmax reads the scores from HBM
    # (docs/program.md, "Row normalisations").
    f32 = t.softmax_f32 and t.act != F32
    sm = t.vector(f"{p}.softmax", "softmax", [scores], rows=b * heads * s, cols=s,
                  **({"out_dtype": F32} if f32 else {}))
    probs = dropout_fwd(t, f"{p}.probs_dropout", sm, b * heads * s * s,
                        **({"dtype": F32} if f32 else {}))
    ctx = t.matmul(f"{p}.context", s, s, dh, deps=[probs, v], batch=b * heads,
                   **({"lhs_dtype": F32} if f32 else {}))
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
                     **({"dtype": res, "out_dtype": t.act} if res != t.act else {}))
    dctx, g_o = dense_bwd(t, st["o"], do)
    dprobs = t.matmul(f"{p}.dprobs", s, dh, s, deps=[dctx, st["v_out"]], batch=b * heads,
                      transpose_rhs=True)
    f32 = t.softmax_f32 and t.act != F32
    dv = t.matmul(f"{p}.dv", s, s, dh, deps=[st["probs"], dctx], batch=b * heads,
                  transpose_lhs=True, **({"lhs_dtype": F32} if f32 else {}))
    # --f32-softmax: the bf16 gradient of the probabilities is converted to f32 in the dropout
    # gradient; the softmax gradient reads it and the f32 softmax output, and writes bf16.
    dprobs = dropout_bwd(t, f"{p}.probs_dropout_grad", dprobs, st["probs"], b * heads * s * s,
                         **({"out_dtype": F32} if f32 else {}))
    dscores = t.vector(f"{p}.softmax_grad", "softmax_grad", [dprobs, st["softmax"]],
                       rows=b * heads * s, cols=s, fused=True,
                       **({"dtype": F32, "out_dtype": BF16} if f32 else {}))
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


def ffn_fwd(t, p, x, T, h, f, res=BF16, act="gelu"):
    """act: the inner activation (BERT: gelu; the Transformer of t2t: relu)."""
    st = {"res": res}
    a, st["in"] = dense_fwd(t, f"{p}.ffn_in", x, T, h, f, act=act, x_dtype=res)
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
                     **({"dtype": res, "out_dtype": t.act} if res != t.act else {}))
    da, g_out = dense_bwd(t, st["out"], do)
    dx, g_in = dense_bwd(t, st["in"], da)
    dx = t.vector(f"{p}.ffn_dx", "add", [dx, dr], elements=T * h, fused=True,
                  **typed(dtype=res, out_dtype=res))
    return dx, g_out + g_in + [dr]


def encoder_layer_params(h, f):
    return 4 * (h * h + h) + 2 * h * f + f + h + 4 * h


def encoder_layers_fwd(t, prefix, x, b, s, h, heads, f, L, res=BF16, act="gelu"):
    """L encoder layers forward (ops named {prefix}l{i}.*); returns the output and, per
    layer, (name, attention state, FFN state) for the backward pass."""
    states = []
    for i in range(L):
        p = f"{prefix}l{i}"
        x, sa = attention_fwd(t, f"{p}.attn", x, b, s, h, heads, res=res)
        x, sf = ffn_fwd(t, p, x, b * s, h, f, res=res, act=act)
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
        x, emb_ln = embedding_ln_dropout(t, "s2.", pos, T, h, residual_dtype(a))
    x, states = encoder_layers_fwd(t, "s2.", x, b, s, h, heads, f, L, res=residual_dtype(a))
    pool = t.vector("s2.pool", "reduce_sum", [x], rows=b * h, cols=s)
    t.param_count = params
    return {"T": T, "states": states, "emb_ln": emb_ln, "pool": pool}


def residual_dtype(a):
    """The residual stream's type: f32 where LayerNorm runs in f32 (--f32-layernorm) or the
    whole model does (--activations f32)."""
    f32 = getattr(a, "f32_layernorm", False) or getattr(a, "activations", BF16) == F32
    return F32 if f32 else BF16


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
    t.act = getattr(a, "activations", BF16)
    if t.act != BF16:
        t.metadata["activations"] = t.act
    t.training = not fwd_only
    t.dropout_mask = getattr(a, "dropout_mask", "saved")
    t.softmax_f32 = getattr(a, "f32_softmax", False)
    if t.softmax_f32:
        t.metadata["softmax"] = F32
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
        x, emb_ln = embedding_ln_dropout(t, "", typ, T, h, res)
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
    probs = t.vector("mlm.softmax", "softmax", [logits], rows=P, cols=vocab,
                     out_dtype=F32)
    dlogits = t.vector("mlm.dlogits", "sub", [probs], elements=P * vocab, dtype=F32,
                       fused=True, out_dtype=t.act)
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
        dln = embedding_ln_dropout_bwd(t, "", emb_ln, dx, T, h)
        demb = t.vector("emb.tokens_grad", "scatter_add", [dln], rows=T, cols=h,
                        table_rows=vocab)
        if second:
            dln2 = embedding_ln_dropout_bwd(t, "s2.", second["emb_ln"], dx2, second["T"], h)
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
