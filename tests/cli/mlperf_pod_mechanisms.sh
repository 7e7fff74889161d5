#!/usr/bin/env bash
# The pod-scale mechanisms of the MLPerf traces (scripts/tracegen/mlperf.py, issue #37),
# checked in the traces against the submissions' flags and the models' shapes:
# - distributed batch norm (distributed_group_size > 1: ResNet-50 v0.6 on v3-2048, SSD v0.6 on
#   v3-32 ... v3-512): every batch-norm layer of the network (ResNet-50: 53, counted from its
#   architecture; SSD's ResNet-34 to its third group: 29) has its statistics all-reduced over
#   the groups, f32, of 2 x C values (ResNet: two all-reduces of C, SSD one of 2C), after the
#   statistics' reduction and before the normalisation, and the same in the backward pass
#   between the gradient's sums and dx; the groups partition the cores into groups of
#   distributed_group_size: consecutive cores, or (SSD with dbn_tile_row/col) the two cores
#   of every chip of a tile of chips of the slice;
# - the gradient all-reduce's type: bf16 where bfloat16_grads_all_reduce is set (Transformer
#   v3-32), f32 elsewhere, over the same parameters;
# - a slice whose flags set neither has no grouped collective and its fused batch norm;
# - the SSD v3-32 step runs, one chip simulated for its groups of one chip, in the full run's
#   cycles;
# - the iterations_per_loop host round trip: scripts/mlperf.py --loop-round-trip-us US adds
#   US / iterations_per_loop (the trace's metadata) to the step, and 0 by default.
# Usage: mlperf_pod_mechanisms.sh path/to/tpusim (from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gen="python3 scripts/gen_trace.py"

for spec in "resnet50 v0.6 2048" "resnet50 v0.6 1024" "ssd v0.6 32" "ssd v0.6 128" \
    "ssd v0.6 256" "ssd v0.6 512" "ssd v0.5 8" "transformer v0.6 32" "transformer v0.6 128" \
    "bert v0.7 32" "gnmt v0.6 32" "maskrcnn v0.6 32"; do
    read -r b r c <<<"$spec"
    $gen mlperf "$b" --round "$r" --cores "$c" -o "$tmp/${b}_${r}_${c}.json" ||
        fatal "gen_trace.py mlperf $spec"
done

python3 - "$tmp" <<'PY' && passes=$((passes + 1)) || fail "distributed batch norm"
import json, sys
tmp = sys.argv[1]


def load(name):
    return json.load(open(f"{tmp}/{name}.json"))


