"""Convolutional networks: ResNet-50 and the ResNet-UNet."""
from .core import BF16, F32, FWD_ONLY, SIZE, Trace, dense_bwd, dense_fwd, grad_sync_and_update


# ---------------------------------------------------------------------------------------------
# Convolutional networks (ResNet-50, UNet): conv2d + batchnorm + relu; backward as a conv for
# dx (stride 1) or its implicit GEMM (strided), and the implicit GEMM x^T dy for dw.


def out_dim(x, stride):
    return (x + stride - 1) // stride


class ConvNet:
    def __init__(self, t, b, inference=False, partition=None, frozen_bn=False):
        self.t, self.b = t, b
        # Frozen batch norm in training (Mask R-CNN's is_training_bn=False): the moving
        # statistics' per-channel affine (`bias_add`) forward and a per-channel `scale` of the
        # gradient backward; no batch statistics, so nothing to sum over a partition.
        self.frozen_bn = frozen_bn
        # Spatial partitioning (SpatialPartition): each core holds its slice of the rows of
        # every activation; None: every core holds whole images.
        self.part = partition
        # Inference: batch norm with its frozen statistics, a per-channel affine in the
        # convolution's epilogue (written as its bias_add), instead of training's batch
        # statistics.
        self.inference = inference
        self.tape = []  # (name, state) in forward order
        self.params = {}
        self.size = {}  # activation id -> elements (for gradient sums)
        self.no_grad = set()  # activations that need no gradient (the input)
        # Distributed batch norm (DistributedBatchNorm): the statistics of every batch-norm
        # layer summed over groups of cores between the statistics and the normalisation,
        # and their gradients in the backward pass. None: per-core batch norm (the fused
        # `batchnorm` op).
        self.dbn = None

    def conv(self, name, x, hw, c_in, c_out, k, stride=1, bn=True, relu=True, deps=(),
             group="g", padding="same", pad_before=None):
        """pad_before: the rows of padding before the first row where the model pads
        explicitly (only a spatial partition's halo reads it); None: TF's `padding`."""
        t, b = self.t, self.b
        h, w = hw
        if padding == "same":
            oh, ow = out_dim(h, stride), out_dim(w, stride)
        else:  # "valid"
            oh, ow = (h - k) // stride + 1, (w - k) // stride + 1
        part, halo, ch, loh, lpad = self.part, [], h, oh, padding
        if pad_before is None:
            pad_before = pad_lo(h, oh, k, stride, padding)
        if part:
            # This core's rows: the halo rows its output slice reads from its neighbours,
            # then the convolution over its output slice (part.conv_rows).
            halo = part.exchange(t, f"{name}.halo", x, b, w, c_in,
                                 part.forward_halo(h, oh, k, stride, pad_before), h)
            loh = part.rows(oh)
            ch, lpad = part.conv_rows(loh, k, stride, padding)
        y = t.op(f"{name}.conv", "conv2d", [x, *halo, *deps], batch=b, h=ch, w=w, c_in=c_in,
                 c_out=c_out, kh=k, kw=k, stride_h=stride, stride_w=stride, padding=lpad,
                 dtype=BF16)
        pre = y
        if bn and self.dbn and not self.inference:
            y = self.dbn.forward(t, name, y, b * loh * ow, c_out)
        elif bn:
            assert not part or self.inference or self.frozen_bn, "partitioned batch norm " \
                "needs its statistics summed over the partition: set dbn " \
                "(DistributedBatchNorm with the partition)"
            y = t.vector(f"{name}.bn", "bias_add" if self.inference or self.frozen_bn
                         else "batchnorm", [y],
                         rows=b * loh * ow, cols=c_out, fused=True)
        if relu:
            y = t.vector(f"{name}.relu", "relu", [y], elements=b * loh * ow * c_out, fused=True)
        self.params[group] = self.params.get(group, 0) + k * k * c_in * c_out + (
            2 * c_out if bn else c_out)
        self.tape.append(("conv", name, dict(x=x, pre=pre, out=y, h=h, w=w, oh=loh, ow=ow,
                                             c_in=c_in, c_out=c_out, k=k, stride=stride,
                                             bn=bn, relu=relu, group=group, halo=halo,
                                             gh=h, goh=oh, pad_before=pad_before)))
        return y, (oh, ow)

    def elems(self, hw, c):
        """Elements of one core's activation of (global) height and width hw, c channels."""
        return self.b * (self.part.rows(hw[0]) if self.part else hw[0]) * hw[1] * c

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
        if s["bn"] and self.dbn:
            dy = self.dbn.backward(t, name, dy, s["pre"], pix, s["c_out"])
        elif s["bn"] and self.frozen_bn:
            dy = t.vector(f"{name}.bn_grad", "scale", [dy], elements=pix * s["c_out"],
                          fused=fuse or bool(s["relu"]))
        elif s["bn"]:
            dy = t.vector(f"{name}.bn_grad", "batchnorm_grad", [dy, s["pre"]], rows=pix,
                          cols=s["c_out"], fused=fuse or bool(s["relu"]))
        k, c_in, c_out = s["k"], s["c_in"], s["c_out"]
        dx, dhalo = None, []
        if need_dx and self.part:
            # The input slice's gradient reads the output gradient's rows of the neighbours
            # whose windows reach into the slice.
            part = self.part
            dhalo = part.exchange(t, f"{name}.dx_halo", dy, b, s["ow"], c_out, part.backward_halo(
                s["gh"], s["goh"], k, s["stride"], s["pad_before"]), s["goh"])
        if not need_dx:
            pass
        elif s["stride"] == 1:
            dx = t.op(f"{name}.dx", "conv2d", [dy, *dhalo], batch=b, h=s["oh"], w=s["ow"],
                      c_in=c_out, c_out=c_in, kh=k, kw=k, padding="same", dtype=BF16)
        else:
            # dy dilated by the stride, convolved with the flipped filter: the same FLOPs as
            # the forward conv, written as its implicit GEMM over the output pixels.
            dx = t.matmul(f"{name}.dx", pix, k * k * c_out, c_in, deps=[dy, *dhalo],
                          transpose_rhs=True)
        # dw reads the input with the forward pass's halo rows (the same exchange: XLA's CSE
        # keeps one); a partitioned core's dw is a partial sum, added in the gradient's
        # all-reduce (grad_sync_and_update's all-reduce over every core).
        dw = t.matmul(f"{name}.dw", k * k * c_in, pix, c_out,
                      deps=[s["x"], dy, *s.get("halo", [])], transpose_lhs=True, out_dtype=F32)
        return dx, dw


    def residual(self, p, main, sc, n):
        """relu(main + sc), both fused into main's kernel, with its backward on the tape: the
        ReLU's gradient goes to both branches (not to a shortcut that needs no gradient).
        Returns the output."""
        t = self.t
        add = t.vector(f"{p}.add", "add", [main, sc], elements=n, fused=True)
        out = t.vector(f"{p}.relu", "relu", [add], elements=n, fused=True)
        self.size[out] = n

        def bwd(g):
            dg = t.vector(f"{p}.relu_grad", "relu_grad", [g, out], elements=n,
                          fused=fusable(t, g))
            return [(main, dg), (sc, dg)] if sc not in self.no_grad else [(main, dg)]

        self.tape.append(("add", p, {"out": out, "bwd": bwd}))
        return out

    def basic_block(self, p, x, hw, c, width, stride, grp):
        """ResNet-18/34's basic block: two 3x3 convolutions with BatchNorm (the first strided),
        a 1x1 projection with BatchNorm when the shape changes, the residual add and ReLU.
        Returns (output, its height and width)."""
        sc = x
        if stride != 1 or c != width:
            sc, _ = self.conv(f"{p}.proj", x, hw, c, width, 1, stride=stride, relu=False,
                              group=grp)
        y1, hw1 = self.conv(f"{p}.c1", x, hw, c, width, 3, stride=stride, group=grp)
        n = self.elems(hw1, width)
        self.size[y1] = n
        y2, _ = self.conv(f"{p}.c2", y1, hw1, width, width, 3, relu=False, group=grp)
        self.size[y2] = n
        if sc is not x:
            self.size[sc] = n
        return self.residual(p, y2, sc, n), hw1


