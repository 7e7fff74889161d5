#!/usr/bin/env bash
# Softmax costs the same through the trace op and through the HLO path (#36): a one-op
# `softmax` trace and jax.nn.softmax's HLO (max-reduce, exp(x - max), sum-reduce, divide by the
# broadcast sum), f32 and bf16, on one v3 core. Both move the bytes XLA's three kernels move:
# x read by the max and by the exp kernel, e = exp(x - max) written once (exp is not
# duplicated into its two users) and read once by the quotient, the result written once:
# 3 x and 2 x rows x cols x element bytes (the HLO path also writes the two per-row
# statistics, 4 B per row each in their type, which the trace op leaves out). Their times agree
# within 5%.
# Usage: softmax_forms.sh path/to/tpusim (from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rows=2048
cols=2048
for dt in f32 bf16; do
    e=4
    [ "$dt" = bf16 ] && e=2
    sed "s/f32\[/$dt[/g; s/ROWS/$rows/g; s/COLS/$cols/g" tests/data/hlo/softmax/jax_softmax.hlo.in \
        >"$tmp/sm.hlo"
    cat >"$tmp/sm.json" <<JSON
{"format": "tpusim.trace", "version": 1, "name": "softmax", "cores": 1,
 "ops": [{"id": "y", "kind": "vector", "op": "softmax", "rows": $rows, "cols": $cols, "dtype": "$dt"}]}
JSON
    timeout "$hang" "$bin" run -q --config configs/tpu_v3_8.json --trace "$tmp/sm.json" \
        --report "$tmp/trace.json" >/dev/null 2>"$tmp/err" || fatal "$dt trace: $(tail -c 300 "$tmp/err")"
    timeout "$hang" "$bin" run -q --config configs/tpu_v3_8.json --hlo "$tmp/sm.hlo" \
        --report "$tmp/hlo.json" >/dev/null 2>"$tmp/err" || fatal "$dt hlo: $(tail -c 300 "$tmp/err")"
    out=$(python3 - "$tmp/trace.json" "$tmp/hlo.json" "$rows" "$cols" "$e" <<'PY'
import json, sys
t, h = (json.load(open(f)) for f in sys.argv[1:3])
rows, cols, e = map(int, sys.argv[3:6])
n = rows * cols * e
errs = []
for name, r, extra in (("trace op", t, 0), ("HLO", h, 2 * rows * e)):
    got = (r["hbm"]["bytes_read"], r["hbm"]["bytes_written"])
    want = (3 * n, 2 * n + extra)
    if got != want:
        errs.append(f"{name}: HBM read/written {got}, XLA's three kernels move {want}")
ratio = t["cycles"] / h["cycles"]
if not 0.95 <= ratio <= 1.05:
    errs.append(f"trace op {t['cycles']} cycles, HLO {h['cycles']}: more than 5% apart")
print("; ".join(errs) if errs else f"ok {t['cycles']} / {h['cycles']} cycles ({ratio:.3f})")
PY
)
    if [[ $out == ok* ]]; then
        echo "$dt: $out"
        passes=$((passes + 1))
    else
        echo "FAIL $dt: $out"
        fails=$((fails + 1))
    fi
done
finish
