#!/usr/bin/env bash
# tpusim sweep end to end (docs/sweep.md): a small sweep with failing points, its rows checked
# against direct `tpusim run`s; the same spec again on one worker gives the same rows; a 64-point
# sweep whose driver is killed with SIGKILL midway, a second driver on the same database
# refused meanwhile, and --resume ending with 64 rows, each point once; shards merged equal the
# whole. Usage: sweep.sh path/to/tpusim (run from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
driver=""
trap '[ -n "$driver" ] && kill -9 "$driver" 2>/dev/null; rm -rf "$tmp"' EXIT
d=tests/data/sweep
src=$(pwd)

# q DB SQL: one value (or rows, one per line, fields joined by |)
q() {
    python3 - "$1" "$2" <<'EOF'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], timeout=10)
for row in con.execute(sys.argv[2]):
    print("|".join("" if v is None else str(v) for v in row))
EOF
}
# The CSV without its last two columns (wall_seconds, peak_rss_mib: machine-dependent).
stable_csv() { python3 -c 'import csv,sys; [print(",".join(r[:-2])) for r in csv.reader(open(sys.argv[1]))]' "$1"; }

# --- a small sweep: 16 points, 8 of them failing on an MXU size above the limit --------------------------
# Without --keep-going the spec is refused before any point runs (sweep_bad_specs.sh); with it
# the failed points are recorded, the others run, and the exit status is 3.
"$bin" sweep "$d/small.json" --db "$tmp/a.sqlite" -j 2 --quiet --keep-going --csv "$tmp/a.csv" \
    > "$tmp/a.out" 2> "$tmp/a.err"
rc=$?
[ $rc -eq 3 ] && grep -q "^8 of 16 points failed: their error is in the database" "$tmp/a.err" ||
    fail "small sweep: want exit 3 and '8 of 16 points failed', got $rc $(cat "$tmp/a.out" "$tmp/a.err")"
[ "$(q "$tmp/a.sqlite" "select count(*), count(distinct point) from points")" = "16|16" ] ||
    fail "small sweep: want 16 distinct rows"
[ "$(q "$tmp/a.sqlite" "select count(*) from points where status='failed' and error like
    '%/mxu/rows: expected %, got 8192%' and json_extract(coords_json, '\$.\"mxu.rows\"') = 8192")" = 8 ] ||
    fail "small sweep: the 8 points with an 8192 x 8192 MXU should fail with the config's error"
[ "$(q "$tmp/a.sqlite" "select count(*) from points where status='ok' and cycles > 0 and
    json_extract(config_json, '\$.mxu.rows') = json_extract(coords_json, '\$.\"mxu.rows\"')")" = 8 ] ||
    fail "small sweep: 8 ok points whose config has the axis' MXU rows"
# The v2-8 variant extends tpu_v2_8.json (700 MHz) and sets batch 4; scale 0.5 halves the rate.
[ "$(q "$tmp/a.sqlite" "select count(*) from points where status='ok' and
    json_extract(coords_json, '\$.board') = 'v2-8' and clock_mhz = 700 and
    (workload = 'gemm' or json_extract(params_json, '\$.batch') = 4)")" = 4 ] ||
    fail "small sweep: v2-8 variant points should run at 700 MHz with batch 4"
v3rate=$("$bin" config --config configs/tpu_v3_8.json --dump | python3 -c 'import json,sys; print(json.load(sys.stdin)["hbm"]["data_rate_mtps"])')
[ "$(q "$tmp/a.sqlite" "select count(*) from points where json_extract(coords_json, '\$.board') = 'v3-8' and
    json_extract(coords_json, '\$.\"hbm.data_rate_mtps\"') = $v3rate * 0.5")" = 4 ] ||
    fail "small sweep: scale 0.5 should give half the v3 HBM data rate"
# A point's figures are those of the same `tpusim run`: point 1 = gemm, v3-8, 256 x 256, 0.5x.
want=$("$bin" run --config configs/tpu_v3_8.json --set sim.hbm_model=calibrated --set mxu.rows=256 \
    --set mxu.cols=256 --set "hbm.data_rate_mtps=$(python3 -c "print($v3rate * 0.5)")" \
    --trace $d/small_gemm.json --json --quiet | python3 -c 'import json,sys; print(json.load(sys.stdin)["cycles"])')
got=$(q "$tmp/a.sqlite" "select cycles from points where point = 1 and label like 'gemm board=v3-8 %mxu.rows=256%'")
[ -n "$want" ] && [ "$want" = "$got" ] || fail "small sweep: point 1 has $got cycles, tpusim run gives $want"
[ "$(q "$tmp/a.sqlite" "select count(*) from ops where point = 1")" = 1 ] || fail "small sweep: ops row of point 1"
grep -q "16 of 16 points recorded" "$tmp/a.out" || fail "small sweep summary: $(cat "$tmp/a.out")"

if [ -n "${TPUSIM_SWEEP_LIGHT:-}" ]; then
    # The sanitizer build: the driver's code above is what it checks; the rest repeats runs.
    [ $fails -eq 0 ] && echo "sweep checks passed (light)"
    exit $((fails != 0))
fi

