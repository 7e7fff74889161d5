#!/usr/bin/env bash
# The timeline's power track (#41): `run --timeline` adds a process "power" with the counter
# "W per chip", one sample per window of the peak's 1 us and a last one at the run's end. From
# the run's own report: no sample below the idle power, the highest equals the reported peak
# (the attention block has under 4096 windows of 1 us, so the track's windows are the peak's;
# samples are written to 6 significant digits), and the
# samples' time-weighted average equals the reported average power within 1% (the class caps
# may trim a window). With --timeline-window only samples inside the window are written.
# Usage: power_track.sh path/to/tpusim (from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
t=traces/attention.json
"$bin" run -q --config configs/tpu_v3_8.json --trace $t --timeline "$tmp/tl.json" \
    --report "$tmp/r.json" >/dev/null || fatal "run: $?"
"$bin" run -q --config configs/tpu_v3_8.json --trace $t --timeline "$tmp/win.json" \
    --timeline-window 1000:2000 >/dev/null || fatal "windowed run: $?"
out=$(python3 - "$tmp/tl.json" "$tmp/r.json" "$tmp/win.json" <<'PY'
import json, sys
tl, r, win = (json.load(open(f)) for f in sys.argv[1:4])
e = r["energy"]
def samples(t):
    pids = {ev["pid"] for ev in t["traceEvents"]
            if ev.get("ph") == "M" and ev["name"] == "process_name" and ev["args"]["name"] == "power"}
    return [(ev["ts"], ev["args"]["W per chip"]) for ev in t["traceEvents"]
            if ev.get("ph") == "C" and ev["name"] == "W per chip" and ev["pid"] in pids]
s = samples(tl)
errs = []
if len(s) < 2:
    errs.append(f"{len(s)} power samples")
else:
    end_us = r["seconds"] * 1e6
    if abs(s[-1][0] - end_us) > 1e-3:
        errs.append(f"last sample at {s[-1][0]} us, the run ends at {end_us}")
    low = min(v for _, v in s)
    if low < e["idle_watts_per_chip"] * (1 - 1e-5):
        errs.append(f"a sample of {low} W below the idle {e['idle_watts_per_chip']} W")
    high = max(v for _, v in s)
    if abs(high - e["peak_watts_per_chip"]) > 1e-5 * e["peak_watts_per_chip"]:
        errs.append(f"highest sample {high} W, the report's peak {e['peak_watts_per_chip']} W")
    avg = sum((s[i + 1][0] - s[i][0]) * s[i][1] for i in range(len(s) - 1)) / s[-1][0]
    if abs(avg - e["average_watts_per_chip"]) > 0.01 * e["average_watts_per_chip"]:
        errs.append(f"time-weighted average {avg} W, the report's {e['average_watts_per_chip']} W")
w = samples(win)
if not w or any(not 1000 - 1e-3 <= ts <= 2000 + 1e-3 for ts, _ in w):
    errs.append(f"--timeline-window 1000:2000 kept samples at {[ts for ts, _ in w][:5]} ...")
print("; ".join(errs) if errs else
      f"ok {len(s)} samples, {min(v for _, v in s):.1f}..{max(v for _, v in s):.1f} W per chip, "
      f"average {avg:.2f} W")
PY
)
if [[ $out == ok* ]]; then
    echo "$out"
    passes=$((passes + 1))
else
    echo "FAIL power track: $out"
    fails=$((fails + 1))
fi
finish
