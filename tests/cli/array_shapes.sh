#!/usr/bin/env bash
# MXU arrays of any shape (issue 13): `bench mxu` and `run` accept 96 x 96, 8 x 6 and 128 x 96
# arrays, and the PE-by-PE model gives the same cycles as the tile model on each. The GEMM
# spans several weight tiles with ragged edges (K and N not multiples of the array).
# Usage: array_shapes.sh path/to/tpusim (run from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
v3=configs/tpu_v3_8.json
status=0
printf '{"format": "tpusim.trace", "version": 1, "name": "mm", "cores": 1, "ops": [{"id": "mm", "kind": "matmul", "m": 64, "k": 200, "n": 150, "dtype": "bf16"}]}\n' > "$tmp/mm.json"

for shape in 96x96 8x6 128x96; do
    rows=${shape%x*} cols=${shape#*x}
    set_shape=(--set "mxu.rows=$rows" --set "mxu.cols=$cols")
    for f in tile pe; do
        if ! "$bin" bench mxu --config $v3 "${set_shape[@]}" --m 64 --k 200 --n 150 --fidelity $f \
            --json > "$tmp/bench_$f.json"; then
            echo "FAIL bench mxu $shape $f: exit $?"
            status=1
        fi
        if ! "$bin" run --config $v3 --trace "$tmp/mm.json" "${set_shape[@]}" --fidelity $f \
            --quiet --json > "$tmp/run_$f.json"; then
            echo "FAIL run $shape $f: exit $?"
            status=1
        fi
    done
    python3 - "$tmp" "$shape" <<'PY' || status=1
import json, sys
d, shape = sys.argv[1], sys.argv[2]
load = lambda n: json.load(open(f"{d}/{n}.json"))
bt, bp, rt, rp = load("bench_tile"), load("bench_pe"), load("run_tile"), load("run_pe")
ok = True
if bt["cycles"] != bp["cycles"] or bp.get("bit_exact") is False:
    print(f"FAIL bench mxu {shape}: tile {bt['cycles']} pe {bp['cycles']}"); ok = False
if rt["cycles"] != rp["cycles"]:
    print(f"FAIL run {shape}: tile {rt['cycles']} pe {rp['cycles']}"); ok = False
if f"{rt['config']['mxu']['rows']}x{rt['config']['mxu']['cols']}" != shape:
    print(f"FAIL run {shape}: the report's config is not the array asked for"); ok = False
sys.exit(0 if ok else 1)
PY
done
[ $status -eq 0 ] && echo "array shapes: 96x96, 8x6, 128x96 accepted; pe == tile"
exit $status
