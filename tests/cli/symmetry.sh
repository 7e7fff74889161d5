#!/usr/bin/env bash
# SPMD symmetry (docs/pods.md): a data-parallel step simulated on one representative chip (the
# default) gives the same report as the full run (--no-symmetry) on v3-8 and v3-32, on the
# whole board and on its first chips only (4 of a v3-8's cores, 16 of a v3-32's, 8 of the full
# v3 pod's; the other
# chips idle), and with the program streamed (sim.stream_above_instructions): cycles, every
# op's cycles and busy counts, every unit and link counter, the idle chips' zeros. Only the
# wall time and the `symmetry` field itself may differ. Programs that break the conditions run in full and say
# why (report field and one info line on stderr).
# Usage: symmetry.sh path/to/tpusim (run from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
status=0
fail() {
    echo "FAIL $*"
    status=1
}

# A one-layer BERT training step, data-parallel (an all-reduce per gradient group): on the
# whole board, on its first chips, and streamed (a window of 500 instructions).
for spec in "8 8" "32 32" "4 8" "16 32" "8 2048" "32 32 stream"; do
    read -r cores board stream <<<"$spec"
    name=$cores${stream:+s}
    python3 scripts/gen_trace.py bert --layers 1 --seq 128 --batch 1 --hidden 256 --heads 4 \
        --ffn 1024 --vocab 1024 --predictions 20 --cores "$cores" -o "$tmp/bert$cores.json" \
        > /dev/null || fail "gen_trace bert --cores $cores"
    for mode in symmetric full; do
        extra=()
        [[ $mode == full ]] && extra=(--no-symmetry)
        [[ -n $stream ]] && extra+=(--set sim.stream_above_instructions=500)
        "$bin" run --config "configs/tpu_v3_$board.json" --trace "$tmp/bert$cores.json" \
            "${extra[@]}" --quiet --json > "$tmp/$mode$name.json" 2> "$tmp/$mode$name.err" ||
            fail "v3-$board ($cores cores $stream) $mode: exit $?"
    done
    python3 - "$tmp" "$name" "$board" <<'PY' || status=1
import json, sys
sys.path.insert(0, "tests/cli")
from report_diff import first_difference, strip
d, name, board = sys.argv[1], sys.argv[2], int(sys.argv[3])
cores = name.rstrip("s")
sym, full = (json.load(open(f"{d}/{m}{name}.json")) for m in ("symmetric", "full"))
chips = board // 2
if not sym["symmetry"]["used"] or sym["symmetry"]["simulated_cores"] != 2:
    print(f"FAIL v3-{cores}: symmetry not used: {sym['symmetry']}"); sys.exit(1)
if full["symmetry"]["used"] or full["symmetry"]["reason"] != "--no-symmetry":
    print(f"FAIL v3-{cores}: --no-symmetry still symmetric: {full['symmetry']}"); sys.exit(1)
if full["cores"] != int(cores) or full["cycles"] <= 0 or full["ici"]["bytes"] <= 0 \
        or len(full["stats"]) != chips + 1:
    print(f"FAIL v3-{cores}: the full run has no cycles, ICI traffic or chips"); sys.exit(1)
d = first_difference(strip(sym, "symmetry"), strip(full, "symmetry"), ("symmetric", "full"))
if d:
    print(f"FAIL v3-{board} ({name}): the symmetric report differs from the full one at {d}")
    sys.exit(1)
print(f"ok v3-{board}, {cores} cores{' streamed' if name.endswith('s') else ''}: "
      f"{full['cycles']} cycles, {len(full['ops'])} ops, {full['ici']['bytes']} ICI bytes, "
      "the same with one chip simulated and with all")
PY
done
grep -q "info: SPMD symmetry" "$tmp/symmetric32.err" "$tmp/full32.err" &&
    fail "an info line on stderr although symmetry held or was turned off"