def check_dbn(name, bn_layers, split, grid=None, tile=None):
    t = load(name)
    cores, meta = t["cores"], t["metadata"]
    size = meta["distributed_group_size"]
    ops = {o["id"]: o for o in t["ops"]}
    order = {o["id"]: i for i, o in enumerate(t["ops"])}
    convs = [o for o in t["ops"] if o["id"].endswith(".conv") and
             (o["id"][:-5] + ".bn") in ops]
    assert len(convs) == bn_layers, (name, len(convs), bn_layers)
    grouped = [o for o in t["ops"] if "replica_groups" in o]
    assert len(grouped) == 2 * split * bn_layers, (name, len(grouped))
    # The groups: a partition of the cores into groups of distributed_group_size.
    if tile:
        rows, cols = grid
        tr, tc = tile
        want = []
        for g in range((rows // tr) * (cols // tc)):
            r0, c0 = g // (cols // tc) * tr, g % (cols // tc) * tc
            want.append(sorted(2 * ((r0 + i) * cols + c0 + j) + k
                               for i in range(tr) for j in range(tc) for k in (0, 1)))
    else:
        want = [list(range(g * size, (g + 1) * size)) for g in range(cores // size)]
    for o in grouped:
        assert o["kind"] == "all_reduce" and o["dtype"] == "f32", o["id"]
        got = sorted(sorted(g) for g in o["replica_groups"])
        assert got == sorted(want), (name, o["id"], got[:2], want[:2])
        assert all(len(g) == size for g in o["replica_groups"]), o["id"]
    for conv in convs:
        p, c = conv["id"][:-5], conv["c_out"]
        pix = conv["batch"] * -(-conv["h"] // conv["stride_h"]) * -(-conv["w"] // conv["stride_w"])
        for fwd, (stats, ars, user) in (
                (True, ([f"{p}.bn_stats"], "bn_allreduce", f"{p}.bn")),
                (False, ([f"{p}.bn_grad_sum_dy", f"{p}.bn_grad_sum_dyx"], "bn_grad_allreduce",
                         f"{p}.bn_grad"))):
            ids = [f"{p}.{ars}"] if split == 1 else [f"{p}.{ars}{k}" for k in range(split)]
            assert sum(ops[i]["bytes"] for i in ids) == 2 * c * 4, (p, fwd)
            for i in ids:
                # after the statistics' reductions (over the pixels, per channel, f32) ...
                for s in stats:
                    assert s in ops[i]["deps"] and order[s] < order[i], (i, s)
                    st = ops[s]
                    assert (st["rows"], st["cols"], st.get("out_dtype")) == (c, pix, "f32"), s
                # ... and before the normalisation (or dx) that needs them
                assert i in ops[user]["deps"] and order[i] < order[user], (i, user)
            if fwd:
                assert stats[0] in ops[i]["deps"] and conv["id"] in ops[stats[0]]["deps"]
    assert not any(o.get("op") in ("batchnorm", "batchnorm_grad") for o in t["ops"]), name


# ResNet-50: the stem, 16 bottleneck blocks of 3 convolutions, 4 projections.
check_dbn("resnet50_v0.6_2048", 1 + 3 * (3 + 4 + 6 + 3) + 4, 2)
# SSD: the stem, ResNet-34's basic blocks [3, 4, 6] of 2 convolutions, 2 projections
# (64 -> 128 at stride 2, 128 -> 256).
for cores, grid, tile in ((32, None, None), (128, (8, 8), (2, 2)), (256, (16, 8), (2, 4)),
                          (512, (16, 16), (2, 4))):
    check_dbn(f"ssd_v0.6_{cores}", 1 + 2 * (3 + 4 + 6) + 2, 1, grid, tile)
# Slices whose flags set no distributed batch norm: no grouped collective, fused batch norm.
for name in ("resnet50_v0.6_1024", "ssd_v0.5_8"):
    t = load(name)
    assert t["metadata"].get("distributed_group_size", 1) == 1, name
    assert not any("replica_groups" in o for o in t["ops"]), name
    assert any(o.get("op") == "batchnorm" and o.get("fused") for o in t["ops"]), name
PY

python3 - "$tmp" <<'PY' && passes=$((passes + 1)) || fail "gradient all-reduce precision"
import json, sys
tmp = sys.argv[1]
SIZE = {"bf16": 2, "f32": 4}
params = {}
for name in ("transformer_v0.6_32", "transformer_v0.6_128", "resnet50_v0.6_1024", "bert_v0.7_32",
             "gnmt_v0.6_32", "maskrcnn_v0.6_32", "ssd_v0.6_32"):
    t = json.load(open(f"{tmp}/{name}.json"))
    want = "bf16" if t["metadata"].get("bfloat16_grads_all_reduce") else "f32"
    grads = [o for o in t["ops"] if o["kind"] == "all_reduce" and "replica_groups" not in o]
    assert grads, name
    assert all(o["dtype"] == want for o in grads), (name, want, {o["dtype"] for o in grads})
    params[name] = sum(o["bytes"] for o in grads) // SIZE[want]
# Only the v3-32 Transformer sets the flag (its run_and_time.sh), over the same parameters.
assert json.load(open(f"{tmp}/transformer_v0.6_32.json"))["metadata"]["bfloat16_grads_all_reduce"]
assert params["transformer_v0.6_32"] == params["transformer_v0.6_128"], params
PY

# The SSD v3-32 step's batch-norm groups are the two cores of each chip: translates of one
# another, so SPMD symmetry simulates one chip (docs/pods.md, "Replica groups that are
# translates") and the step takes the cycles of the full run, op by op; its collectives
# include the grouped ones.
"$bin" run --config configs/tpu_v3_32.json --trace "$tmp/ssd_v0.6_32.json" --json -q \
    --ops "$tmp/ssd_ops.csv" > "$tmp/ssd_run.json" 2>/dev/null
"$bin" run --config configs/tpu_v3_32.json --trace "$tmp/ssd_v0.6_32.json" --json -q \
    --no-symmetry > "$tmp/ssd_full.json" 2>/dev/null
python3 - "$tmp/ssd_run.json" "$tmp/ssd_ops.csv" "$tmp/ssd_full.json" <<'PY' && passes=$((passes + 1)) || fail "SSD v3-32 run"
import csv, json, sys
r, full = json.load(open(sys.argv[1])), json.load(open(sys.argv[3]))
assert r["seconds"] > 0 and r["symmetry"]["used"], r["symmetry"]
assert not full["symmetry"]["used"] and full["symmetry"]["simulated_cores"] == 32
assert r["cycles"] == full["cycles"], (r["cycles"], full["cycles"])
assert r["ici"] == full["ici"], (r["ici"], full["ici"])
assert [(o["id"], o["start_cycle"], o["end_cycle"]) for o in r["ops"]] == \
    [(o["id"], o["start_cycle"], o["end_cycle"]) for o in full["ops"]]
rows = list(csv.DictReader(open(sys.argv[2])))
ids = {row.get("id") or row.get("op") for row in rows}
assert "stem.bn_allreduce" in ids and "stem.bn_grad_allreduce" in ids, sorted(ids)[:5]
PY

# The per-loop host round trip: one loop of the v3-32 Transformer's steps (its metadata's
# iterations_per_loop) x 1 ms, so the step grows by 1 ms exactly (the table rounds to 0.01 ms).
ipl=$(python3 -c "import json; print(json.load(open('$tmp/transformer_v0.6_32.json'))['metadata']['iterations_per_loop'])")
step() {
    python3 scripts/mlperf.py --only transformer --tpusim "$bin" "$@" |
        python3 -c 'import sys; print(next(l for l in sys.stdin if l.startswith("| transformer")).split("|")[2].split()[0])'
}
s0=$(step) s1=$(step --loop-round-trip-us $((ipl * 1000)))
if python3 -c "import sys; sys.exit(abs(float('$s1') - float('$s0') - 1.0) > 0.0101)"; then
    passes=$((passes + 1))
else
    fail "loop round trip: ${s0} ms without, ${s1} ms with $((ipl * 1000)) us per loop of $ipl"
fi
finish
