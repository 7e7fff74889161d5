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
procs, threads, slices = set(), set(), {}
for e in doc['traceEvents']:
    if e['ph'] == 'M' and e['name'] == 'process_name':
        procs.add(e['pid'])
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
if {p for p, _ in slices} != procs:
    errors.append(f'processes declared without events: {sorted(procs - {p for p, _ in slices})}')
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
exit $status
