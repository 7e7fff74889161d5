#!/usr/bin/env bash
# `tpusim run` outputs: the report has the keys of docs/design.md "Interfaces"; two runs give the
# same report apart from wall-clock fields; the timeline is valid trace-event JSON; the per-op
# CSV has a row per op; --fidelity pe gives the cycles of --fidelity tile.
# Usage: run_reports.sh path/to/tpusim (run from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
v3=configs/tpu_v3_8.json

# A small two-layer MLP with a fused epilogue, on one core: small enough for PE fidelity.
cat > "$tmp/mlp.json" <<'JSON'
{"format": "tpusim.trace", "version": 1, "name": "tiny_mlp", "cores": 1, "ops": [
 {"id": "x", "kind": "infeed", "bytes": 262144},
 {"id": "fc1", "kind": "matmul", "m": 512, "k": 256, "n": 384, "dtype": "bf16", "deps": ["x"]},
 {"id": "act", "kind": "vector", "op": "gelu", "rows": 512, "cols": 384, "dtype": "bf16",
  "deps": ["fc1"], "fused": true},
 {"id": "fc2", "kind": "matmul", "m": 512, "k": 384, "n": 256, "dtype": "bf16", "deps": ["act"]},
 {"id": "y", "kind": "outfeed", "bytes": 262144, "deps": ["fc2"]}]}
JSON

for i in 1 2; do
    "$bin" run --config $v3 --trace "$tmp/mlp.json" --quiet --report "$tmp/r$i.json" \
        --timeline "$tmp/t$i.json" --ops "$tmp/o$i.csv" > "$tmp/out$i.txt" ||
        fatal "tpusim run exited with $?"
done
"$bin" run --config $v3 --trace "$tmp/mlp.json" --quiet --fidelity pe --report "$tmp/pe.json" \
    > /dev/null || fatal "tpusim run --fidelity pe exited with $?"
# One HBM denominator: a core alone has half its chip's bandwidth, and the HBM line and the
# busy line give the same percentage of it.
hbm_pct=$(grep -oE '[0-9.]+% of the 450.0 its core can use \(peak 900.0\)$' "$tmp/out1.txt" | cut -d% -f1)
busy_pct=$(grep -oE 'HBM [0-9.]+%, ICI' "$tmp/out1.txt" | grep -oE '[0-9.]+')
[ -n "$hbm_pct" ] && [ "$hbm_pct" = "$busy_pct" ] ||
    fatal "HBM denominators: line '$(grep '  HBM ' "$tmp/out1.txt")', busy $busy_pct"
# Grammar of the summary and of warnings: "1 core on 1 chip", "is an all_reduce".
head -1 "$tmp/out1.txt" | grep -q "^tiny_mlp on tpu_v3_8: 1 core on 1 chip$" ||
    fatal "summary line: $(head -1 "$tmp/out1.txt")"
printf '%s\n' '{"format": "tpusim.trace", "version": 1, "name": "fz", "cores": 2, "ops": [' \
    '{"id": "ar", "kind": "all_reduce", "bytes": 4096},' \
    '{"id": "v", "kind": "vector", "op": "relu", "elements": 1024, "deps": ["ar"], "fused": true}]}' \
    > "$tmp/fz.json"
"$bin" run --config $v3 --trace "$tmp/fz.json" --quiet 2>&1 >/dev/null |
    grep -q 'its producer "ar" is an all_reduce: only matmul' || fatal "article of the fusion warning"

python3 - "$tmp" <<'PY' || exit 1
import csv, json, sys
d = sys.argv[1]
r1, r2, pe = (json.load(open(f"{d}/{n}.json")) for n in ("r1", "r2", "pe"))
need = ["cycles", "seconds", "achieved_bf16_tflops", "mxu_utilization", "hbm", "ici", "ops", "config"]
missing = [k for k in need if k not in r1]
missing += [f"hbm.{k}" for k in ("bytes_read", "bytes_written", "achieved_gbps_per_chip") if k not in r1.get("hbm", {})]
missing += [f"ici.{k}" for k in ("bytes",) if k not in r1.get("ici", {})]
for op in r1.get("ops", []):
    missing += [f"ops[].{k}" for k in ("id", "start_cycle", "end_cycle", "unit_busy_cycles") if k not in op]
u = r1.get("utilization", {})
missing += [f"utilization.{k}" for k in ("mxu_busy", "vpu_busy", "dma_busy", "ici_busy", "host_busy", "hbm_bandwidth", "mxu_padding_waste") if k not in u]
if "bottleneck" not in r1: missing.append("bottleneck")
if missing: sys.exit(f"FAIL report lacks {sorted(set(missing))}")
if r1["cycles"] <= 0 or len(r1["ops"]) != 5: sys.exit(f"FAIL cycles {r1['cycles']}, {len(r1['ops'])} ops")
if any(not 0 <= v <= 1 for v in u.values()): sys.exit(f"FAIL utilization outside [0, 1]: {u}")
# fc1 is 512 x 256 x 384 on 128 x 128 arrays: no padding; the MXUs did work.
if u["mxu_padding_waste"] != 0 or u["mxu_busy"] <= 0: sys.exit(f"FAIL MXU figures {u}")
if r1["config"]["sim"]["mxu_fidelity"] != "tile": sys.exit("FAIL default fidelity is not tile")
def strip(r):
    r = dict(r); r.pop("wall_seconds", None); return json.dumps(r, sort_keys=True)