# scripts/plot.py draws every kind of plot from this database and a run report, PNG and SVG,
# with units on the axes (one interpreter for all: matplotlib imports slowly).
py=python3
python3 -c 'import matplotlib' 2>/dev/null || py=/usr/bin/python3
"$bin" run --config configs/tpu_v3_8.json --trace traces/attention.json --report "$tmp/r.json" --quiet > /dev/null
(cd "$tmp" && "$py" - "$src/scripts" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import plot
plot.main(["roofline", "r.json", "-o", "roof"])
plot.main(["utilization", "r.json", "-o", "util"])
plot.main(["curves", "a.sqlite", "--x", "hbm.data_rate_mtps", "--y", "seconds", "--series", "board", "--where", "workload = 'gemm'", "-o", "curves"])
plot.main(["bars", "a.sqlite", "--x", "workload", "--y", "1 / seconds", "--series", "board", "--relative-to", "v2-8", "-o", "bars"])
plot.main(["heatmap", "a.sqlite", "--x", "board", "--y", "hbm.data_rate_mtps", "--z", "achieved_bf16_tflops", "--fixed", "workload=gemm", "-o", "heat"])
EOF
) > "$tmp/plot.out" 2>&1 || fail "plot.py: $(tail -3 "$tmp/plot.out")"
for f in roof util curves bars heat; do
    [ -s "$tmp/$f.png" ] && [ -s "$tmp/$f.svg" ] || fail "plot.py wrote no $f.png / $f.svg"
done
grep -q "arithmetic intensity (FLOP per HBM byte)" "$tmp/roof.svg" || fail "roofline: x label with units"
grep -q "seconds (s)" "$tmp/curves.svg" || fail "curves: y label with units"

# Same spec on one worker: the same rows, byte for byte, but for wall time and peak RSS.
# (from another folder, with a relative --db: generators run in the spec's folder)
(cd "$tmp" && "$bin" sweep "$src/$d/small.json" --db b.sqlite -j 1 --quiet --keep-going \
    > /dev/null 2>&1; [ $? -eq 3 ]) || fail "small sweep -j 1"
"$bin" sweep --db "$tmp/b.sqlite" --csv "$tmp/b.csv" || fail "csv export"
cmp -s <(stable_csv "$tmp/a.csv") <(stable_csv "$tmp/b.csv") ||
    fail "small sweep: -j 2 and -j 1 CSVs differ: $(diff <(stable_csv "$tmp/a.csv") <(stable_csv "$tmp/b.csv") | head -4)"
# Running it again without --resume is refused; with --resume there is nothing left to do.
err=$("$bin" sweep "$d/small.json" --db "$tmp/a.sqlite" --quiet --keep-going 2>&1 >/dev/null)
[ $? -eq 2 ] && [[ "$err" == "error: $tmp/a.sqlite: already holds 16 points"*"--resume"* ]] ||
    fail "second run without --resume: $err"
# ... and its exit status is still the points': 3, the failures recorded by the first run.
out=$("$bin" sweep "$d/small.json" --db "$tmp/a.sqlite" --resume --quiet --keep-going 2>&1)
rc=$?
[ $rc -eq 3 ] && grep -q "(0 run now" <<<"$out" ||
    fail "resume of a finished sweep should run nothing and exit 3: $rc $out"

# Shards 0/3, 1/3, 2/3 merged equal the whole sweep.
for i in 0 1 2; do
    "$bin" sweep "$d/small.json" --db "$tmp/s$i.sqlite" --shard $i/3 -j 2 --quiet --keep-going \
        > /dev/null 2>&1
    [ $? -eq 3 ] || fail "shard $i/3: every shard has failed points (exit 3)"
done
"$bin" sweep merge --db "$tmp/m.sqlite" "$tmp/s0.sqlite" "$tmp/s1.sqlite" "$tmp/s2.sqlite" |
    grep -q "sweep small: 16 of 16 points" || fail "merge of three shards"
"$bin" sweep --db "$tmp/m.sqlite" --csv "$tmp/m.csv" || fail "csv export of the merge"
cmp -s <(stable_csv "$tmp/a.csv") <(stable_csv "$tmp/m.csv") || fail "merged shards differ from the whole"

# --- 64 points, driver killed with SIGKILL midway, a second driver refused, --resume --------
db="$tmp/r.sqlite"
"$bin" sweep "$d/resume64.json" --db "$db" -j 2 --quiet > /dev/null 2>&1 &
driver=$!
for _ in $(seq 240); do
    n=$(q "$db" "select count(*) from points" 2>/dev/null || echo 0)
    [ "${n:-0}" -ge 12 ] && break
    sleep 0.25
done
err=$("$bin" sweep "$d/resume64.json" --db "$db" --resume --quiet 2>&1 >/dev/null)
rc=$?
[ $rc -eq 2 ] && [[ "$err" == "error: $db: the database is locked by another tpusim sweep driver"* ]] ||
    fail "second driver on one database: rc=$rc $err"
{
    kill -9 "$driver"
    wait "$driver"
} 2>/dev/null
driver=""
sleep 0.2  # the workers die with the driver (PR_SET_PDEATHSIG)
n=$(q "$db" "select count(*) from points")
[ "$n" -ge 12 ] && [ "$n" -lt 64 ] || fail "kill -9 midway: $n rows recorded before the kill (want 12..63)"
[ "$(q "$db" "pragma integrity_check")" = ok ] || fail "database damaged by kill -9"
"$bin" sweep "$d/resume64.json" --db "$db" -j 2 --resume --quiet > "$tmp/r.out" ||
    fail "resume: exit $? $(cat "$tmp/r.out")"
[ "$(q "$db" "select count(*), count(distinct point), min(point), max(point), sum(status = 'ok') from points")" = "64|64|0|63|64" ] ||
    fail "resume: want 64 ok rows, points 0..63 each once: $(q "$db" "select count(*), count(distinct point), sum(status = 'ok') from points")"
grep -q "64 of 64 points recorded ($((64 - n)) run now" "$tmp/r.out" || fail "resume ran the wrong points: $(cat "$tmp/r.out")"
[ "$(q "$db" "select count(distinct point) from ops")" = 64 ] || fail "resume: ops of every point"

if [ $fails -ne 0 ]; then
    echo "$fails sweep checks failed"
    exit 1
fi
echo "sweep checks passed"
