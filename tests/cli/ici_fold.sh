#!/usr/bin/env bash
# Symmetric collectives (docs/ici.md): with ici.tick_order = by_link, a torus all-reduce that
# repeats a tile of the torus is simulated on the tile (ici.fold_symmetric, the default) and
# the report equals the one that simulates every link (ici.fold_symmetric=false) in every
# figure but the wall time and the config echo: cycles, every op, utilizations, ICI bytes and
# the stats tree of every chip and link. A two-layer BERT-base training step (seq 512, batch
# 8: the 28,351,488-byte gradient all-reduce the unit tests show folds onto a 2 x 2 tile, and
# the irregular embedding ones that fall back) on v3-32 (4 x 4) and v3-128 (8 x 8).
# Usage: ici_fold.sh path/to/tpusim (run from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
for cores in 32 128; do
    python3 scripts/gen_trace.py bert --layers 2 --seq 512 --batch 8 --cores "$cores" \
        -o "$tmp/bert$cores.json" > /dev/null || fail "gen_trace bert --cores $cores"
    for fold in true false; do
        "$bin" run --config "configs/tpu_v3_$cores.json" --trace "$tmp/bert$cores.json" \
            --set ici.tick_order=by_link --set "ici.fold_symmetric=$fold" --quiet --json \
            > "$tmp/$fold$cores.json" 2> "$tmp/$fold$cores.err" || fail "v3-$cores fold=$fold: exit $?"
    done
    if python3 - "$tmp" "$cores" <<'PY'; then passes=$((passes + 1)); else fail "v3-$cores reports"; fi
import json, sys
sys.path.insert(0, "tests/cli")
from report_diff import first_difference, strip
d, cores = sys.argv[1], sys.argv[2]
tile, full = (json.load(open(f"{d}/{m}{cores}.json")) for m in ("true", "false"))
links = [k for k in full["stats"].get("ici", {}) if isinstance(full["stats"]["ici"][k], dict)]
if full["cycles"] <= 0 or full["ici"]["bytes"] <= 0 or not links:
    print(f"FAIL v3-{cores}: the full run has no cycles, ICI traffic or link stats"); sys.exit(1)
d = first_difference(strip(tile, "config"), strip(full, "config"), ("tile", "every link"))
if d:
    print(f"FAIL v3-{cores}: the folded report differs from the full one at {d}"); sys.exit(1)
print(f"ok v3-{cores}: {full['cycles']} cycles, {full['ici']['bytes']} ICI bytes over "
      f"{len(links)} links, the same on a tile and on every link")
PY
done
# A config can only ask for a known order.
expect_error "unknown tick order" "ici.tick_order" -- run --config configs/tpu_v3_32.json \
    --trace "$tmp/bert32.json" --set ici.tick_order=sorted --quiet
finish
