"""LSTM cells (forward and backward of one step) and the Keras IMDB LSTM of seed 004."""
from .core import BF16, F32, FWD_ONLY, SIZE, Trace, dense_bwd, dense_fwd, grad_sync_and_update


# ---------------------------------------------------------------------------------------------
# LSTM (Keras IMDB example: Embedding(10000, 128) -> LSTM(32) -> Dense(1, sigmoid)), unrolled
# per timestep: one recurrent matmul and the gate arithmetic per step.



def lstm_cell_fwd(t, p, b, u, xp, h, c):
    """One LSTM step of `b` rows and `u` units: the recurrent matmul h K (none at the first
    step, whose h is zero) added to the input projection xp, then the gate arithmetic.
    Returns (h, c, the state lstm_cell_bwd needs)."""
    g4, g3 = 4 * u, 3 * u
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
    return h_new, c_new, dict(p=p, h_prev=h, c_prev=c, sig=sig, gg=gg, c=c_new, tc=tc)


def lstm_cell_bwd(t, st, b, u, dh, dc):
    """The gate arithmetic's gradient of one step (dh, dc: the gradients of its h and c;
    dc None at the last step). Returns (d gates, dh, d c_prev); the caller forms the
    gradient of h_prev (d gates K^T) and of the weights."""
    p, g4, g3 = st["p"], 4 * u, 3 * u
    do = t.vector(f"{p}.do", "mul", [dh, st["tc"]], elements=b * u)
    dtc = t.vector(f"{p}.dtanh_c", "mul", [dh, st["sig"]], elements=b * u)
    dcc = t.vector(f"{p}.dc_in", "tanh_grad", [dtc, st["tc"]], elements=b * u, fused=True)
    if dc:
        dcc = t.vector(f"{p}.dc", "add", [dcc, dc], elements=b * u, fused=True)
    di = t.vector(f"{p}.di", "mul", [dcc, st["gg"]], elements=b * u)
    dg = t.vector(f"{p}.dg", "mul", [dcc, st["sig"]], elements=b * u)
    dsig_in = [di, do]
    dc_prev = None
    if st["c_prev"]:
        df = t.vector(f"{p}.df", "mul", [dcc, st["c_prev"]], elements=b * u)
        dc_prev = t.vector(f"{p}.dc_prev", "mul", [dcc, st["sig"]], elements=b * u)
        dsig_in.append(df)
    dsig = t.vector(f"{p}.dsigmoid", "sigmoid_grad", [*dsig_in, st["sig"]], elements=b * g3)
    dgt = t.vector(f"{p}.dtanh_g", "tanh_grad", [dg, st["gg"]], elements=b * u)
    dgates = t.op(f"{p}.dgates", "copy", [dsig, dgt], bytes=b * g4 * SIZE[BF16])
    return dgates, dh, dc_prev



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
    g4 = 4 * u
    e = t.vector("embed", "gather", rows=b * seq, cols=emb, table_rows=vocab)
    xp, s_xp = dense_fwd(t, "x_proj", e, b * seq, emb, g4)
    h = c = None
    steps = []
    for i in range(seq):
        h_new, c_new, st = lstm_cell_fwd(t, f"t{i}", b, u, xp, h, c)
        steps.append(st)
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
        dgates, dh, dc = lstm_cell_bwd(t, st, b, u, dh, dc)
        dgates_last = dgates
        if st["h_prev"]:
            dh = t.matmul(f"{st['p']}.dh_prev", b, g4, u, deps=[dgates], transpose_rhs=True)
            du = t.matmul(f"{st['p']}.du", u, b, g4, deps=[st["h_prev"], dgates],
                          transpose_lhs=True, out_dtype=F32)
            if du_acc:
                du = t.vector(f"{st['p']}.du_acc", "add", [du, du_acc], elements=u * g4,
                              dtype=F32, fused=True)
            du_acc = du
    # The input projection's gradient for every step at once (all dgates done by now).
    de, g_xp = dense_bwd(t, s_xp, dgates_last)
    demb = t.vector("embed.grad", "scatter_add", [de], rows=b * seq, cols=emb, table_rows=vocab)
    grad_sync_and_update(t, "out", g_out, u + 1)
    grad_sync_and_update(t, "lstm", g_xp + [du_acc], emb * g4 + u * g4 + g4)
    grad_sync_and_update(t, "embed", [demb], vocab * emb)
    return t