if strip(r1) != strip(r2): sys.exit("FAIL two identical runs gave different reports")
if open(f"{d}/t1.json").read() != open(f"{d}/t2.json").read(): sys.exit("FAIL timelines differ")
tl = json.load(open(f"{d}/t1.json"))
spans = [e for e in tl["traceEvents"] if e.get("ph") == "X"]
if not spans or any(e["dur"] < 0 for e in spans): sys.exit("FAIL timeline has no valid spans")
rows = list(csv.DictReader(open(f"{d}/o1.csv")))
if [r["id"] for r in rows] != [o["id"] for o in r1["ops"]]: sys.exit("FAIL CSV rows differ from report ops")
if pe["config"]["sim"]["mxu_fidelity"] != "pe": sys.exit("FAIL --fidelity pe not in the config echo")
if pe["cycles"] != r1["cycles"]: sys.exit(f"FAIL pe {pe['cycles']} cycles, tile {r1['cycles']}")
ends = lambda r: [(o["id"], o["start_cycle"], o["end_cycle"], o["unit_busy_cycles"]) for o in r["ops"]]
if ends(pe) != ends(r1): sys.exit("FAIL per-op timing differs between pe and tile fidelity")
print(f"ok: {r1['cycles']} cycles at both fidelities, {len(spans)} timeline spans, reports identical")
PY

# Rematerialisation (docs/program.md): b (f32, 4N bytes for N = 1,376,256 elements) is live
# across the peak at r and can be recomputed from a, which stays live. The peak is 26N bytes
# with b, 22N without (tests/unit/remat_test.cpp has the sums); with a core's HBM cut to
# 32 MiB (64 rows of 1 MiB per v3 chip, two cores), between the two, run recomputes b and says
# so on stderr and in the report, trace check reports the footprint after it, and with the
# key off the program is rejected.
cat > "$tmp/remat.json" <<'JSON'
{"format": "tpusim.trace", "version": 1, "name": "remat", "cores": 1, "ops": [
 {"id": "a", "kind": "vector", "op": "relu", "elements": 1376256},
 {"id": "b", "kind": "vector", "op": "gelu", "elements": 1376256, "deps": ["a"], "out_dtype": "f32"},
 {"id": "c", "kind": "vector", "op": "relu", "elements": 1376256, "deps": ["b"], "dtype": "f32", "out_dtype": "bf16"},
 {"id": "big", "kind": "vector", "op": "relu", "elements": 5505024},
 {"id": "r", "kind": "vector", "op": "reduce_sum", "rows": 5376, "cols": 1024, "deps": ["big"]},
 {"id": "g", "kind": "vector", "op": "relu", "elements": 1376256, "deps": ["b"], "dtype": "f32", "out_dtype": "bf16"},
 {"id": "h", "kind": "vector", "op": "add", "elements": 1376256, "deps": ["g", "a"]}]}
JSON
small=(--config $v3 --set hbm.rows=64)
"$bin" run "${small[@]}" --trace "$tmp/remat.json" --quiet --report "$tmp/remat_r.json" \
    > /dev/null 2> "$tmp/remat_err.txt" || fatal "run with rematerialisation exited with $?"
grep -q "^warning: .* 1 vector op recomputed before its late consumers" "$tmp/remat_err.txt" ||
    fatal "no rematerialisation warning: $(cat "$tmp/remat_err.txt")"
python3 - "$tmp/remat_r.json" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
ids = [o["id"] for o in r["ops"]]
if "b.remat" not in ids or ids.index("b.remat") != ids.index("g") - 1:
    sys.exit(f"FAIL b.remat not just before g: {ids}")
if not any("recomputed" in w for w in r["warnings"]): sys.exit("FAIL no warning in the report")
if r["trace"]["rematerialized_ops"] != 1: sys.exit(f"FAIL trace.rematerialized_ops {r['trace']}")
PY
"$bin" trace check "${small[@]}" --trace "$tmp/remat.json" | grep -q "after recomputing 1 op as XLA rematerialises" ||
    fatal "trace check does not report the rematerialisation"
"$bin" run "${small[@]}" --set lowering.rematerialize=false --trace "$tmp/remat.json" --quiet \
    > /dev/null 2> "$tmp/remat_off.txt" && fatal "rematerialize=false: the program ran"
grep -q 'op "big": resource exhausted' "$tmp/remat_off.txt" ||
    fatal "rematerialize=false: $(cat "$tmp/remat_off.txt")"
echo "ok: rematerialisation recomputes b before g, reported by run and trace check"
