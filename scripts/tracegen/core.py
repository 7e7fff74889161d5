"""The trace builder and the layers every model shares: dense, LayerNorm, the gradient
all-reduce and optimizer, global-norm clipping (scripts/gen_trace.py writes the models)."""
import json
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
        # The activations' type: bf16 (mixed precision), or f32 for a model that runs without
        # a mixed-precision policy. An f32 matmul runs at the bf16 rate (a TPU multiplies f32
        # operands as bf16 with f32 accumulation by default) but moves 4 bytes per element.
        self.act = BF16
        self.training = True
        self.dropout_mask = "saved"
        # Attention probabilities (softmax, its dropout and their gradients) in f32 in a bf16
        # model (gen_trace.py bert --f32-softmax).
        self.softmax_f32 = False
        # Bytes per core of the weights and optimizer state resident in HBM (the trace's
        # parameter_bytes); None: the trace does not say.
        self.parameter_bytes = None
        # The global batch of one step (samples over all cores; the trace's samples_per_step):
        # throughput = samples_per_step / step time. None: the trace does not say.
        self.samples_per_step = None
        # The type of the gradient all-reduces (grad_sync_and_update): f32, or bf16 where a
        # submission all-reduces bf16 gradients (t2t's bfloat16_grads_all_reduce).
        self.grad_reduce_dtype = F32
        # Trace loops (docs/trace-format.md, "Loops"): an XLA while written once with its trip
        # count; a trace with loops is written as version 2, one without as version 1.
        self.loops = []

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

    def matmul(self, id_, m, k, n, deps=(), batch=1, dtype=None, **kw):
        if batch != 1:
            kw["batch"] = batch
        return self.op(id_, "matmul", deps, m=m, k=k, n=n, dtype=dtype or self.act, **kw)

    def vector(self, id_, op, deps=(), rows=None, cols=None, elements=None, dtype=None,
               fused=False, **kw):
        shape = {"elements": elements} if elements is not None else {"rows": rows, "cols": cols}
        return self.op(id_, "vector", deps, fused, op=op, **shape, dtype=dtype or self.act,
                       **kw)

    def loop(self, id_, trips, body, comment=None):
        """Runs the ops `body` (ids, in program order) `trips` times: an XLA while loop of a
        known trip count. A body op reads the previous trip's result of a body op through its
        `carried` field."""
        assert id_ not in self.ids and body and trips >= 1, (id_, trips)
        self.ids.add(id_)
        lp = {"id": id_, "trips": trips, "body": list(body)}
        if comment:
            lp["comment"] = comment
        self.loops.append(lp)
        return id_

    def write(self, path):
        doc = {"format": "tpusim.trace", "version": 2 if self.loops else 1, "name": self.name,
               "cores": self.cores}
        if self.parameter_bytes is not None:
            doc["parameter_bytes"] = self.parameter_bytes
        if self.samples_per_step is not None:
            doc["samples_per_step"] = self.samples_per_step
        if self.description:
            doc["description"] = self.description
        if self.metadata:
            doc["metadata"] = self.metadata
        head = json.dumps(doc)[:-1]
        lines = [json.dumps(o, separators=(", ", ": ")) for o in self.ops]
        text = head + ', "ops": [\n  ' + ",\n  ".join(lines) + "\n]"
        if self.loops:
            text += ', "loops": [\n  ' + ",\n  ".join(
                json.dumps(lp, separators=(", ", ": ")) for lp in self.loops) + "\n]"
        text += "}\n"
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


def layernorm_fwd(t, name, x, rows, cols, deps=(), fused=False, res=None):
    """res: the type of the residual stream around it (its input, output and gradients);
    default: the activations' type. Unfused by default: its row reductions end XLA's fusion
    of the producer, so it reads its input from HBM (docs/program.md, "Row normalisations")."""
    res = res or t.act
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
        rd = t.grad_reduce_dtype
        deps = [t.op(f"{name}.allreduce", "all_reduce", grads, bytes=params * SIZE[rd],
                     dtype=rd)]
    if optimizer == "lars":
        return lars_update(t, name, deps, params)
    u = t.vector(f"{name}.{optimizer}", optimizer, deps, elements=params, dtype=F32)
    if optimizer == "lamb":
        return t.vector(f"{name}.lamb_step", "sgd", [u], elements=params, dtype=F32)
    return u


SUM_ROW = 1024  # a tensor summed whole is read as rows of 1024 f32 (reduce_sum runs along a row)


def tensor_sum(t, id_, deps, params, **kw):
    """A reduction over a whole f32 tensor of `params` values (a norm, a sum of squares).
    Returns (op id, the partial sums it leaves: one per row)."""
    rows = -(-params // SUM_ROW)
    return t.vector(id_, "reduce_sum", deps, rows=rows, cols=SUM_ROW, dtype=F32, **kw), rows


def lars_update(t, name, grad, params):
    """LARS (tf.contrib.opt.LARSOptimizer, the MLPerf v0.6 TPU ResNet-50's --enable_lars):
    the norms of the weights and of the (all-reduced) gradient, each a reduction over the
    tensor, set the layer's learning rate; then the momentum update reads p, g and m and
    writes p and m. `grad`: the ops the gradient comes from (the all-reduce)."""
    w_norm, _ = tensor_sum(t, f"{name}.w_norm", [], params, operands=[None])
    g_norm, _ = tensor_sum(t, f"{name}.g_norm", grad, params)
    return t.vector(f"{name}.sgd_momentum", "sgd_momentum", grad + [w_norm, g_norm],
                    elements=params, dtype=F32, operands=[None, grad[0]])


class GlobalNormClip:
    """tf.clip_by_global_norm(grads, 1.0) on each replica's gradients before they are
    all-reduced, as the MLPerf v0.7 BERT submission's `_compiled_local_step` does
    (tf2_common/modeling/model_training_utils.py): a sum of squares of each layer's f32
    gradients once they exist, the global norm once all of them are done, then every
    gradient scaled by clip / max(norm, clip) in its own kernel before its all-reduce and
    update. No all-reduce can start before the whole backward pass has ended."""

    def __init__(self, t):
        self.t, self.partials, self.rows, self.pending = t, [], 0, []

    def add(self, name, grads, params, optimizer):
        # operands [None]: the layer's gradients, read as one array of `params` values.
        partial, rows = tensor_sum(self.t, f"{name}.grad_sq", grads, params, operands=[None])
        self.partials.append(partial)
        self.rows += rows
        self.pending.append((name, grads, params, optimizer))

    def finish(self):
        t = self.t
        norm = t.vector("grad_global_norm", "reduce_sum", self.partials, rows=1,
                        cols=self.rows, dtype=F32, operands=[None])
        for name, grads, params, optimizer in self.pending:
            clipped = t.vector(f"{name}.clip", "scale", grads + [norm], elements=params,
                               dtype=F32, operands=[None])
            grad_sync_and_update(t, name, [clipped], params, optimizer)


# An evaluation (validation) step: the forward pass and the loss, no backward, all-reduce or
# optimizer (`--forward-only`; tpusim train's eval passes, docs/train.md).
FWD_ONLY = "forward only (evaluation step)"
