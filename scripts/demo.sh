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

section "Replay: one BERT-base encoder layer, forward, seq 512, batch 8, on one v3 TensorCore"
"$tpusim" run --config configs/tpu_v3_8.json --trace traces/bert_base_layer_fwd.json \
    --timeline build/bert_layer.trace.json --report build/bert_layer.json
echo "(timeline: build/bert_layer.trace.json, open it in https://ui.perfetto.dev)"

section "Replay: data-parallel training step on all 8 cores of a v3-8 (gradient all-reduce on the ICI)"
"$tpusim" run --config configs/tpu_v3_8.json --trace traces/data_parallel_step.json

section "bench peak: one large GEMM on every core, through HBM, DMA, VMEM and the MXUs"
"$tpusim" bench peak --config configs/tpu_v2_8.json
"$tpusim" bench peak --config configs/tpu_v3_8.json