# Conditions that do not hold: the run is full, the report says why, stderr says it once.
expect_full() {  # name, expected reason (a fragment), extra run arguments...
    local name=$1 reason=$2
    shift 2
    "$bin" run --config configs/tpu_v3_32.json --quiet --json "$@" > "$tmp/$name.json" \
        2> "$tmp/$name.err" || fail "$name: exit $?"
    python3 - "$tmp/$name.json" "$reason" "$name" <<'PY' || status=1
import json, sys
r, reason, name = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
s = r["symmetry"]
if s["used"] or reason not in s["reason"] or s["simulated_cores"] != r["cores"]:
    print(f"FAIL {name}: expected a full run because {reason!r}, got {s}"); sys.exit(1)
print(f"ok {name}: full run, {s['reason']}")
PY
    [[ $(grep -c "^info: SPMD symmetry not used: .*$reason" "$tmp/$name.err") == 1 ]] ||
        fail "$name: expected one info line naming \"$reason\"; stderr: $(cat "$tmp/$name.err")"
}
# A collective over two replica groups that are not translates of one another on v3-32's
# 4 x 4 torus (chip y * 4 + x; rows 0-1 and 2-3 would be: tests/cli/symmetry_groups.sh): row 0
# with the 2 x 2 chips below its left half, and the rest (row 3 with the 2 x 2 above its right
# half, the first group mirrored).
python3 - "$tmp/groups_trace.json" <<'PY'
import json, sys
first = [c * 2 + k for c in (0, 1, 2, 3, 4, 5, 8, 9) for k in (0, 1)]
ops = [{"id": "mm", "kind": "matmul", "m": 256, "k": 256, "n": 256, "dtype": "bf16"},
       {"id": "ar", "kind": "all_reduce", "bytes": 65536, "dtype": "f32", "deps": ["mm"],
        "replica_groups": [first, [c for c in range(32) if c not in first]]}]
json.dump({"format": "tpusim.trace", "version": 1, "name": "groups", "cores": 32, "ops": ops},
          open(sys.argv[1], "w"))
PY
expect_full groups "replica group 1 is not a translate" --trace "$tmp/groups_trace.json"
# Ops on some cores only: the cores' streams differ, and repeat on no block of chips (the
# first 7 of the 4 x 4 chips; the first 8, two rows, repeat on column 0: tests/cli/
# symmetry_replicas.sh).
python3 - "$tmp/subset_trace.json" <<'PY'
import json, sys
ops = [{"id": "mm", "kind": "matmul", "m": 256, "k": 256, "n": 256, "dtype": "bf16"},
       {"id": "mm2", "kind": "matmul", "m": 256, "k": 256, "n": 256, "dtype": "bf16",
        "deps": ["mm"], "cores": list(range(14))},
       {"id": "ar", "kind": "all_reduce", "bytes": 65536, "dtype": "f32", "deps": ["mm"]}]
json.dump({"format": "tpusim.trace", "version": 1, "name": "subset", "cores": 32, "ops": ops},
          open(sys.argv[1], "w"))
PY
expect_full subset "runs another instruction stream" --trace "$tmp/subset_trace.json"
expect_full timeline "timeline" --trace "$tmp/bert32.json" --timeline "$tmp/t.json"
# Cores that are not whole chips, and one chip.
for n in 3 2; do
    python3 - "$tmp/part$n.json" "$n" <<'PY'
import json, sys
ops = [{"id": "mm", "kind": "matmul", "m": 256, "k": 256, "n": 256, "dtype": "bf16"},
       {"id": "ar", "kind": "all_reduce", "bytes": 65536, "dtype": "f32", "deps": ["mm"]}]
json.dump({"format": "tpusim.trace", "version": 1, "name": "part", "cores": int(sys.argv[2]),
           "ops": ops}, open(sys.argv[1], "w"))
PY
done
expect_full cores3 "not on whole chips of 2" --trace "$tmp/part3.json"
# One chip: nothing to share, so no info line either.
"$bin" run --config configs/tpu_v3_32.json --quiet --json --trace "$tmp/part2.json" \
    > "$tmp/cores2.json" 2> "$tmp/cores2.err" || fail "cores2: exit $?"
python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))["symmetry"]
sys.exit(0 if not s["used"] and s["reason"] == "the program runs on 2 of the board\x27s 32 cores" else 1)' \
    "$tmp/cores2.json" || fail "cores2: expected a full run on one chip"
grep -q "info: SPMD symmetry" "$tmp/cores2.err" && fail "cores2: an info line for a one-chip program"
exit $status
