#!/usr/bin/env bash
# MobileNetV2 (PyTorch/XLA training step, batch 96, pre-optimisation HLO) replayed end to end
# on a v3-8: exit 0, no opcode listed as unknown, and the report's matrix FLOPs (dot and
# convolution work on the MXU, useful MACs x 2) equal to the count that tests/cli/hlo_flops.py
# takes from the module's dot and convolution shapes alone (2 x output elements x contracted
# size), not from tpusim's implicit GEMMs. About 5-15 s: label hlo_replay, not
# run under ASan. Usage: hlo_mobilenet.sh path/to/tpusim (from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
f=tests/data/hlo/xla_repo_models_preopt/mobilenet_v2.hlo
report=$tmp/report.json
err=$("$bin" run -q --config configs/tpu_v3_8.json --hlo "$f" --json 2>&1 >"$report")
rc=$?
if [ $rc -ne 0 ] || grep -qi 'unknown' <<<"$err"; then
    echo "FAIL $f: rc=$rc $(grep -v ': warning: ' <<<"$err" | head -c 300)"
    exit 1
fi
want=$(python3 tests/cli/hlo_flops.py "$f") || exit 1
got=$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["mxu_flops"]))' "$report")
if [ "$got" != "$want" ]; then
    echo "FAIL $f: matrix FLOPs $got, the shapes say $want"
    exit 1
fi
echo "mobilenet_v2: replayed, $got matrix FLOPs as the shapes count"
