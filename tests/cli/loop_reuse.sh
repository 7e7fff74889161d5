#!/usr/bin/env bash
# Loop reuse (docs/program.md, "Loops"): a loop of more trips than run simulates (8) is charged
# the rest from its steady trip, and every figure of the report is the one of simulating every
# trip (--no-reuse): cycles, per-op stats, utilisation, kernel rows, every stat counter, energy.
#  1. Compute-, HBM- and ICI-bound loops (tests/data/loop_reuse; the verdict is checked, so each
#     is what it says), with and without --no-reuse: reports identical but for wall_seconds,
#     the git revision and the reused run's `loop_reuse` {simulated_trips, charged_trips}; the
#     text summaries identical but for the wall time and the reused run's "loops" line.
#  2. A loop whose trips overlap (no carried value: the next trip's loads start while a trip
#     computes) never starts a trip on an idle board: run says so on stderr, simulates every
#     trip (re-running itself with --no-reuse) and reports no `loop_reuse`.
#  2b. A loop whose trips lower differently (the VMEM ring's layout does not repeat) is refused
#     from the lowering alone, before the run: lowered again with every trip in the same
#     process, one note, the report of --no-reuse.
#  3. --timeline (per-trip spans) simulates every trip (the same cycles and ops; the symmetry
#     note differs: a timeline shows every core).
#  4. A billion trips: cycles = c(N) + (10^9 - N) x (c(N + 1) - c(N)) from two runs that
#     simulate every trip, and every op's FLOPs and HBM bytes scale with the trips.
# Usage: loop_reuse.sh path/to/tpusim (run from the source root).
set -u
source "$(dirname "$0")/lib.sh"
v3=configs/tpu_v3_8.json
data=tests/data/loop_reuse

# Reports $1 (reused) and $2 (every trip) agree on every figure; $3: trips charged (0: none).
same_reports() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
charged = int(sys.argv[3])
lr = a.pop("loop_reuse", None)
if charged:
    assert lr is not None, "no loop_reuse in the reused run's report"
    assert lr["charged_trips"] == charged, lr
    trips = {o["trips"] for o in a["ops"] if o["trips"] > 1}
    assert lr["simulated_trips"] + lr["charged_trips"] == sum(trips), (lr, trips)
else:
    assert lr is None, lr
assert "loop_reuse" not in b
diffs = []
def walk(x, y, path):
    if isinstance(x, dict) and isinstance(y, dict):
        for k in sorted(set(x) | set(y)):
            if path == "" and k in ("wall_seconds", "git_revision"):
                continue
            if k not in x or k not in y:
                diffs.append(f"{path}/{k}: only in one")
            else:
                walk(x[k], y[k], f"{path}/{k}")
    elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        for i, (p, q) in enumerate(zip(x, y)):
            walk(p, q, f"{path}/{i}")
    elif x != y:
        diffs.append(f"{path}: {x} != {y}")
walk(a, b, "")
assert not diffs, "\n".join(diffs[:10])
assert a["kernels"] and a["stats"] and a["ops"], "a report without kernels, stats or ops"
PY
}

# 1. Compute-, HBM- and ICI-bound loops.
for case in "rnn_compute compute 42" "hbm_bound hbm 22" "ici_bound ici 12"; do
    read -r name verdict charged <<< "$case"
    "$bin" run --config $v3 --trace "$data/$name.json" --report "$tmp/$name.reuse.json" \
        --ops "$tmp/$name.reuse.csv" > "$tmp/$name.reuse.txt" 2> "$tmp/$name.reuse.err"
    "$bin" run --config $v3 --trace "$data/$name.json" --report "$tmp/$name.all.json" \
        --ops "$tmp/$name.all.csv" --no-reuse > "$tmp/$name.all.txt" 2>&1
    got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bottleneck"])' \
        "$tmp/$name.all.json")
    [ "$got" = "$verdict" ] || fail "$name: verdict $got, expected $verdict"
    [ ! -s "$tmp/$name.reuse.err" ] || fail "$name: stderr: $(head -c 300 "$tmp/$name.reuse.err")"
    if out=$(same_reports "$tmp/$name.reuse.json" "$tmp/$name.all.json" "$charged" 2>&1); then
        passes=$((passes + 1))
    else
        fail "$name: reused and full reports differ: $out"
    fi
    cmp -s "$tmp/$name.reuse.csv" "$tmp/$name.all.csv" || fail "$name: per-op CSVs differ"
    if diff <(grep -v -e '^  loops ' -e 'simulated in' "$tmp/$name.reuse.txt") \
        <(grep -v 'simulated in' "$tmp/$name.all.txt") > "$tmp/d.txt"; then
        passes=$((passes + 1))
    else
        fail "$name: summaries differ: $(head -5 "$tmp/d.txt")"
    fi
    grep -q "^  loops      8 trips simulated, $charged charged" "$tmp/$name.reuse.txt" ||
        fail "$name: no loops line in the summary"
