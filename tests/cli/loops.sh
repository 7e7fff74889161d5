#!/usr/bin/env bash
# Trace loops (docs/trace-format.md "Loops", docs/hlo.md "Control flow"): a while loop runs its
# body N times from one copy of it.
#  1. Exactness: a loop and the same program written out trip by trip (the import's
#     --unroll-loops; for a hand-written trace, unrolled here in Python from the format's
#     definition) give identical cycles, and per op the loop's FLOPs, HBM bytes and unit busy
#     cycles equal the sum over its copies. Why identical: the lowering emits for each trip the
#     instructions the unrolled copy gets (same units, sizes, order and waits:
#     tests/unit/trace_loops_test.cpp); only the HBM addresses of the body's buffers differ
#     (reused each trip instead of fresh), and the HBM's timing here does not depend on them.
#  2. import hlo + run --trace gives the cycles of run --hlo on while modules.
#  3. A loop of 1,000,000 trips imports as one body in O(body) memory, and runs in
#     cycles = c(2) + (N - 2) x s, s = c(3) - c(2): every trip after the first issues the same
#     instructions, waiting on the previous trip's result (the carried tanh), so the steady
#     trip s is the same for every trip; c(2) holds the prologue, the first trip and the end.
#  5. The TPU form of jax.lax.fori_loop, with no known_trip_count, counts its 10 trips without
#     --while-trips (docs/hlo.md, "Control flow").
#  Under the sanitizers (TPUSIM_SANITIZED=1, set by tests/CMakeLists.txt) the run uses 10,000
#  trips and the memory bounds are not checked; wall time is never checked here (benchmarks
#  measure speed: scripts/bench.sh).
# Usage: loops.sh path/to/tpusim (run from the source root).
set -u
source "$(dirname "$0")/lib.sh"
v3=configs/tpu_v3_8.json
rnn=tests/data/hlo_loops/rnn_while.hlo
million=tests/data/hlo_loops/million_trips.hlo
fori=tests/data/hlo_loops/fori_loop_tpu.hlo

cycles() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cycles"])' "$1"; }
check() {  # name, command status
    if [ "$2" -eq 0 ]; then passes=$((passes + 1)); else echo "FAIL $1"; fails=$((fails + 1)); fi
}

# Per op of the loop run ($1) the sum over the unrolled run's copies ($2, ids "x@t").
compare_ops() {
    python3 - "$1" "$2" <<'PY'
import json, sys
loop, flat = (json.load(open(p)) for p in sys.argv[1:3])
if loop["cycles"] != flat["cycles"]:
    sys.exit(f"cycles {loop['cycles']} (loop) != {flat['cycles']} (unrolled)")
sums = {}
for o in flat["ops"]:
    s = sums.setdefault(o["id"].split("@")[0], {"flops": 0, "hbm_bytes": 0, "busy": {}})
    s["flops"] += o["flops"]
    s["hbm_bytes"] += o["hbm_bytes"]
    for u, c in o["unit_busy_cycles"].items():
        s["busy"][u] = s["busy"].get(u, 0) + c
for o in loop["ops"]:
    s = sums[o["id"]]
    if (o["flops"], o["hbm_bytes"], o["unit_busy_cycles"]) != (s["flops"], s["hbm_bytes"], s["busy"]):
        sys.exit(f"op {o['id']}: {o['flops']} FLOP {o['hbm_bytes']} B {o['unit_busy_cycles']} "
                 f"!= unrolled {s}")
PY
}

# 1a. The HLO recurrent cell, --while-trips N, loop vs --unroll-loops.
for n in 1 3; do
    "$bin" run --config $v3 -q --json --hlo $rnn --while-trips $n > "$tmp/loop.json" &&
        "$bin" run --config $v3 -q --json --hlo $rnn --while-trips $n --unroll-loops > "$tmp/flat.json"
    out=$(compare_ops "$tmp/loop.json" "$tmp/flat.json" 2>&1)
    check "rnn_while $n trips: $out" $?
done