class DistributedBatchNorm:
    """Batch norm whose statistics are summed over groups of cores, as the MLPerf v0.6 TPU
    submissions do where `distributed_group_size` > 1 (mlcommons/training_results_v0.6
    @ f312518c): `distributed_batch_norm` in
    Google/benchmarks/resnet/implementations/tpu-v3-2048-resnet/resnet/resnet_model.py and in
    Google/benchmarks/ssd/implementations/tpu-v3-N-ssd/ssd/distributed_batch_norm.py. Forward:
    the input cast to f32, `tf.nn.sufficient_statistics` over N, H, W (the per-channel sum of x
    and of x^2: two f32 vectors of C), `cross_replica_average` (a `cross_replica_sum` over the
    group, divided by its size) of each, then `batch_normalization` with those moments. ResNet
    sums the two vectors in two cross_replica_sums (`split` = 2); SSD concatenates them and
    sums one vector of 2C (`split` = 1). Backward: TF's gradient of a CrossReplicaSum is a
    CrossReplicaSum of the gradient over the same groups (tpu_ops.py), so the gradients of the
    two moment vectors are summed over the group in the same shape(s) before the input's
    gradient can be formed.

    In the trace a batch-norm layer becomes: the statistics (`reduce_sum` over the pixels,
    f32 out; the conv's output is written to HBM and read back, as the statistics must be
    complete before any pixel is normalised), the group all-reduce(s), the normalisation as a
    per-channel affine (`bias_add`, as the frozen batch norm of inference) with the ReLU fused
    into it. Backward: the ReLU's gradient as before, the two gradient sums over the pixels
    (sum of dy, and of dy x: one `reduce_sum` reading dy, one reading x), the group
    all-reduce(s), then dx from dy and x (an elementwise op on both). The FLOPs of the squares
    and of the affine's multiply are not counted (each op is written as the cheapest vector op
    that reads the same arrays)."""

    def __init__(self, groups, split, source, partition=None):
        self.groups, self.split, self.source = groups, split, source
        # Spatial partitioning (SpatialPartition): each core's sums cover its rows only, so
        # they are first summed over the partition (XLA's all-reduce of a reduction over a
        # partitioned dimension), then over the group (the groups name one core of each
        # replica: the cores of the same partition index).
        self.partition = partition

    def _sums(self, t, name, stats, c):
        """The group all-reduces of `stats` (the f32 sums of one layer); returns their ids."""
        per = 2 * c // self.split
        if self.partition:
            stats = [t.op(f"{name}_partition", "all_reduce", stats, bytes=2 * c * SIZE[F32],
                          dtype=F32, replica_groups=self.partition.groups)]
        return [t.op(f"{name}{'' if self.split == 1 else k}", "all_reduce", stats,
                     bytes=per * SIZE[F32], dtype=F32, replica_groups=self.groups)
                for k in range(self.split)]

    def forward(self, t, name, x, pix, c):
        stats = t.vector(f"{name}.bn_stats", "reduce_sum", [x], rows=c, cols=pix, out_dtype=F32)
        ars = self._sums(t, f"{name}.bn_allreduce", [stats], c)
        return t.vector(f"{name}.bn", "bias_add", [x, *ars], rows=pix, cols=c)

    def backward(self, t, name, dy, x, pix, c):
        s_dy = t.vector(f"{name}.bn_grad_sum_dy", "reduce_sum", [dy], rows=c, cols=pix,
                        out_dtype=F32)
        s_dyx = t.vector(f"{name}.bn_grad_sum_dyx", "reduce_sum", [dy, x], rows=c, cols=pix,
                         out_dtype=F32, operands=[x])
        ars = self._sums(t, f"{name}.bn_grad_allreduce", [s_dy, s_dyx], c)
        return t.vector(f"{name}.bn_grad", "mul", [dy, x, *ars], rows=pix, cols=c,
                        operands=[dy, x])


