#!/usr/bin/env bash
# The main demo on a fresh machine: install what is missing, build, and show what tpusim
# derives for both boards. Later issues add trace replays and benchmarks below.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
echo "demo: building build/tpusim ..." >&2
TARGETS=tpusim bash scripts/build.sh >/dev/null
tpusim=build/tpusim

section() { printf '\n=== %s ===\n' "$*"; }

section "TPU v2-8: figures derived from configs/tpu_v2_8.json"
"$tpusim" info --config configs/tpu_v2_8.json

section "TPU v3-8: figures derived from configs/tpu_v3_8.json"
"$tpusim" info --config configs/tpu_v3_8.json

section "What-if: v3-8 with 256 x 256 MXUs (configs/tpu_v3_8_mxu256.json extends v3-8)"
"$tpusim" info --config configs/tpu_v3_8_mxu256.json

# ---------------------------------------------------------------------------------------
# Replays and microbenchmarks go here (later issues): e.g.
#   section "bench mxu ..."; "$tpusim" bench mxu --config configs/tpu_v3_8.json ...
#   section "replay ..."; "$tpusim" run --config configs/tpu_v3_8.json --trace traces/...
# ---------------------------------------------------------------------------------------