# 1b. A hand-written trace with a loop, unrolled by the format's definition.
cat > "$tmp/hand.json" <<'EOF'
{"format": "tpusim.trace", "version": 2, "name": "hand", "cores": 8,
 "ops": [
  {"id": "x", "kind": "vector", "op": "relu", "rows": 512, "cols": 1024, "dtype": "bf16"},
  {"id": "mm", "kind": "matmul", "m": 512, "k": 1024, "n": 1024, "deps": ["x"], "carried": ["ln"]},
  {"id": "gelu", "kind": "vector", "op": "gelu", "rows": 512, "cols": 1024, "deps": ["mm"], "fused": true},
  {"id": "ln", "kind": "vector", "op": "layernorm", "rows": 512, "cols": 1024, "deps": ["gelu"]},
  {"id": "ar", "kind": "all_reduce", "bytes": 1048576, "deps": ["ln"], "carried": ["ar"]},
  {"id": "out", "kind": "outfeed", "bytes": 1048576, "deps": ["ln", "ar"]}
 ],
 "loops": [{"id": "w", "trips": 4, "body": ["mm", "gelu", "ln", "ar"]}]}
EOF
python3 - "$tmp/hand.json" "$tmp/hand_flat.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
loop = t.pop("loops")[0]
body, trips = loop["body"], loop["trips"]
ops, last = [], {}
for op in t["ops"]:
    if op["id"] not in body:
        op["deps"] = [last.get(d, d) for d in op.get("deps", [])]
        ops.append(op)
        continue
    if op["id"] != body[0]:
        continue
    prev = {}
    for k in range(trips):
        cur = {}
        for b in body:
            o = dict(next(x for x in t["ops"] if x["id"] == b))
            carried = o.pop("carried", [])
            o["id"] = b if k == 0 else f"{b}@{k}"
            o["deps"] = [cur.get(d, last.get(d, d)) for d in o.get("deps", [])]
            if k > 0:
                o["deps"] += [prev[c] for c in carried if prev[c] not in o["deps"]]
            cur[b] = o["id"]
            ops.append(o)
        prev = cur
    last.update(prev)
t["ops"], t["version"] = ops, 1
json.dump(t, open(sys.argv[2], "w"))
PY
"$bin" run --config $v3 -q --json --trace "$tmp/hand.json" > "$tmp/loop.json" &&
    "$bin" run --config $v3 -q --json --trace "$tmp/hand_flat.json" > "$tmp/flat.json"
out=$(compare_ops "$tmp/loop.json" "$tmp/flat.json" 2>&1)
check "hand-written loop: $out" $?
# The report says how often each op ran: the loop's 4 trips for its body, 1 elsewhere.
python3 - "$tmp/loop.json" "$tmp/flat.json" <<'PY'
import json, sys
loop, flat = (json.load(open(p)) for p in sys.argv[1:3])
got = {o["id"]: o["trips"] for o in loop["ops"]}
want = {"x": 1, "mm": 4, "gelu": 4, "ln": 4, "ar": 4, "out": 1}
assert got == want, got
assert all(o["trips"] == 1 for o in flat["ops"]), "unrolled copies run once each"
PY
check "per-op trips in the report" $?

# 2. import + run --trace == run --hlo, on both modules. Under the sanitizers the big module
#    runs 10,000 trips (its known_trip_count edited), as in part 3: a million take minutes there.
sanitized=${TPUSIM_SANITIZED:-0}
big=$million
if [ "$sanitized" = 1 ]; then
    big=$tmp/ten_thousand_trips.hlo
    sed 's/"n":"1000000"/"n":"10000"/' "$million" > "$big"
fi
for f in "$rnn --while-trips 3" "$big"; do
    # shellcheck disable=SC2086
    "$bin" import hlo --config $v3 $f -o "$tmp/imported.json" 2>/dev/null &&
        "$bin" run --config $v3 -q --json --hlo $f > "$tmp/hlo.json" &&
        "$bin" run --config $v3 -q --json --trace "$tmp/imported.json" > "$tmp/trace.json"
    a=$(cycles "$tmp/hlo.json") b=$(cycles "$tmp/trace.json")
    [ -n "$a" ] && [ "$a" = "$b" ]
    check "$f: run --hlo $a cycles, import + run --trace $b" $?
done

# 3. A million trips: the import holds one body (1 op in the loop, 2 in all) in well under
#    100 MB.
python3 - "$bin" "$million" "$tmp/million.json" "$sanitized" <<'PY'
import json, resource, subprocess, sys
bin_, hlo, out, sanitized = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
subprocess.run([bin_, "import", "hlo", hlo, "-o", out], check=True, capture_output=True)
rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
t = json.load(open(out))
assert t["version"] == 2 and len(t["loops"]) == 1, t.get("loops")
assert t["loops"][0]["trips"] == 1000000 and t["loops"][0]["body"] == ["y"], t["loops"]
assert len(t["ops"]) == 2, len(t["ops"])
assert sanitized or rss_mb < 100, rss_mb
PY
check "million trips: import holds one body" $?
# Steady trip from 2 and 3 trips (the same trace, trips edited), then the million.
for n in 2 3 4; do
    sed "s/\"trips\":1000000/\"trips\":$n/" "$tmp/million.json" > "$tmp/m$n.json"
    "$bin" run --config $v3 -q --json --trace "$tmp/m$n.json" > "$tmp/r$n.json"
