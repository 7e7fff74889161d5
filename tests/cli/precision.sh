#!/usr/bin/env bash
# A matmul's precision (XLA's PrecisionConfig) as a what-if of time and power (#41): an f32
# GEMM at default, high and highest precision makes 1, 3 and 6 passes through the MXU, so its
# MXU busy time and the MXU part of its energy scale by 3 and 6 against the default run (within
# 1%: the first load and the last write-back do not), while its HBM bytes and useful FLOPs stay.
# An HLO dot's operand_precision={highest,highest} reaches the trace as "precision": "highest".
# Usage: precision.sh path/to/tpusim (from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
for p in default high highest; do
    printf '{"format": "tpusim.trace", "version": 1, "name": "p", "cores": 1, "ops": [%s]}\n' \
        "{\"id\": \"mm\", \"kind\": \"matmul\", \"m\": 2048, \"k\": 2048, \"n\": 2048, \"dtype\": \"f32\", \"precision\": \"$p\"}" \
        >"$tmp/$p.json"
    "$bin" run -q --config configs/tpu_v3_8.json --trace "$tmp/$p.json" --report "$tmp/r_$p.json" \
        >/dev/null 2>"$tmp/err" || fatal "$p: $(cat "$tmp/err")"
done
cat >"$tmp/dot.hlo" <<'HLO'
HloModule m, entry_computation_layout={(f32[256,512]{1,0}, f32[512,128]{1,0})->f32[256,128]{1,0}}

ENTRY main {
  a = f32[256,512]{1,0} parameter(0)
  b = f32[512,128]{1,0} parameter(1)
  ROOT d = f32[256,128]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,highest}
}
HLO
"$bin" import hlo "$tmp/dot.hlo" -o "$tmp/dot.json" >/dev/null 2>"$tmp/err" || fatal "import: $(cat "$tmp/err")"
out=$(python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
r = {p: json.load(open(f"{d}/r_{p}.json")) for p in ("default", "high", "highest")}
errs = []
busy = lambda x: x["utilization"]["mxu_busy"] * x["cycles"]
for p, n in (("high", 3), ("highest", 6)):
    for what, f in (("MXU busy cycles", busy),
                    ("MXU energy", lambda x: x["energy"]["parts_joules"]["mxu"])):
        ratio = f(r[p]) / f(r["default"])
        if abs(ratio - n) > 0.01 * n:
            errs.append(f"{p}: {what} x{ratio:.3f}, want x{n}")
    for k in ("bytes_read", "bytes_written"):
        if r[p]["hbm"][k] != r["default"]["hbm"][k]:
            errs.append(f"{p}: HBM {k} {r[p]['hbm'][k]} != {r['default']['hbm'][k]}")
    if r[p]["flops"] != r["default"]["flops"]:
        errs.append(f"{p}: useful FLOPs {r[p]['flops']} != {r['default']['flops']}")
dot = json.load(open(f"{d}/dot.json"))["ops"]
mm = [o for o in dot if o["kind"] == "matmul"]
if len(mm) != 1 or mm[0].get("precision") != "highest":
    errs.append(f"imported dot: {mm}")
print("; ".join(errs) if errs else
      "ok " + ", ".join(f"{p} {r[p]['seconds'] * 1e3:.3f} ms" for p in r))
PY
)
if [[ $out == ok* ]]; then
    echo "$out"
    passes=$((passes + 1))
else
    echo "FAIL precision: $out"
    fails=$((fails + 1))
fi
finish