def pad_lo(n_in, n_out, k, stride, padding):
    """The rows of padding before the first row (TF's "same": the total padding split with
    the smaller half first; "valid": none)."""
    if padding != "same":
        return 0
    return max((n_out - 1) * stride + k - n_in, 0) // 2


class SpatialPartition:
    """Spatial partitioning of the activations (TPUEstimator's `input_partition_dims`, as the
    MLPerf v0.6 SSD runs on v3-1024 and v3-2048 set it: --input_partition_dims=1,4,1,1, the
    image's height split over the `parts` cores of a replica). Each core holds rows
    [i s, (i + 1) s) of every activation (s = ceil(H / parts), the last slice padded, as XLA
    pads uneven shards) for every image of the replica's batch, and computes its slice of
    every convolution's output. A windowed op reads rows of its neighbours' slices first (the
    halo), which XLA's partitioner exchanges with collective-permutes (ExchangeHalo in
    spmd_partitioner_util.cc): one per direction and per distance, each carrying the most rows
    any slice needs (its shapes are static), from every core to the core `distance` slices
    below (the low halo) or above (the high halo) in its group, the edge slices padding with
    zeros instead. The halo rows of slice i of a window of k rows, stride st and padding p
    before the first row, for an output of n_out rows (slices of o = ceil(n_out / parts)):
    the slice's window starts at input row i o st - p and ends at ((i + 1) o - 1) st + k - p,
    against the held rows i s .. (i + 1) s; the low halo is the largest shortfall over the
    slices 1 .. parts-1, the high halo over 0 .. parts-2 (forward_halo). The input gradient
    of a convolution reads the output gradient's rows the same way, mirrored
    (backward_halo). Halos longer than a slice come from slices further away (more than one
    distance). `groups`: the cores of each replica in the order of their slices (row 0
    first); every core is in one group."""

    def __init__(self, parts, groups, source):
        assert all(len(g) == parts for g in groups), (parts, groups[0])
        self.parts, self.groups, self.source = parts, groups, source

    def rows(self, n):
        return -(-n // self.parts)

    def forward_halo(self, n_in, n_out, k, stride, pad):
        s, o, P = self.rows(n_in), self.rows(n_out), self.parts
        lo = max([i * s - (i * o * stride - pad) for i in range(1, P)], default=0)
        hi = max([((i + 1) * o - 1) * stride + k - pad - (i + 1) * s for i in range(P - 1)],
                 default=0)
        return max(lo, 0), max(hi, 0)

    def backward_halo(self, n_in, n_out, k, stride, pad):
        """The output gradient's rows (of n_out) that the input slice's gradient reads: the
        outputs whose windows cover rows i s .. (i + 1) s - 1 of the input."""
        s, o, P = self.rows(n_in), self.rows(n_out), self.parts
        lo = max([i * o + (-(i * s - k + 1 + pad) // stride) for i in range(1, P)], default=0)
        hi = max([((i + 1) * s - 1 + pad) // stride - ((i + 1) * o - 1) for i in range(P - 1)],
                 default=0)
        return max(lo, 0), max(hi, 0)

    def read_halo(self, n_in, n_out, reads):
        """forward_halo for any row map: reads(r) -> (first, last) input row that output row r
        reads (nearest upsampling: r // f for both); each slice's real rows, clamped to the
        input."""
        s, o, P = self.rows(n_in), self.rows(n_out), self.parts
        lo = hi = 0
        for i in range(P):
            rows = range(i * o, min((i + 1) * o, n_out))
            if not rows:
                continue
            first = max(min(reads(r)[0] for r in rows), 0)
            last = min(max(reads(r)[1] for r in rows), n_in - 1)
            if i > 0:
                lo = max(lo, i * s - first)
            if i < P - 1:
                hi = max(hi, last + 1 - (i + 1) * s)
        return lo, hi

    def read_grad_halo(self, n_in, n_out, reads):
        """backward_halo for any row map: the output gradient's rows (of n_out) whose reads
        fall in each input slice's rows."""
        s, o, P = self.rows(n_in), self.rows(n_out), self.parts
        lo = hi = 0
        for i in range(P):
            own = range(i * s, min((i + 1) * s, n_in))
            outs = [r for r in range(n_out) if reads(r)[0] <= own[-1] and reads(r)[1] >= own[0]]
            if not own or not outs:
                continue
            if i > 0:
                lo = max(lo, i * o - min(outs))
            if i < P - 1:
                hi = max(hi, max(outs) + 1 - (i + 1) * o)
        return lo, hi

    def conv_rows(self, out_rows, k, stride, padding):
        """The per-core convolution: its input rows and padding for `out_rows` output rows of
        the slice (the halo rows its windows read are the exchanges' results)."""
        if padding == "same":
            return out_rows * stride, "same"
        return (out_rows - 1) * stride + k, "valid"

    def exchange(self, t, name, x, b, w, c, halo, n, dtype="bf16"):
        """The collective-permutes of a halo (low, high rows) of an activation of n rows, w
        columns and c channels, for b images; returns their ids."""
        s, P, ops = self.rows(n), self.parts, []
        for side, rows in zip(("lo", "hi"), halo):
            for d in range(1, -(-rows // s) + 1):
                r = min(s, rows - (d - 1) * s)
                # lo: slice i - d sends its last rows to slice i; hi: slice i + d its first.
                pairs = [[g[i - d], g[i]] if side == "lo" else [g[i], g[i - d]]
                         for g in self.groups for i in range(d, P)]
                ops.append(t.op(f"{name}_{side}{d}", "collective_permute", [x],
                                bytes=b * r * w * c * SIZE[dtype], dtype=dtype,
                                source_target_pairs=pairs))
        return ops


def replica_grid(rows, cols, chips_x):
    """The cores of each replica of a spatially partitioned run on a `rows` x `cols` grid of
    replicas of two chips each: TPUEstimator's device assignment with computation_shape
    [1, 2, 2] for 4 cores per replica (_NUM_CORES_TO_COMPUTATION_SHAPE in the SSD
    submission's train_and_eval_low_level_runner.py): the replica at (row, col) is the chips
    (x = col, y = 2 row) and (col, 2 row + 1), its logical cores in the order (y, core)
    (np.indices order of the computation shape, x having extent 1). Rows are along y, a chip
    is y * chips_x + x and its cores 2 chip, 2 chip + 1 (docs/ici.md). Returns the replicas'
    core lists row by row (the replica's slices in order: slice i on logical core i)."""
    return [[2 * ((2 * r + dy) * chips_x + c) + k for dy in (0, 1) for k in (0, 1)]
            for r in range(rows) for c in range(cols)]


def replica_tile_groups(replicas, rows, cols, tile_rows, tile_cols):
    """SSD's batch-norm groups with spatial partitioning (distributed_batch_norm.py,
    spatial_partitioning_group_assignment): the replicas of each tile_rows x tile_cols tile
    of the rows x cols replica grid (tiles row by row, each in _ring_2d order); a group's
    all-reduce runs among the cores of one partition index of its replicas, so each tile
    gives one group per slice index. `replicas`: replica_grid's core lists."""
    groups = []
    for g in range((rows // tile_rows) * (cols // tile_cols)):
        r0, c0 = g // (cols // tile_cols) * tile_rows, g % (cols // tile_cols) * tile_cols
        members = [replicas[(r0 + r) * cols + c0 + c] for r, c in _ring_2d(tile_rows, tile_cols)]
        groups += [[m[p] for m in members] for p in range(len(members[0]))]
    return groups


def consecutive_groups(cores, size):
    """Groups of `size` consecutive replicas, as resnet_model.py's cross_replica_average builds
    them (replica_ids = g * group_size + i); replica r is tpusim's core r."""
    return [list(range(g * size, (g + 1) * size)) for g in range(cores // size)]


def _ring_2d(m, n):
    """The ring order of an m x n mesh (distributed_batch_norm.py's _ring_2d)."""
    if m == 1:
        return [(0, i) for i in range(n)]
    if n == 1:
        return [(i, 0) for i in range(m)]
    ret = [(0, 0)]
    for i in range(m // 2):
        ret += [(2 * i, j) for j in range(1, n)]
        ret += [(2 * i + 1, j) for j in range(n - 1, 0, -1)]
    ret += [(i, 0) for i in range(m - 1, 0, -1)]
    return ret


def tile_groups(slice_rows, slice_cols, tile_rows, tile_cols):
    """SSD's groups where tpu_slice_row/col and dbn_tile_row/col are set
    (distributed_batch_norm.py, normal_group_assignment): each group the two cores of every
    chip of a tile_rows x tile_cols tile of the slice_rows x slice_cols chip grid, the tiles
    row by row. The submission lists a group in ring order (_ring_2d_tile_id) and translates
    row-major core ids to TF replica ids (the ring order of the whole slice, _ring_2d_id);
    the cores are the same, and here a core is named by its tpusim id: chip (row * slice_cols
    + col), core 2 chip + k (docs/ici.md: chip id y * chips_x + x, rows along y)."""
    groups = []
    for g in range((slice_rows // tile_rows) * (slice_cols // tile_cols)):
        tiles_per_row = slice_cols // tile_cols
        r0, c0 = g // tiles_per_row * tile_rows, g % tiles_per_row * tile_cols
        groups.append([2 * ((r0 + r) * slice_cols + c0 + col) + k
                       for r, col in _ring_2d(tile_rows, tile_cols) for k in (0, 1)])
    return groups


def fusable(t, op_id):
    """True if op_id is a matmul / convolution or an op fused into one: XLA fuses elementwise
    consumers into the convolution's output fusion."""
    return any(o["id"] == op_id and (o["kind"] in ("matmul", "conv2d") or o.get("fused"))
               for o in t.ops)


def tiles_taken(t, op_id):
    """True if a fused op already takes op_id's tiles: a producer hands them to one fused
    consumer (docs/trace-format.md); a second consumer reads the tensor from HBM."""
    return any(o.get("fused") and o.get("deps", [None])[0] == op_id for o in t.ops)


def backward_convnet(net, dy, extra_grad_of=None, dys=None):
    """Walks the tape backwards; skip connections add their gradient where they fork.
    dys: the gradients of several outputs (activation id -> gradient op), instead of dy for
    the last one (a network with several heads)."""
    t = net.t
    grads = {}
    pending = {}  # activation id -> gradient ids still to be summed into it
    dys = dict(dys) if dys else {net.tape[-1][2]["out"]: dy}
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
    """`a.inference` (the MLPerf inference generators): batch norm with frozen statistics,
    the image infed as 8-bit pixels and widened to bf16 on the chip, argmax instead of the
    softmax; forward only."""
    b = a.batch
    inference = getattr(a, "inference", False)
    fwd = a.forward_only or inference
    kind = "inference" if inference else ("eval" if fwd else "training")
    t = Trace(a.name or (f"resnet50_{'inference' if inference else 'eval'}_step" if fwd
                         else "resnet50_train_step"), a.cores,
              f"ResNet-50 v1.5 {kind} step, {a.image}x{a.image} images,"
              f" batch {b} per core x {a.cores} cores: " + (FWD_ONLY if fwd else
              "forward, backward, gradient all-reduce per stage, "
              + ("LARS" if getattr(a, "optimizer", "momentum") == "lars" else "SGD momentum")),
              {"generator": "scripts/gen_trace.py resnet50", "batch_per_core": b,
               "image": a.image, **({"forward_only": True} if fwd else {})})
    net = ConvNet(t, b, inference=inference)
    net.dbn = getattr(a, "dbn", None)
    pixels = b * a.image * a.image * 3
    x = t.op("input", "infeed", bytes=pixels * (SIZE["u8"] if inference else SIZE[BF16]))
    if inference:
        # The packed 8-bit pixels unpacked, transposed to NHWC, cast to bf16 and the mean
        # subtracted: one elementwise kernel over the batch.
        x = t.vector("input.unpack", "convert", [x], elements=pixels, dtype="u8",
                     out_dtype=BF16)
    net.no_grad.add(x)
    net.size[x] = pixels
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
            out = net.residual(p, y3, sc, net.size[y3])
            x, hw, c = out, hw2, 4 * width
    gap = t.vector("head.avgpool", "reduce_sum", [x], rows=b * c, cols=hw[0] * hw[1])
    fc, s_fc = dense_fwd(t, "head.fc", gap, b, c, 1000)
    net.params["head"] = 0
    if inference:
        t.vector("head.argmax", "reduce_max", [fc], rows=b, cols=1000)
        return t
    sm = t.vector("head.softmax", "softmax", [fc], rows=b, cols=1000, out_dtype=F32)
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
        grad_sync_and_update(t, grp, grads.get(grp, []), net.params[grp],
                             "lars" if getattr(a, "optimizer", "momentum") == "lars"
                             else "sgd_momentum")
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
                  out_dtype=F32)
    if fwd:
        return t
    dlog = t.vector("loss.dlogits", "sub", [sm], elements=n, dtype=F32, fused=True,
                    out_dtype=BF16)
    grads = backward_convnet(net, dlog)
    for grp in reversed(list(net.params)):
        grad_sync_and_update(t, grp, grads.get(grp, []) + extra.get(grp, []), net.params[grp])
    return t


def gen_resnet_unet(a):
    """The ResNet-UNet of the seed workloads (seed 001: a UNet whose encoder is ResNet-34):
    a 3x3 stem (stride 1) with BatchNorm and ReLU; ResNet-34's four stages of basic blocks
    (3, 4, 6, 3 blocks of two 3x3 convolutions; 64, 128, 256, 512 channels; stride 2 in the
    first block of stages 2-4, a 1x1 projection with BatchNorm where the shape changes), each
    stage's output kept as a skip; three decoder levels, each a nearest-neighbour 2x upsampling,
    a 3x3 convolution with BatchNorm and ReLU, the skip of the same size added, and two more 3x3
    convolutions with BatchNorm and ReLU; a 1x1 head with two outputs (a mask's logit and a
    depth) and the loss softplus(m) - mask * m plus |d - depth|, in f32. Adam."""
    b, img = a.batch, a.image
    fwd = a.forward_only
    t = Trace(a.name or ("resnet_unet_eval_step" if fwd else "resnet_unet_train_step"), a.cores,
              f"ResNet-34-encoder UNet with additive skips, mask and depth heads, on {img}x{img}"
              f"x{a.in_channels} images, batch {b} per core x {a.cores} cores: "
              + (FWD_ONLY if fwd else "forward, backward, all-reduce, Adam"),
              {"generator": "scripts/gen_trace.py resnet-unet", "batch_per_core": b,
               "image": img, **({"forward_only": True} if fwd else {})})
    net = ConvNet(t, b)
    x = t.op("input", "infeed", bytes=b * img * img * a.in_channels * SIZE[BF16])
    net.no_grad.add(x)
    net.size[x] = b * img * img * a.in_channels
    y, hw = net.conv("stem", x, (img, img), a.in_channels, 64, 3, group="stem")
    net.size[y] = b * hw[0] * hw[1] * 64
    c, skips = 64, []
    for si, (blocks, width) in enumerate(zip([3, 4, 6, 3], [64, 128, 256, 512])):
        for bi in range(blocks):
            stride = 2 if (bi == 0 and si > 0) else 1
            y, hw = net.basic_block(f"e{si}b{bi}", y, hw, c, width, stride, f"enc{si}")
            c = width
        skips.append((y, hw, c))
    for i, (ci, co) in enumerate([(512, 256), (256, 128), (128, 64)]):
        grp = f"dec{i}"
        uhw = (2 * hw[0], 2 * hw[1])
        n_up = b * uhw[0] * uhw[1] * ci
        # Nearest-neighbour resize: each pixel copied to a 2x2 block (XLA: a broadcast and a
        # reshape, written once); its gradient sums each 2x2 block of the incoming gradient.
        up = t.op(f"d{i}.resize", "copy", [y], bytes=n_up * SIZE[BF16])
        net.size[up] = n_up

        def resize_bwd(g, i=i, src=y, n_in=net.size[y]):
            # The 2x2 blocks summed over the (non-minor) window axes: lane-dense adds of the
            # gradient's halves, twice, in one kernel (as the max pool of gen_resnet50).
            h = t.vector(f"d{i}.resize_grad", "add", [g], elements=2 * n_in)
            return [(src, t.vector(f"d{i}.resize_grad2", "add", [h], elements=n_in,
                                   fused=True))]

        net.tape.append(("up", f"d{i}.resize", {"out": up, "bwd": resize_bwd}))
        u, uhw = net.conv(f"d{i}.up", up, uhw, ci, co, 3, group=grp)
        skip, shw, _ = skips[2 - i]
        n = b * uhw[0] * uhw[1] * co
        net.size[u] = n
        add = t.vector(f"d{i}.skip_add", "add", [u, skip], elements=n, fused=True)
        net.size[add] = n
        net.tape.append(("add", f"d{i}.skip_add",
                         {"out": add, "bwd": lambda g, u=u, skip=skip: [(u, g), (skip, g)]}))
        y, hw = net.conv(f"d{i}.c1", add, uhw, co, co, 3, group=grp)
        net.size[y] = n
        y, hw = net.conv(f"d{i}.c2", y, hw, co, co, 3, group=grp)
        net.size[y] = n
        c = co
    out, _ = net.conv("head", y, hw, c, 2, 1, bn=False, relu=False, group="head")
    n = b * hw[0] * hw[1] * 2
    net.size[out] = n
    # The loss in f32 over both heads: softplus of the mask logit (exp, log), the product with
    # the mask, |d - depth|, and the two means.
    e = t.vector("loss.exp", "exp", [out], elements=n // 2, dtype=F32)
    lg = t.vector("loss.softplus", "log", [e], elements=n // 2, dtype=F32, fused=True)
    ab = t.vector("loss.abs", "abs", [out], elements=n // 2, dtype=F32)
    loss = t.vector("loss.mean", "reduce_sum", [lg, ab], rows=b, cols=n // b, dtype=F32)
    if fwd:
        return t
    # d/dm = sigmoid(m) - mask, d/dd = sign(d - depth), written as the head's bf16 gradient.
    dlog = t.vector("loss.dlogits", "sigmoid", [out, loss], elements=n, dtype=F32,
                    out_dtype=BF16)
    grads = backward_convnet(net, dlog)
    for grp in reversed(list(net.params)):
        grad_sync_and_update(t, grp, grads.get(grp, []), net.params[grp])
    return t