done

# 2. Overlapping trips: refused, every trip simulated.
"$bin" run --config $v3 --trace "$data/pipelined.json" --report "$tmp/pipe.reuse.json" \
    > /dev/null 2> "$tmp/pipe.err"
"$bin" run --config $v3 --trace "$data/pipelined.json" --report "$tmp/pipe.all.json" --no-reuse \
    > /dev/null 2>&1
grep -q '^note: loop reuse: the trips of the loop of op "mm" did not repeat in 8 trips; simulating every trip (--no-reuse)$' \
    "$tmp/pipe.err" || fail "pipelined: no note on stderr: $(cat "$tmp/pipe.err")"
out=$(same_reports "$tmp/pipe.reuse.json" "$tmp/pipe.all.json" 0 2>&1) ||
    fail "pipelined: reports differ: $out"

# 2b. Trips that lower differently (the VMEM ring's layout does not repeat): refused before
# the run, from the lowering; the loop lowered again with every trip in the same process.
# With another loop after it (ring_laps_first) the lowering for reuse stops at the refused
# loop; before it (ring_laps_second) it goes on to the refused one. The note names that loop,
# and the report is the one of every trip, either way.
for laps in ring_laps ring_laps_first ring_laps_second; do
    "$bin" run --config $v3 --trace "$data/$laps.json" --report "$tmp/laps.reuse.json" \
        > /dev/null 2> "$tmp/laps.err"
    "$bin" run --config $v3 --trace "$data/$laps.json" --report "$tmp/laps.all.json" \
        --no-reuse > /dev/null 2>&1
    grep -q '^note: loop reuse: the loop of op "mm": its trips may come round the VMEM ring to their own buffers and the ring.s layout did not repeat from one trip to the next; simulating every trip (--no-reuse)$' \
        "$tmp/laps.err" || fail "$laps: no note on stderr: $(cat "$tmp/laps.err")"
    [ "$(grep -c '^note: loop reuse' "$tmp/laps.err")" = 1 ] || fail "$laps: the note twice"
    out=$(same_reports "$tmp/laps.reuse.json" "$tmp/laps.all.json" 0 2>&1) ||
        fail "$laps: reports differ: $out"
done

# 3. A timeline: every trip simulated.
"$bin" run --config $v3 --trace "$data/rnn_compute.json" --report "$tmp/tl.json" \
    --timeline "$tmp/tl.trace.json" > /dev/null 2>&1
python3 - "$tmp/tl.json" "$tmp/rnn_compute.all.json" <<'PY' || fail "timeline: reused or cycles differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert "loop_reuse" not in a and a["cycles"] == b["cycles"] and a["ops"] == b["ops"]
PY

# 4. A billion trips against the steady trip of two full runs.
python3 - "$bin" "$v3" "$data/rnn_compute.json" "$tmp" <<'PY'
import json, subprocess, sys
bin_, cfg, trace, tmp = sys.argv[1:5]
def run(trips, *extra):
    t = json.load(open(trace))
    t["loops"][0]["trips"] = trips
    p = f"{tmp}/rnn_{trips}.json"
    json.dump(t, open(p, "w"))
    out = subprocess.run([bin_, "run", "--config", cfg, "--trace", p, "--json", "-q", *extra],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)
n, big = 20, 10**9
a, b = run(n, "--no-reuse"), run(n + 1, "--no-reuse")
r = run(big)
step = b["cycles"] - a["cycles"]
want = a["cycles"] + (big - n) * step
assert r["cycles"] == want, (r["cycles"], want)
assert r["loop_reuse"] == {"simulated_trips": 8, "charged_trips": big - 8}, r["loop_reuse"]
for o, oa, ob in zip(r["ops"], a["ops"], b["ops"]):
    if o["trips"] == 1:
        continue
    assert o["trips"] == big, o
    assert o["flops"] == oa["flops"] / n * big, (o["id"], o["flops"])
    assert o["hbm_bytes"] == oa["hbm_bytes"] + (big - n) * (ob["hbm_bytes"] - oa["hbm_bytes"]), o
print(f"10^9 trips: {r['cycles']} cycles = c({n}) + (10^9 - {n}) x {step}")
PY
[ $? -eq 0 ] && passes=$((passes + 1)) || fail "a billion trips"
finish
