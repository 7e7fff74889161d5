#!/usr/bin/env bash
# scripts/plot.py's own bad input gets one "error:" line and exit status 1, never a traceback
# (a python3 without matplotlib, a missing report or database, a file that is not one, a
# missing output folder); the roofline is per core (the core's HBM share and its MXU and VPU
# roofs) and leaves out fused ops; labels count units right. Usage: plot.sh path/to/tpusim
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
plot=scripts/plot.py
# expect_plot_error NAME WANT -- plot.py ARGS...
expect_plot_error() {
    local name=$1 want=$2 out rc
    shift 3
    out=$("$@" 2>&1)
    rc=$?
    if [ "$rc" -ne 1 ] || [ "$(grep -c . <<<"$out")" -ne 1 ] || [[ "$out" != error:* ]] ||
        [[ "$out" != *"$want"* ]]; then
        fail "$name: rc=$rc, want one line with '$want', got: $(head -c 400 <<<"$out")"
    else
        passes=$((passes + 1))
    fi
}
"$bin" run --config configs/tpu_v3_8.json --trace traces/bert_base_layer_fwd.json -q \
    --report "$tmp/r.json" >/dev/null || fatal "tpusim run exited with $?"
echo hi > "$tmp/not.sqlite"
echo '{' > "$tmp/bad.json"
# The system python3 with -S: no site packages, so no matplotlib, and no other python3 to run
# under. (A python3 earlier on PATH without matplotlib runs plot.py under /usr/bin/python3.)
expect_plot_error "no matplotlib" "has no matplotlib: install it with" -- \
    /usr/bin/python3 -S $plot roofline "$tmp/r.json" -o "$tmp/x"
expect_plot_error "missing report" "$tmp/none.json: no such file or directory" -- \
    python3 $plot roofline "$tmp/none.json" -o "$tmp/x"
expect_plot_error "report not JSON" "$tmp/bad.json: line 2, column 1: not JSON" -- \
    python3 $plot utilization "$tmp/bad.json" -o "$tmp/x"
expect_plot_error "missing database" "$tmp/none.sqlite: no such database file" -- \
    python3 $plot curves "$tmp/none.sqlite" --x a --y b -o "$tmp/x"
expect_plot_error "not a database" "$tmp/not.sqlite: not a tpusim sweep database" -- \
    python3 $plot heatmap "$tmp/not.sqlite" --x a --y b --z c -o "$tmp/x"
expect_plot_error "missing output folder" "the folder $tmp/nodir does not exist" -- \
    python3 $plot roofline "$tmp/r.json" -o "$tmp/nodir/x"

python3 $plot roofline "$tmp/r.json" -o "$tmp/roof" --formats svg >/dev/null || fail "roofline"
python3 $plot utilization "$tmp/r.json" -o "$tmp/util" --formats svg >/dev/null || fail "utilization"
for want in "MXU roof: 61.6 TFLOPS, HBM 450 GB/s per core" "VPU roof: 1.9 TFLOPS" \
    "over the kernel's self time"; do
    grep -q "$want" "$tmp/roof.svg" && passes=$((passes + 1)) || fail "roofline: no '$want'"
done
# A report without kernel rows (older tpusim): unfused ops by their spans.
python3 -c 'import json, sys
r = json.load(open(sys.argv[1])); r.pop("kernels", None); json.dump(r, open(sys.argv[2], "w"))' \
    "$tmp/r.json" "$tmp/old.json"
python3 $plot roofline "$tmp/old.json" -o "$tmp/roof_old" --formats svg >/dev/null ||
    fail "roofline of a report without kernels"
for want in "fused ops left out" "over the op's span"; do
    grep -q "$want" "$tmp/roof_old.svg" && passes=$((passes + 1)) || fail "old roofline: no '$want'"
done
grep -q "VPU (1 unit)" "$tmp/util.svg" && passes=$((passes + 1)) || fail "utilization: 'VPU (1 unit)'"
finish