done
c2=$(cycles "$tmp/r2.json") c3=$(cycles "$tmp/r3.json") c4=$(cycles "$tmp/r4.json")
s=$((c3 - c2))
[ "$s" -gt 0 ] && [ $((c4 - c3)) -eq "$s" ]
check "steady trip: c(2) $c2, c(3) $c3, c(4) $c4" $?
# The run streams its instructions (3 per trip: DMA in, tanh, DMA out; past sim.stream_above_instructions, set low
# here so that the bound shows): its memory does not grow with the trips.
python3 - "$bin" "$v3" "$tmp/million.json" "$c2" "$s" "$sanitized" <<'PY'
import json, resource, subprocess, sys
bin_, cfg, trace, c2, s = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
sanitized = sys.argv[6] == "1"
n = 10000 if sanitized else 1000000
if sanitized:
    t = json.load(open(trace))
    t["loops"][0]["trips"] = n
    trace = trace + ".small.json"
    json.dump(t, open(trace, "w"))
# --no-reuse: every trip simulated and streamed (loop reuse would simulate 8: loop_reuse.sh).
p = subprocess.run([bin_, "run", "--config", cfg, "--json", "--trace", trace, "--no-reuse",
                    "--set", "sim.stream_above_instructions=65536"],
                   check=True, capture_output=True, text=True)
r = json.loads(p.stdout)
want = c2 + (n - 2) * s
rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
assert r["cycles"] == want, (r["cycles"], want)
# Every trip's work, once per trip: the tanh's FLOPs are a million times one trip's.
y = next(o for o in r["ops"] if o["id"] == "y")
assert y["flops"] == n * 1024, y["flops"]
assert sanitized or rss_mb < 150, rss_mb
# A run longer than the progress line's quiet time (3 s) shows it on stderr.
if r["wall_seconds"] > 4:
    assert "[tpusim] simulated" in p.stderr, p.stderr[-500:]
print(f"{n} trips: {r['cycles']} cycles = {c2} + {n - 2} x {s}; {r['wall_seconds']:.1f} s, {rss_mb:.0f} MB")
PY
check "million trips: cycles = c(2) + (N - 2) x steady trip" $?

# 4. Bad loops in a trace file: located, exit 2.
sed 's/"trips": 4/"trips": 0/' "$tmp/hand.json" > "$tmp/bad.json"
expect_error zero_trips "/loops/0: \"trips\" must be an integer from 1 to 2^40, got 0" -- \
    trace check --trace "$tmp/bad.json" --config $v3
sed 's/"body": \["mm", "gelu", "ln", "ar"\]/"body": []/' "$tmp/hand.json" > "$tmp/bad.json"
expect_error empty_body "\"body\" must be a non-empty array" -- run --trace "$tmp/bad.json" --config $v3
# "out" after a body op ("ln") and before another ("ar"): it would have to run inside the loop.
sed 's/"deps": \["ln"\], "carried": \["ar"\]/"deps": ["ln", "out"], "carried": ["ar"]/; s/"deps": \["ln", "ar"\]/"deps": ["ln"]/' \
    "$tmp/hand.json" > "$tmp/bad.json"
expect_error crossing "op \"out\" is not in the body but must run between body ops" -- \
    trace check --trace "$tmp/bad.json" --config $v3

# 5. The fori_loop counter: init copy(constant(0)), compare LT constant(10), add of a constant
#    sunk into the body: one trace loop of 10 trips, and the run needs no --while-trips.
"$bin" import hlo --config $v3 $fori -o "$tmp/fori.json" 2>/dev/null &&
    python3 -c 'import json,sys; l = json.load(open(sys.argv[1]))["loops"]; sys.exit(not (len(l) == 1 and l[0]["trips"] == 10))' \
        "$tmp/fori.json" &&
    "$bin" run --config $v3 -q --json --hlo $fori > "$tmp/fori_run.json"
check "$fori: 10 trips counted from the condition" $?
finish
