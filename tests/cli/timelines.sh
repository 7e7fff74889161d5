#!/usr/bin/env bash
# Every committed trace's timeline is one the Perfetto UI accepts (docs/program.md "Timeline"):
# per (pid, tid) the slices are disjoint or nested, every boundary is a whole nanosecond, and
# only processes and threads that carry events are declared (and every event's are).
# Usage: timelines.sh path/to/tpusim [config] (run from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
config=${2:-configs/tpu_v3_8.json}
status=0
for trace in traces/*.json; do
    tl="$tmp/$(basename "$trace" .json).trace.json"
    if ! "$bin" run --config "$config" --trace "$trace" --quiet --timeline "$tl" > /dev/null; then
        echo "FAIL $trace: tpusim run exited with $?"
        status=1
        continue
    fi
    python3 - "$tl" "$trace" <<'PY' || status=1
import json, re, sys
path, trace = sys.argv[1], sys.argv[2]
raw = open(path).read()
doc = json.loads(raw)
errors = []
# Whole nanoseconds: ts and dur are microseconds written with at most three decimals.
for m in re.finditer(r'"(ts|dur)":(-?[0-9.eE+-]+)', raw):
    if not re.fullmatch(r'[0-9]+(\.[0-9]{1,3})?', m.group(2)):
        errors.append(f'{m.group(1)} {m.group(2)} is not a whole number of nanoseconds')
        break
def ns(v):
    return round(float(v) * 1000)
procs, threads, slices, counters = set(), set(), {}, set()
for e in doc['traceEvents']:
    if e['ph'] == 'M' and e['name'] == 'process_name':
        procs.add(e['pid'])
    elif e['ph'] == 'C':  # a counter (the power track): its process, no thread
        counters.add(e['pid'])
    elif e['ph'] == 'M' and e['name'] == 'thread_name':
        threads.add((e['pid'], e['tid']))
    elif e['ph'] == 'X':
        if e['dur'] < 0:
            errors.append(f'negative dur {e}')
        slices.setdefault((e['pid'], e['tid']), []).append((ns(e['ts']), ns(e['ts']) + ns(e['dur'])))
if not slices:
    errors.append('no slices')
if set(slices) != threads:
    errors.append(f'threads declared without events or events on undeclared threads: '
                  f'{sorted(threads ^ set(slices))[:5]}')
if {p for p, _ in slices} | counters != procs:
    errors.append(f'processes declared without events: '
                  f'{sorted(procs - {p for p, _ in slices} - counters)}')
bad = 0
for key, v in slices.items():
    v.sort(key=lambda s: (s[0], -s[1]))
    stack = []  # ends of the open enclosing slices
    for s, e in v:
        while stack and stack[-1] <= s:
            stack.pop()
        if stack and e > stack[-1]:
            bad += 1
            if bad <= 3:
                errors.append(f'{key}: slice [{s}, {e}) ns partly overlaps one ending at {stack[-1]}')
        stack.append(e)
if bad:
    errors.append(f'{bad} slices partly overlap')
n = sum(len(v) for v in slices.values())
if errors:
    print(f'FAIL {trace}: ' + '; '.join(errors))
    sys.exit(1)
print(f'ok   {trace}: {n} slices on {len(slices)} threads of {len(procs)} processes nest')
PY
done

# Limits: by default core 0 only and at most 75,000 spans, so that the 10 ms LSTM step (8
# cores) stays under 10 MB, with a note for each limit; --timeline-cores all shows every core;
# --timeline-window keeps a slice of time; bad values are located errors.
lstm=tests/data/hlo/jax_seed_workloads/lstm_imdb_dp8.after_spmd_partitioning.hlo
"$bin" run -q --config configs/tpu_v3_8.json --hlo $lstm --timeline "$tmp/lstm.json" \
    > /dev/null 2> "$tmp/lstm.err" || { echo "FAIL lstm timeline: exit $?"; status=1; }
size=$(stat -c %s "$tmp/lstm.json")
if [ "$size" -ge 10000000 ] || ! grep -q "note: the timeline shows core 0 of 8 cores" "$tmp/lstm.err" ||
    ! grep -q "note: the timeline holds its first 75000 spans" "$tmp/lstm.err"; then
    echo "FAIL lstm timeline: $size bytes (want < 10 MB), notes: $(cat "$tmp/lstm.err")"
    status=1
fi
"$bin" run -q --config configs/tpu_v3_8.json --trace traces/data_parallel_step.json \
    --timeline "$tmp/all.json" --timeline-cores all --timeline-window 10:60 > /dev/null 2>&1 ||
    { echo "FAIL --timeline-cores all: exit $?"; status=1; }
python3 - "$tmp/all.json" <<'PY' || status=1
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
cores = {e["args"]["name"] for e in ev if e.get("name") == "process_name" and e["args"]["name"].startswith("core ")}
xs = [e for e in ev if e["ph"] == "X"]
bad = [e for e in xs if e["ts"] < 10 - 1e-9 or e["ts"] + e["dur"] > 60 + 1e-9]
if len(cores) != 8 or not xs or bad:
    print(f"FAIL --timeline-cores all --timeline-window 10:60: cores {sorted(cores)}, "
          f"{len(xs)} spans, {len(bad)} outside [10, 60] us")
    sys.exit(1)
print(f"ok   limits: 8 cores, {len(xs)} spans within 10-60 us")
PY
for bad in "--timeline-cores 9|--timeline-cores: 9: expected all or core numbers from 0 to 7" \
    "--timeline-window 5:3|--timeline-window: 5:3: TO must be after FROM" \
    "--timeline-window x|--timeline-window: x: expected FROM:TO in microseconds"; do
    args=${bad%%|*} want=${bad#*|}
    # shellcheck disable=SC2086
    err=$("$bin" run -q --config configs/tpu_v3_8.json --trace traces/gemm.json \
        --timeline "$tmp/x.json" $args 2>&1 >/dev/null)
    [ $? -eq 2 ] && [[ $err == "error: $want"* ]] || { echo "FAIL $args: $err"; status=1; }
done
exit $status
