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
# Usage: mlperf_spatial_partition.sh path/to/tpusim (from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gen="python3 scripts/gen_trace.py"

for c in 512 1024 2048; do
    $gen mlperf ssd --round v0.6 --cores "$c" -o "$tmp/ssd_$c.json" || fatal "gen_trace.py ssd $c"
done

python3 - "$tmp" <<'PY' && passes=$((passes + 1)) || fail "SSD spatial partitioning in the traces"
import json, sys
tmp = sys.argv[1]
ref = {o["id"]: o for o in json.load(open(f"{tmp}/ssd_512.json"))["ops"]}
P = 4
# ssd_constants.py: FEATURE_SIZES and NUM_DEFAULTS (the anchors per cell of each level)
LEVELS = ((38, 4), (19, 6), (10, 6), (5, 6), (3, 4), (1, 4))


def ceil(a, b):
    return -(-a // b)


def out_rows(h, k, st, padding):
    return ceil(h, st) if padding == "same" else (h - k) // st + 1


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
    # The topology: a chip is y * X + x (docs/ici.md); a replica is the chips (x, 2r) and
    # (x, 2r + 1), its slices on (y offset, core) in order.
    X = meta["tpu_slice_col"]

    def where(core):
        chip = core // 2
        x, y = chip % X, chip // X
        return (y // 2, x), (y % 2) * 2 + core % 2

    def hops(a, b_):
        (ya, xa), (yb, xb) = divmod(a // 2, X), divmod(b_ // 2, X)
        return abs(ya - yb) + abs(xa - xb)

    replica_cores = {}
    for c in range(cores):
        rep, sl = where(c)
        replica_cores.setdefault(rep, [None] * P)[sl] = c
    assert len(replica_cores) == replicas

    def check_permutes(prefix, rows, n, w, ch, layer):
        """The permutes prefix_lo{d} / prefix_hi{d}: rows (low, high) of an activation of n
        rows (slices of ceil(n / P)), w columns, ch channels."""
        s = ceil(n, P)
        for side, want in zip(("lo", "hi"), rows):
            got = sorted(i for i in ops if i.startswith(f"{prefix}_{side}"))
            assert len(got) == ceil(want, s), (layer, side, got, want, s)
            total = 0
            for d in range(1, len(got) + 1):
                o = ops[f"{prefix}_{side}{d}"]
                assert o["kind"] == "collective_permute" and o["dtype"] == "bf16", o["id"]
                r, rem = divmod(o["bytes"], b * w * ch * 2)
                assert rem == 0 and 1 <= r <= s, (o["id"], o["bytes"], s)
                total += r
                pairs = o["source_target_pairs"]
                assert len(pairs) == replicas * (P - d), (o["id"], len(pairs))
                for src, dst in pairs:
                    (rs, ss), (rd, sd) = where(src), where(dst)
                    assert rs == rd, (o["id"], src, dst)  # the same replica
                    assert sd - ss == (d if side == "lo" else -d), (o["id"], src, dst)
                    assert d > 1 or hops(src, dst) <= 1, (o["id"], src, dst)
            assert total == want, (layer, side, total, want)
        return [i for i in ops if i.startswith(prefix + "_")]

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
        fw = check_permutes(L + ".halo", fwd_halo(h, k, st, padding, EXPLICIT.get(L)), h, w,
                            g["c_in"], L)
        assert all(i in o["deps"] for i in fw), L
        if L + ".dx" in ops:
            ow = out_rows(w, k, st, padding)
            bw = check_permutes(L + ".dx_halo", bwd_halo(h, k, st, padding, EXPLICIT.get(L)),
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
                    sorted(sorted(v) for v in replica_cores.values()), ar
                seen = []
                for members in grp["replica_groups"]:
                    assert len(members) == size == tr * tc, (ar, len(members))
                    where_ = [where(c) for c in members]
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
    mp = check_permutes("stem.maxpool.halo", fwd_halo(H, 3, 2, "same"), H, W, 64, "maxpool")
    assert all(i in ops["stem.maxpool"]["deps"] for i in mp)
    mb = check_permutes("stem.maxpool_grad.halo", bwd_halo(H, 3, 2, "same"), ceil(H, 2),
                        ceil(W, 2), 64, "maxpool_grad")
    permutes |= set(mp) | set(mb)
    # The loss: each core's anchors, the mining on each replica's core 0.
    anchors = sum(s * s * k for s, k in LEVELS)
    core_anchors = sum(b * ceil(s, P) * s * k for s, k in LEVELS)
    assert ops["loss.class_xent"]["rows"] == core_anchors, ops["loss.class_xent"]["rows"]
    g = ops["loss.class_xent_to_core0"]
    assert g["kind"] == "all_gather" and g["bytes"] == core_anchors * 4, g
    core0 = sorted(v[0] for v in replica_cores.values())
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
                                                          replica_cores.values()), o["id"]
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
finish
