#!/usr/bin/env bash
# The shipped studies (docs/studies/*/) against the simulator: each study's sweep is run again
# into a temporary database and its CSV must equal the committed results.csv in every column
# but the machine- and build-dependent ones (wall_seconds, peak_rss_mib, git_revision), so that
# a change that moves cycles also regenerates the studies (docs/studies/*/run.sh) and their
# prose is checked against the new figures. About 20 s on two cores.
# Usage: studies_sync.sh path/to/tpusim (from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
work=$tmp
for spec in docs/studies/*/spec.json; do
    dir=$(dirname "$spec")
    name=$(basename "$dir")
    if ! "$bin" sweep "$spec" --db "$work/$name.sqlite" -j 2 --quiet >"$work/$name.log" 2>&1 ||
        ! "$bin" sweep --db "$work/$name.sqlite" --csv "$work/$name.csv" >>"$work/$name.log" 2>&1; then
        echo "FAIL $name: the sweep did not run:"
        cat "$work/$name.log"
        fails=$((fails + 1))
        continue
    fi
    if ! python3 - "$dir/results.csv" "$work/$name.csv" <<'PY'
import csv, sys
skip = {"wall_seconds", "peak_rss_mib", "git_revision"}
def rows(path):
    with open(path, newline="") as f:
        return [{k: v for k, v in r.items() if k not in skip} for r in csv.DictReader(f)]
old, new = rows(sys.argv[1]), rows(sys.argv[2])
if len(old) != len(new):
    print(f"  {len(old)} committed points, {len(new)} now")
    sys.exit(1)
bad = 0
for o, n in zip(old, new):
    for k in sorted(set(o) | set(n)):
        if o.get(k) != n.get(k):
            if bad < 5:
                print(f"  {o.get('label')}: {k}: {o.get(k)} -> {n.get(k)}")
            bad += 1
sys.exit(1 if bad else 0)
PY
    then
        echo "FAIL $name: $dir/results.csv differs from the simulator; regenerate it with $dir/run.sh"
        fails=$((fails + 1))
    fi
done
if [ "$fails" -ne 0 ]; then
    echo "$fails of the studies out of sync"
    exit 1
fi
echo "every study's results.csv matches the simulator"
