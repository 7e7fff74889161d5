#!/usr/bin/env bash
# SPMD symmetry over replicas of several chips (docs/pods.md, "A block of chips as the unit"):
# a spatially partitioned program, whose replica of 4 cores (two chips stacked along y) runs a
# different stream on each core, simulates one replica's block of chips when every other
# replica runs as it does, and gives the same report as the full run (--no-symmetry) in every
# figure but the wall time: cycles, every op and kernel, every unit, chip, host link and ICI
# link. Cases (kept small, the v3-2048 runs' replicas on a v3-128, as a torus like the v3-2048):
# - SSD v0.6 with the v3-2048 run's replica configuration (4 images per replica of 4 cores,
#   batch-norm groups of the same slice in 2 x 8 tiles of replicas, the hard negative mining on
#   slice 0), as the ctest "cli: mlperf spatial partitioning" builds its what-if;
# - Mask R-CNN v0.6 on v3-128 (the submission's run: the heads on cores 1 and 2 of each replica);
# - the SSD what-if with the replica groups of one batch-norm all-reduce regrouped for two
#   replicas (their chips side by side instead of stacked): no block of chips repeats, the run
#   is full and its reason names the op and the smallest block whose streams repeat;
# - a matmul on two rows of v3-32's chips only: column 0 stands for the others;
# - the SSD what-if on a v3-256, where the block's (8 x 2 chips) batch-norm groups end apart
#   during the run: a note, and the run is simulated again with every core.
# The simulated cores are the block's at the origin: chips (0, 0) and (0, 1), ids 0 and
# chips_x (chip ids are y * chips_x + x), cores 0, 1, 2 chips_x, 2 chips_x + 1.
# Usage: symmetry_replicas.sh path/to/tpusim (run from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

python3 - "$tmp" <<'PY' || fatal "traces"
import json, sys
sys.path.insert(0, "scripts")
from tracegen import mlperf
tmp = sys.argv[1]
# v3-2048: 512 replicas of 4 cores with 2048 / 512 = 4 images, batch-norm groups of 16 replicas
# in 2 x 8 tiles (mlperf.SSD["v0.6"][2048]); here 32 replicas in a 4 x 8 grid.
ref = mlperf.SSD["v0.6"][2048]
sl = mlperf._ssd_v06(128, 128, 313, True, 16, [1, 4, 1, 1], tiles=(4, 8, 2, 8))
assert sl.cores // 4 * 4 == 128
t, _ = mlperf.gen_mlperf_ssd("v0.6", sl, 1)
t.write(f"{tmp}/ssd.json")
# The same replicas on a v3-256 as cut from the pod (8 x 16 chips, a mesh; 64 replicas in an
# 8 x 8 grid, 2 x 8 tiles): the tiles' last batch-norm gradient all-reduces overlap the
# gradient all-reduce over every core, whose rings close over the line back, and end apart.
# (On the v3-256 as a torus the block holds, since collectives cut equal blocks.)
sl = mlperf._ssd_v06(256, 256, 313, True, 16, [1, 4, 1, 1], tiles=(8, 8, 2, 8))
t, _ = mlperf.gen_mlperf_ssd("v0.6", sl, 1)
t.write(f"{tmp}/ssd256.json")
# Two replicas side by side (chips (6, 6), (6, 7) and (7, 6), (7, 7) of the 8 x 8 torus)
# regrouped by rows for one batch-norm all-reduce over the replica.
d = json.load(open(f"{tmp}/ssd.json"))
nx, per = 8, 2
core = lambda x, y, k: (y * nx + x) * per + k
a = [core(6, 6, 0), core(6, 6, 1), core(6, 7, 0), core(6, 7, 1)]
b = [core(7, 6, 0), core(7, 6, 1), core(7, 7, 0), core(7, 7, 1)]
op = next(o for o in d["ops"] if o["id"] == "stem.bn_allreduce_partition")
assert a in op["replica_groups"] and b in op["replica_groups"], op["replica_groups"][:4]
groups = [g for g in op["replica_groups"] if g not in (a, b)]
op["replica_groups"] = groups + [a[:2] + b[:2], a[2:] + b[2:]]
json.dump(d, open(f"{tmp}/regrouped.json", "w"))
PY
# Under the sanitizers (about 10x slower) without the two longest cases, Mask R-CNN and v3-256.
long=yes
[[ ${TPUSIM_SANITIZED:-} == 1 ]] && long=no
[[ $long == yes ]] && { python3 scripts/gen_trace.py mlperf maskrcnn --round v0.6 --cores 128 \
    -o "$tmp/mask.json" || fatal "gen_trace.py mlperf maskrcnn --cores 128"; }

