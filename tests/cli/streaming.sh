#!/usr/bin/env bash
# Streamed programs (sim.stream_above_instructions = 0: every core's program lowered on demand
# while it runs) give the same report as held ones: cycles, per-op cycles and every counter.
# The BERT training step runs 8 SPMD cores on one shared stream, with collectives; both runs
# use SPMD symmetry (one chip simulated, docs/pods.md; tests/cli/symmetry.sh compares a
# streamed symmetric run with a full one).
# Usage: streaming.sh path/to/tpusim (run from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
status=0
for t in bert_base_train_step data_parallel_step; do
    for mode in held streamed; do
        extra=()
        [[ $mode == streamed ]] && extra=(--set sim.stream_above_instructions=0)
        if ! "$bin" run --config configs/tpu_v3_8.json --trace "traces/$t.json" "${extra[@]}" \
            --quiet --json > "$tmp/$mode.json"; then
            echo "FAIL $t $mode: exit $?"
            status=1
        fi
    done
    python3 - "$tmp" "$t" <<'PY' || status=1
import json, sys
d, t = sys.argv[1], sys.argv[2]
held, streamed = (json.load(open(f"{d}/{m}.json")) for m in ("held", "streamed"))
# What may differ: the wall time of the run, the config key that chose the mode and the
# symmetry field.
def strip(r):
    r = dict(r)
    r.pop("symmetry", None)
    for k in [k for k in r if "wall" in k]:
        r.pop(k)
    r.get("config", {}).get("sim", {}).pop("stream_above_instructions", None)
    return r
if held["cycles"] <= 0:
    print(f"FAIL {t}: no cycles in the report"); sys.exit(1)
if strip(held) != strip(streamed):
    diff = [k for k in strip(held) if strip(held)[k] != strip(streamed).get(k)]
    print(f"FAIL {t}: streamed report differs in {diff}: cycles {held['cycles']} vs {streamed['cycles']}")
    sys.exit(1)
print(f"ok {t}: {held['cycles']} cycles held and streamed")
PY
done
exit $status
