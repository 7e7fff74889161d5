#!/usr/bin/env bash
# Sweep scaling benchmark (docs/design.md target: 64 points on 2 workers in <= 0.55x the
# 1-worker wall time): scripts/bench_sweep.json, 4 MXU sizes x 4 HBM bandwidths x 4 batch
# sizes over a BERT-base layer, once with -j 1 and once with -j 2 (or -j $JOBS).
#   scripts/bench_sweep.sh [path/to/tpusim]
# One measurement each; the machine should be otherwise idle (other load inflates the -j 2
# figure, since its two workers then share fewer free cores).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=${1:-build/tpusim}
jobs=${JOBS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() {  # run J -> wall seconds
    local t0 t1
    t0=$(date +%s.%N)
    "$bin" sweep scripts/bench_sweep.json -j "$1" --db "$tmp/j$1.sqlite" --quiet > /dev/null
    t1=$(date +%s.%N)
    python3 -c "print(f'{$t1 - $t0:.2f}')"
}
w1=$(run 1)
wn=$(run "$jobs")
ok=$(python3 - "$tmp/j1.sqlite" "$tmp/j$jobs.sqlite" <<'PY'
import sqlite3, sys
n = [sqlite3.connect(p).execute("select count(*), sum(status = 'ok') from points").fetchone() for p in sys.argv[1:]]
print(f"{n[0][1]}/{n[0][0]} and {n[1][1]}/{n[1][0]} points ok")
PY
)
echo "sweep of 64 points (BERT layer): -j 1 ${w1} s, -j ${jobs} ${wn} s wall (${ok})"
python3 -c "r = $wn / $w1; print(f'ratio -j ${jobs} / -j 1: {r:.3f} (target <= {1.1 / ${jobs}:.3f}): ' + ('met' if r <= 1.1 / ${jobs} else 'NOT met'))"
echo "cores: $(nproc), load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
