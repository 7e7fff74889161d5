#!/usr/bin/env bash
# Spatial partitioning in the MLPerf SSD traces (--input_partition_dims=1,4,1,1 on v3-1024 and
# v3-2048; scripts/tracegen/convnet.py SpatialPartition, issue #37), checked in the traces
# against the submissions' flags, the network's shapes and the slice's topology:
# - samples_per_step is the global batch; num_shards replicas of 4 cores; every convolution
#   runs on the replica's images (global batch / num_shards) and on a quarter of the rows of
#   its output (ceil(H / 4), H from the unpartitioned v3-512 trace of the same network);
# - the halo collective-permutes of every convolution and of the max pool, forward (the input
#   rows its output slice reads from the neighbours) and backward (the output gradient's rows
#   that the input slice's gradient reads): their number and bytes from the rows each slice
#   reads, enumerated window by window from the layer's shape, stride and TF "same"/"valid"
#   padding; their pairs: each core to the core `distance` slices away in its own replica,
#   every such core once, the replica being two chips stacked along y (computation_shape
#   [1, 2, 2]), so that distance-1 pairs are one chip or one ICI hop apart;
# - the batch-norm statistics summed over the replica's 4 cores, then over the
#   distributed_group_size cores of the same slice index in a dbn_tile_row x dbn_tile_col tile
#   of replicas, forward and backward;
# - the hard negative mining on each replica's core 0 only, the losses gathered there and the
#   weights sent back to each other core of the replica;
# - a what-if of the v3-1024 configuration on a v3-32 (8 replicas) runs.
# Mask R-CNN v0.6 on v3-128 and v3-256 (--input_partition_dims=1,4,1, frozen batch norm):
# - samples_per_step is the global batch (128), num_shards replicas of 4 cores, each with
#   128 / num_shards images;
# - every convolution of the backbone, FPN and RPN: the replica's images, a quarter of its
#   output rows, its forward and backward halo permutes enumerated from the layer's shape
#   (from the unpartitioned v3-32 trace) and resnet.py's explicit padding
#   (space_to_depth_fixed_padding: 2 rows before; fixed_padding of a strided 3x3: 1); the
#   FPN's nearest upsampling P5 -> P4 and P6's stride-2 pool enumerated the same way; no
#   batch-norm all-reduce (is_training_bn=False: an affine);
# - the placement core_assignment_utils names: the box head, its RoIAlign gather, the Fast
#   R-CNN loss and the box variables' all-reduce and update on each replica's core 2; the
#   mask targets on core 0, sent to core 1; the mask head, loss and variables on core 1; the
#   levels' stack on cores 1 and 2; the proposals on every core; the levels' gradients sent
#   back from the heads' cores to every other core of the replica;
# - `tpusim trace check` on configs/tpu_v3_128.json and tpu_v3_256.json.
# Usage: mlperf_spatial_partition.sh path/to/tpusim (from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gen="python3 scripts/gen_trace.py"

for c in 512 1024 2048; do
    $gen mlperf ssd --round v0.6 --cores "$c" -o "$tmp/ssd_$c.json" || fatal "gen_trace.py ssd $c"
done

python3 - "$tmp" <<'PY' && passes=$((passes + 1)) || fail "SSD spatial partitioning in the traces"
import json, sys
sys.path.insert(0, "tests/cli")
from spatial_checks import ceil, check_permutes, out_rows, replica_cores, where
tmp = sys.argv[1]
ref = {o["id"]: o for o in json.load(open(f"{tmp}/ssd_512.json"))["ops"]}
P = 4
# ssd_constants.py: FEATURE_SIZES and NUM_DEFAULTS (the anchors per cell of each level)
LEVELS = ((38, 4), (19, 6), (10, 6), (5, 6), (3, 4), (1, 4))


def pad_lo(h, oh, k, st, padding):
    return max((oh - 1) * st + k - h, 0) // 2 if padding == "same" else 0


