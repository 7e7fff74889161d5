#!/usr/bin/env bash
# Train runs as sweep workloads (docs/sweep.md, "Train workloads"): a 4-point sweep of a tiny
# MLP step under two run descriptions x two HBM rates; every point must be a `tpusim train`
# whose figures are the row's columns, equal to a direct `tpusim train --json` of that point.
# Usage: sweep_train.sh path/to/tpusim (run from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
d=tests/data
fail() {
    echo "FAIL $*"
    fails=$((fails + 1))
}
q() {
    python3 - "$1" "$2" <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], timeout=10)
for row in con.execute(sys.argv[2]):
    print("|".join("" if v is None else str(v) for v in row))
PY
}

"$bin" sweep $d/sweep/train.json --db "$tmp/t.sqlite" -j 2 --quiet > "$tmp/out" 2>&1 ||
    fail "train sweep: exit $? $(cat "$tmp/out")"
[ "$(q "$tmp/t.sqlite" "select count(*), count(distinct point) from points where status = 'ok'")" = "4|4" ] ||
    fail "train sweep: want 4 ok rows: $(q "$tmp/t.sqlite" "select point, status, error from points")"

# Each row against the direct run: the same command the worker ran, its report's figures.
v3=$(realpath configs/tpu_v3_8.json)
for point in 1 2; do  # one point of each run description and HBM rate
    run=$(q "$tmp/t.sqlite" "select json_extract(params_json, '\$.run') from points where point = $point")
    rate=$(q "$tmp/t.sqlite" "select json_extract(coords_json, '\$.\"hbm.data_rate_mtps\"') from points where point = $point")
    "$bin" train --config "$v3" --set "hbm.data_rate_mtps=$rate" --trace $d/train/mlp_step.json \
        --run "$d/train/$run.run.json" --json -q > "$tmp/direct$point.json" ||
        { fail "point $point: the direct run failed"; continue; }
    row=$(q "$tmp/t.sqlite" "select step_seconds, epoch_seconds, total_seconds, samples_per_second,
        mxu_busy, time_split_infeed_wait, verdict, steps from points where point = $point")
    want=$(python3 - "$tmp/direct$point.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("|".join(str(v) for v in (r["step_seconds"], r["epoch_seconds"], r["total_seconds"],
      r["samples_per_second"], r["mxu_busy"], r["time_split"]["infeed_wait"], r["verdict"],
      r["steps"])))
PY
)
    [ "$row" = "$want" ] || fail "point $point ($run, $rate MT/s): row '$row', direct run '$want'"
done
# The figures respond to the axes: the input-bound run waits for input, the compute-bound
# one does not, and halving the HBM rate lengthens the device step.
[ "$(q "$tmp/t.sqlite" "select count(*) from points where json_extract(params_json, '\$.run') =
    'input_bound' and time_split_infeed_wait > 0")" = 2 ] || fail "input-bound points should wait for input"
[ "$(q "$tmp/t.sqlite" "select count(*) from points a join points b on a.point + 1 = b.point
    where a.point in (0, 2) and b.step_seconds > a.step_seconds")" = 2 ] ||
    fail "half the HBM rate should lengthen the device step"
[ "$(q "$tmp/t.sqlite" "select workload_source from points where point = 1")" = \
  "../train/mlp_step.json --run ../train/compute_bound.run.json" ] ||
    fail "workload_source: $(q "$tmp/t.sqlite" "select workload_source from points where point = 1")"

[ "$fails" -eq 0 ] && echo "sweep of train runs: all passed" || { echo "$fails failed"; exit 1; }