# NAME TRACE WANT [BOARD]: "block" (the replica's block simulated), "column" (column 0 of the
# board) or a fragment of the full run's reason; on v3-BOARD (default 128), with the config
# overrides in the array `sets` (default none).
sets=()
# The v3-128 as a pod of its own, a torus like the v3-2048 whose replicas the SSD what-if has
# (as cut from the v3 pod the v3-128 is a mesh, docs/pods.md "Wrap-around").
torus=(--set board.pod_chips_x=0 --set board.pod_chips_y=0)
compare() {
    local name=$1 trace=$2 want=$3 board=${4:-128}
    for mode in symmetric full; do
        local extra=("${sets[@]}")
        [[ $mode == full ]] && extra+=(--no-symmetry)
        timeout "$hang" "$bin" run --config "configs/tpu_v3_$board.json" --trace "$trace" \
            "${extra[@]}" --quiet --json > "$tmp/$name.$mode.json" 2> "$tmp/$name.$mode.err" ||
            { fail "$name $mode: exit $?: $(tail -2 "$tmp/$name.$mode.err")"; return; }
    done
    python3 - "$tmp" "$name" "$want" "$board" <<'PY' && passes=$((passes + 1)) || fail "$name"
import json, sys
sys.path.insert(0, "tests/cli")
from report_diff import first_difference, strip
d, name, want, board = sys.argv[1:5]
sym, full = (json.load(open(f"{d}/{name}.{m}.json")) for m in ("symmetric", "full"))
err = open(f"{d}/{name}.symmetric.err").read()
cfg = json.load(open(f"configs/tpu_v3_{board}.json"))["board"]
nx, ny = cfg["chips_x"], cfg["chips_y"]
per = sym["cores"] // sym["chips"]
s = sym["symmetry"]
if want == "rerun":
    ok = not s["used"] and s["reason"] == "--no-symmetry" and \
        err.count("note: SPMD symmetry: the collective of op") == 1 and \
        "its replica groups do not run alike; simulating every core" in err
elif want in ("block", "column"):
    # The replica: chips (0, 0) and (0, 1); column 0: chips (0, y) for every y.
    rows = 2 if want == "block" else ny
    cores = [y * nx * per + k for y in range(rows) for k in range(per)]
    ok = s["used"] and s["unit_chips"] == [1, rows] and s["simulated_core_ids"] == cores and \
        s["simulated_cores"] == len(cores) and "note: SPMD" not in err
else:
    ok = not s["used"] and want in s["reason"] and s["simulated_cores"] == sym["cores"] and \
        err.count("info: SPMD symmetry not used") == 1
if not ok:
    print(f"FAIL {name}: expected {want}, got {s}; stderr: {err[-400:]}"); sys.exit(1)
if full["symmetry"]["used"] or full["symmetry"]["reason"] != "--no-symmetry":
    print(f"FAIL {name}: the --no-symmetry run says {full['symmetry']}"); sys.exit(1)
if full["ici"]["bytes"] <= 0:
    print(f"FAIL {name}: the full run has no ICI traffic"); sys.exit(1)
r = first_difference(strip(sym, "symmetry"), strip(full, "symmetry"), ("default", "full"))
if r:
    print(f"FAIL {name}: the report differs from the full run's at {r}"); sys.exit(1)
print(f"ok {name} ({want}): {full['cycles']} cycles, {full['ici']['bytes']} ICI bytes, "
      f"the same report as the full run's; {s['simulated_cores']} cores simulated")
PY
}

sets=("${torus[@]}")
compare ssd "$tmp/ssd.json" block
# The summary names the block and its cores.
"$bin" run --config configs/tpu_v3_128.json "${torus[@]}" --trace "$tmp/ssd.json" 2>/dev/null |
    grep -q "the unit: a block of 1 x 2 chips, cores 0, 1, 16, 17" &&
    passes=$((passes + 1)) || fail "the summary does not name the block and its cores"
sets=()
# Mask R-CNN on the v3-128 as shipped, a mesh: the block stands for the others there too.
[[ $long == yes ]] && compare mask "$tmp/mask.json" block
# A matmul on the first 16 of v3-32's cores, two rows of its 4 x 4 chips: every column runs
# as column 0.
python3 - "$tmp/rows.json" <<'PY'
import json, sys
ops = [{"id": "mm", "kind": "matmul", "m": 256, "k": 256, "n": 256, "dtype": "bf16"},
       {"id": "mm2", "kind": "matmul", "m": 256, "k": 256, "n": 256, "dtype": "bf16",
        "deps": ["mm"], "cores": list(range(16))},
       {"id": "ar", "kind": "all_reduce", "bytes": 65536, "dtype": "f32", "deps": ["mm2"]}]
json.dump({"format": "tpusim.trace", "version": 1, "name": "rows", "cores": 32, "ops": ops},
          open(sys.argv[1], "w"))
PY
compare rows "$tmp/rows.json" column 32
# Found during the run: the groups of one batch-norm all-reduce end apart, and the run is
# simulated again with every core (its report then equals the full run's).
[[ $long == yes ]] && compare ssd256 "$tmp/ssd256.json" rerun 256
compare regrouped "$tmp/regrouped.json" \
    'with a block of 1 x 2 chips as the unit: op "stem.bn_allreduce_partition": the replica group of core'
finish