# ssd_architecture.py pads explicitly where TF's "same" would differ: the space-to-depth stem
# (space_to_depth_fixed_padding, kernel 7, blocks of 2: ((7 - 1) // 2 + 1) // 2 rows before);
# ResNet's strided convolutions (fixed_padding: (k - 1) // 2 before) pad as "same" does on
# their odd inputs (75 rows), and the extra layers and the max pool use "same".
EXPLICIT = {"stem": ((7 - 1) // 2 + 1) // 2}


def fwd_halo(h, k, st, padding, p=None):
    """(low, high) rows: enumerate each slice's output rows and the input rows they read."""
    oh = out_rows(h, k, st, padding)
    s, o = ceil(h, P), ceil(oh, P)
    p = pad_lo(h, oh, k, st, padding) if p is None else p
    lo = hi = 0
    for i in range(P):
        read = [r * st - p + j for r in range(i * o, (i + 1) * o) for j in range(k)]
        if i > 0:
            lo = max(lo, i * s - min(read))
        if i < P - 1:
            hi = max(hi, max(read) + 1 - (i + 1) * s)
    return lo, hi


def bwd_halo(h, k, st, padding, p=None):
    """(low, high) rows of the output gradient whose windows cover each input slice's rows."""
    oh = out_rows(h, k, st, padding)
    s, o = ceil(h, P), ceil(oh, P)
    p = pad_lo(h, oh, k, st, padding) if p is None else p
    lo = hi = 0
    for i in range(P):
        rows = set(range(i * s, (i + 1) * s))
        outs = [r for r in range(-k - 1, P * o + k + 1)
                if any(r * st - p + j in rows for j in range(k))]
        if i > 0:
            lo = max(lo, i * o - min(outs))
        if i < P - 1:
            hi = max(hi, max(outs) + 1 - (i + 1) * o)
    return lo, hi


for cores in (1024, 2048):
    t = json.load(open(f"{tmp}/ssd_{cores}.json"))
    meta, ops = t["metadata"], {o["id"]: o for o in t["ops"]}
    order = {o["id"]: i for i, o in enumerate(t["ops"])}
    assert meta["input_partition_dims"] == [1, P, 1, 1], meta
    assert t["samples_per_step"] == meta["global_batch"] == 2048, t["samples_per_step"]
    replicas = meta["num_shards"]
    assert replicas * P == cores, (replicas, cores)
    b = t["samples_per_step"] // replicas  # the replica's images
    assert (meta["batch_per_replica"], meta["cores_per_replica"]) == (b, P), meta
    # The topology: spatial_checks.where (a replica is two chips stacked along y).
    X = meta["tpu_slice_col"]
    reps = replica_cores(cores, X, P)
    assert len(reps) == replicas

    def permutes_of(prefix, rows, n, w, ch, layer):
        return check_permutes(ops, prefix, rows, n, w, ch, layer, slices=P, images=b,
                              replicas=replicas, chips_x=X, one_hop=True)

    convs = [i[:-5] for i in ops if i.endswith(".conv") and ops[i]["kind"] == "conv2d"]
    assert convs and len(convs) == len([i for i in ref if i.endswith(".conv")]), len(convs)
    permutes = set()
    for L in convs:
        o, g = ops[L + ".conv"], ref[L + ".conv"]
        h, w, k, st, padding = g["h"], g["w"], g["kh"], g["stride_h"], g["padding"]
        oh = out_rows(h, k, st, padding)
        assert o["batch"] == b and o["w"] == w and o["stride_h"] == st, L
        assert out_rows(o["h"], k, st, o["padding"]) == ceil(oh, P), (L, o["h"], oh)
        assert out_rows(o["w"], k, st, o["padding"]) == out_rows(w, k, st, padding), L
        fw = permutes_of(L + ".halo", fwd_halo(h, k, st, padding, EXPLICIT.get(L)), h, w,
                            g["c_in"], L)
        assert all(i in o["deps"] for i in fw), L
        if L + ".dx" in ops:
            ow = out_rows(w, k, st, padding)
            bw = permutes_of(L + ".dx_halo", bwd_halo(h, k, st, padding, EXPLICIT.get(L)),
                                oh, ow, g["c_out"], L)
            assert all(i in ops[L + ".dx"]["deps"] for i in bw), L
            permutes |= set(bw)
        # dw reads the input with its forward halo rows
        assert all(i in ops[L + ".dw"]["deps"] for i in fw), L
        permutes |= set(fw)
        # Batch norm: over the replica's cores, then over the group's same-slice cores.
        if L + ".bn" in ops:
            size, tr, tc = (meta["distributed_group_size"], meta["dbn_tile_row"],
                            meta["dbn_tile_col"])
            for ar in (f"{L}.bn_allreduce", f"{L}.bn_grad_allreduce"):
                part, grp = ops[ar + "_partition"], ops[ar]
                for a in (part, grp):
                    assert a["kind"] == "all_reduce" and a["dtype"] == "f32", a["id"]
                    assert a["bytes"] == 2 * g["c_out"] * 4, a["id"]
                assert part["id"] in grp["deps"] and order[part["id"]] < order[ar], ar
                assert sorted(map(sorted, part["replica_groups"])) == \
                    sorted(sorted(v) for v in reps.values()), ar
                seen = []
                for members in grp["replica_groups"]:
                    assert len(members) == size == tr * tc, (ar, len(members))
                    where_ = [where(c, X) for c in members]
                    assert len({sl for _, sl in where_}) == 1, (ar, members)
                    rows = {r for (r, _), _ in where_}
                    cols = {x for (_, x), _ in where_}
                    assert len(rows) == tr and len(cols) == tc, (ar, rows, cols)
                    assert min(rows) % tr == 0 and min(cols) % tc == 0, (ar, rows, cols)
                    seen += members
                assert sorted(seen) == list(range(cores)), ar
    # The max pool (3x3, stride 2, "same") on the stem's output, forward and backward.
    stem = ops["stem.conv"]
    H = out_rows(ref["stem.conv"]["h"], 4, 1, "same")
    W = ref["stem.conv"]["w"]
    mp = permutes_of("stem.maxpool.halo", fwd_halo(H, 3, 2, "same"), H, W, 64, "maxpool")
    assert all(i in ops["stem.maxpool"]["deps"] for i in mp)
    mb = permutes_of("stem.maxpool_grad.halo", bwd_halo(H, 3, 2, "same"), ceil(H, 2),
                        ceil(W, 2), 64, "maxpool_grad")
    permutes |= set(mp) | set(mb)
    # The loss: each core's anchors, the mining on each replica's core 0.
    anchors = sum(s * s * k for s, k in LEVELS)
    core_anchors = sum(b * ceil(s, P) * s * k for s, k in LEVELS)
    assert ops["loss.class_xent"]["rows"] == core_anchors, ops["loss.class_xent"]["rows"]
    g = ops["loss.class_xent_to_core0"]
    assert g["kind"] == "all_gather" and g["bytes"] == core_anchors * 4, g
    core0 = sorted(v[0] for v in reps.values())
    # The mining (topk_mask's counting loops, the mask, the mined sum) on core 0 only, over
    # the replica's b images of all their anchors.
    mining = [i for i in ops if i.startswith("loss.topk") or i in ("loss.neg_masked",
                                                                 "loss.class_mined")]
    assert len(mining) >= 10, mining
    for i in mining:
        m = ops[i]
        assert sorted(m["cores"]) == core0, i
        if m["op"] in ("reduce_sum", "reduce_max"):
            assert (m["rows"], m["cols"]) == (b, anchors), i
        else:
            assert m["elements"] == b * anchors, i
    for j in range(1, P):
        o = ops[f"loss.class_weights_from_core0_{j}"]
        assert o["bytes"] == core_anchors * 4, o["id"]
        assert sorted(o["source_target_pairs"]) == sorted([v[0], v[j]] for v in
                                                          reps.values()), o["id"]
        assert o["id"] in ops["loss.dclass"]["deps"]
        permutes.add(o["id"])
    # No other collective-permute than those.
    assert permutes == {i for i, o in ops.items() if o["kind"] == "collective_permute"}, \
        sorted({i for i, o in ops.items() if o["kind"] == "collective_permute"} - permutes)[:5]
    print(f"ssd v3-{cores}: {replicas} replicas of {b} images, {len(permutes)} permutes ok")
PY

# A what-if of the v3-1024 configuration (replicas of 4 cores with 8 images, batch-norm
# groups of 8 replicas) on a v3-32's 2 x 4 replicas: it runs, every permute in the report.
python3 - "$tmp/whatif.json" <<'PY' || fatal "what-if trace"
import sys
sys.path.insert(0, "scripts")
from tracegen import mlperf
sl = mlperf._ssd_v06(32, 64, 313, True, 8, [1, 4, 1, 1], tiles=(2, 4, 2, 4))
t, _ = mlperf.gen_mlperf_ssd("v0.6", sl, 2)
t.write(sys.argv[1])
PY
"$bin" run --config configs/tpu_v3_32.json --trace "$tmp/whatif.json" --json -q \
    --ops "$tmp/whatif_ops.csv" > "$tmp/whatif_run.json" 2>/dev/null
python3 - "$tmp/whatif.json" "$tmp/whatif_run.json" "$tmp/whatif_ops.csv" <<'PY' &&
import csv, json, sys
t = json.load(open(sys.argv[1]))
r = json.load(open(sys.argv[2]))
assert r["seconds"] > 0, r
rows = {row["id"]: row for row in csv.DictReader(open(sys.argv[3]))}
perm = [o["id"] for o in t["ops"] if o["kind"] == "collective_permute"]
assert perm and all(i in rows and int(rows[i]["ici_busy_cycles"]) > 0 for i in perm), \
    [i for i in perm if i not in rows][:3]
PY
    passes=$((passes + 1)) || fail "what-if run on v3-32"

$gen mlperf maskrcnn --round v0.6 --cores 32 -o "$tmp/mask_32.json" ||
    fatal "gen_trace.py maskrcnn 32"
for c in 128 256; do
    $gen mlperf maskrcnn --round v0.6 --cores "$c" -o "$tmp/mask_$c.json" ||
        fatal "gen_trace.py maskrcnn $c"
    "$bin" trace check --trace "$tmp/mask_$c.json" --config "configs/tpu_v3_$c.json" \
        > /dev/null && passes=$((passes + 1)) || fail "trace check maskrcnn v3-$c"
done
python3 - "$tmp" <<'PY' && passes=$((passes + 1)) || fail "Mask R-CNN spatial partitioning"
import json, sys
sys.path.insert(0, "tests/cli")
from spatial_checks import ceil, check_permutes, out_rows, replica_cores
tmp = sys.argv[1]
ref = {o["id"]: o for o in json.load(open(f"{tmp}/mask_32.json"))["ops"]}
P = 4


def halo(n_in, n_out, reads):
    """(low, high) rows beyond each slice's own that its output rows read (reads(r): the
    input rows of output row r), slices of ceil(n / P) rows, the last padded."""
    s, o = ceil(n_in, P), ceil(n_out, P)
    lo = hi = 0
    for i in range(P):
        read = [x for r in range(i * o, min((i + 1) * o, n_out)) for x in reads(r)
                if 0 <= x < n_in] or [i * s]
        if i > 0:
            lo = max(lo, i * s - min(read))
        if i < P - 1:
            hi = max(hi, max(read) + 1 - (i + 1) * s)
    return lo, hi


def grad_halo(n_in, n_out, reads):
    """(low, high) rows of the output gradient beyond each slice's own whose reads fall in the
    input slice's rows."""
    s, o = ceil(n_in, P), ceil(n_out, P)
    lo = hi = 0
    for i in range(P):
        own = set(range(i * s, min((i + 1) * s, n_in)))
        outs = [r for r in range(n_out) if own & set(reads(r))]
        if i > 0 and outs:
            lo = max(lo, i * o - min(outs))
        if i < P - 1 and outs:
            hi = max(hi, max(outs) + 1 - (i + 1) * o)
    return lo, hi


def window(k, st, p):
    return lambda r: [r * st - p + j for j in range(k)]


for cores in (128, 256):
    t = json.load(open(f"{tmp}/mask_{cores}.json"))
    meta, ops = t["metadata"], {o["id"]: o for o in t["ops"]}
    assert meta["input_partition_dims"] == [1, P, 1], meta
    assert t["samples_per_step"] == meta["global_batch"] == 128, t["samples_per_step"]
    replicas = meta["num_shards"]
    assert replicas * P == cores, (replicas, cores)
    b = 128 // replicas
    assert (meta["batch_per_replica"], meta["cores_per_replica"]) == (b, P), meta
    X = meta["replica_grid"][1]  # the slice's chips_x (configs/tpu_v3_N.json)

    reps = replica_cores(cores, X, P)
    assert len(reps) == replicas
    core_k = {k: sorted(v[k] for v in reps.values()) for k in range(P)}

    def permutes_of(prefix, rows, n, w, ch, layer):
        return check_permutes(ops, prefix, rows, n, w, ch, layer, slices=P, images=b,
                              replicas=replicas, chips_x=X)

    permutes = set()
    convs = [i[:-5] for i in ref if i.endswith(".conv") and not i.startswith("mask.")]
    assert len(convs) > 60, len(convs)
    for L in convs:
        o, g = ops[L + ".conv"], ref[L + ".conv"]
        h, w, k, st, padding = g["h"], g["w"], g["kh"], g["stride_h"], g["padding"]
        oh = out_rows(h, k, st, padding)
        p = 2 if L == "stem" else (k - 1) // 2 if st > 1 else \
            max((oh - 1) * st + k - h, 0) // 2 if padding == "same" else 0
        assert o["batch"] == b and o["w"] == w and o["stride_h"] == st, L
        assert out_rows(o["h"], k, st, o["padding"]) == ceil(oh, P), (L, o["h"], oh)
        fw = permutes_of(L + ".halo", halo(h, oh, window(k, st, p)), h, w, g["c_in"], L)
        assert all(i in o["deps"] for i in fw), L
        permutes |= set(fw)
        if L + ".dx" in ops:
            ow = out_rows(w, k, st, padding)
            bw = permutes_of(L + ".dx_halo", grad_halo(h, oh, window(k, st, p)), oh, ow,
                                g["c_out"], L)
            assert all(i in ops[L + ".dx"]["deps"] for i in bw), L
            permutes |= set(bw)
        if L + ".bn" in ops:  # frozen: the affine, no statistics, nothing summed
            assert ops[L + ".bn"]["op"] == "bias_add", L
    assert not [i for i, o in ops.items() if "bn_allreduce" in i or "bn_stats" in i]
    # The stem's max pool (3x3, stride 2, "same"), forward only (frozen).
    H, W = out_rows(ref["stem.conv"]["h"], 4, 1, "same"), ref["stem.conv"]["w"]
    oh = ceil(H, 2)
    permutes |= set(permutes_of("stem.maxpool.halo", halo(H, oh, window(
        3, 2, max((oh - 1) * 2 + 3 - H, 0) // 2)), H, W, 64, "maxpool"))
    # FPN: P4 = lateral4 + upsample2x(P5') reads P5' rows r // 2; P6 = P5 rows 2 r.
    h4, h5 = ref["fpn.out4.conv"]["h"], ref["fpn.out5.conv"]["h"]
    w4, w5 = ref["fpn.out4.conv"]["w"], ref["fpn.out5.conv"]["w"]
    up = lambda r: [r // 2]
    permutes |= set(permutes_of("fpn.topdown4.halo", halo(h5, h4, up), h5, w5, 256, "up"))
    permutes |= set(permutes_of("fpn.topdown4.up_grad_halo", grad_halo(h5, h4, up), h4, w4,
                                   256, "up_grad"))
    for lvl in (3, 2):  # aligned levels (52 -> 104 -> 208 rows): no halo
        assert halo(ref[f"fpn.out{lvl + 1}.conv"]["h"], ref[f"fpn.out{lvl}.conv"]["h"],
                    up) == (0, 0), lvl
        assert not [i for i in ops if i.startswith(f"fpn.topdown{lvl}.")
                    and "halo" in i], lvl
    h6, w6 = ceil(h5, 2), ceil(w5, 2)
    p6 = lambda r: [2 * r]
    permutes |= set(permutes_of("fpn.p6.halo", halo(h5, h6, p6), h5, w5, 256, "p6"))
    permutes |= set(permutes_of("fpn.p6_grad.halo", grad_halo(h5, h6, p6), h6, w6, 256,
                                   "p6_grad"))

    # Placement (core_assignment_utils: CORE_0, CORE_1, CORE_2 of each replica).
    def cores_of(i):
        return sorted(ops[i].get("cores", range(cores)))

    box = [i for i in ops if i.startswith(("box.", "box_roi.")) and "grad_to_core" not in i]
    mask_t = [i for i in ops if i.startswith("mask.targets") and i != "mask.targets_to_core1"]
    mask = [i for i in ops if i.startswith(("mask.", "mask_roi.")) and i not in mask_t
            and i != "mask.targets_to_core1" and "grad_to_core" not in i]
    assert len(box) > 20 and len(mask) > 30 and len(mask_t) == 4, (len(box), len(mask))
    for ids, k in ((box, 2), (mask, 1), (mask_t, 0)):
        for i in ids:
            assert cores_of(i) == core_k[k], (i, cores_of(i)[:4], k)
    for i in ("box_roi.gather", "box.fc6.mm", "box.loss_select", "box.allreduce",
              "box.sgd_momentum"):
        assert cores_of(i) == core_k[2], i
    for i in ("mask_roi.gather", "mask.conv0.conv", "mask.sigmoid_xent", "mask.allreduce",
              "mask.sgd_momentum"):
        assert cores_of(i) == core_k[1], i
    assert "replica_groups" not in ops["box.allreduce"], "one group: the replicas' core 2"
    for i in ("roi.stack_levels", "roi.stack_padding"):
        assert cores_of(i) == sorted(core_k[1] + core_k[2]), i
    for i in ops:  # the proposals and the RoI sampling: every core
        if i.startswith(("prop", "nms", "roi.")) and not i.startswith("roi.stack"):
            assert "cores" not in ops[i], i
    send = ops["mask.targets_to_core1"]
    assert sorted(send["source_target_pairs"]) == sorted([v[0], v[1]] for v in reps.values())
    assert send["bytes"] == b * 128 * 28 * 28 * 4 and send["id"] in ops["mask.dselect"]["deps"]
    permutes.add(send["id"])
    for head, src in (("box", 2), ("mask", 1)):
        for j in range(P):
            i = f"{head}_roi.grad_to_core{j}"
            if j == src:
                assert i not in ops, i
                continue
            assert sorted(ops[i]["source_target_pairs"]) == sorted([v[src], v[j]]
                                                                  for v in reps.values()), i
            assert i in ops["fpn.out2.roi_grad"]["deps"], i
            permutes.add(i)
    # The levels and the RPN outputs gathered within each replica.
    gathers = [o for o in ops.values() if o["kind"] == "all_gather"]
    assert len(gathers) == 5 + 2 * 5, len(gathers)
    for o in gathers:
        assert sorted(map(sorted, o["replica_groups"])) == sorted(sorted(v) for v in
                                                                  reps.values()), o["id"]
    assert permutes == {i for i, o in ops.items() if o["kind"] == "collective_permute"}, \
        sorted({i for i, o in ops.items() if o["kind"] == "collective_permute"} - permutes)[:5]
    print(f"maskrcnn v3-{cores}: {replicas} replicas of {b} images, {len(permutes)} permutes ok")
PY
finish
