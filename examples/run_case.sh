#!/usr/bin/env bash
# Runs one of the seed case studies (docs/case-studies.md) end to end: generates the step
# program with scripts/gen_trace.py, then `tpusim train` with the case's config and run
# description. Extra arguments go to `tpusim train` (--json, --no-reuse, --set host.vcpus=4 ...).
#   examples/run_case.sh lstm_imdb|resnet_unet|roberta_quest|kaggle_classifier [args...]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
case_name=${1:?usage: examples/run_case.sh lstm_imdb|resnet_unet|roberta_quest|kaggle_classifier}
shift
bin=${TPUSIM_BIN:-build/tpusim}
out=${TPUSIM_CASE_DIR:-build/examples}
mkdir -p "$out"
gen=scripts/gen_trace.py
trace=$out/$case_name.trace.json
eval_trace=$out/$case_name.eval.json
eval_args=()
case $case_name in
lstm_imdb)  # Embedding(10000,128) -> LSTM(32) -> Dense(1), seq 500, 128 per core (seed 004)
    cfg=configs/colab_v2_8.json
    python3 $gen lstm --batch 128 --seq 500 --embedding 128 --units 32 --vocab 10000 -o "$trace"
    # The validation step (validation_split=0.2, every epoch): the forward pass at 128 per core.
    python3 $gen lstm --batch 128 --seq 500 --embedding 128 --units 32 --vocab 10000 \
        --forward-only -o "$eval_trace"
    eval_args=(--eval-trace "$eval_trace") ;;
resnet_unet)  # ~31M-parameter UNet, 96x96, 6 input channels, mask + depth, 32 per core (seed 001)
    # The notebook ran on Colab's high-RAM TPU runtime (metadata machine_shape "hm"): 40 vCPUs
    # (seed 002), hence 32 Gbit/s of VM egress (docs/config.md, host.network_bandwidth_gbps).
    cfg=configs/colab_v2_8.json
    set -- --set host.vcpus=40 --set host.network_bandwidth_gbps=4 "$@"
    python3 $gen unet --batch 32 --image 96 --in-channels 6 --classes 2 -o "$trace" ;;
roberta_quest)  # Siamese RoBERTa-base (12 layers, 768 hidden, vocab 50265) on a question of 416
    # and an answer of 480 tokens, 8 per core; a small head (github.com/ceshine/kaggle-quest)
    cfg=configs/colab_v2_8.json
    python3 $gen bert --batch 8 --seq 416 --seq2 480 --vocab 50265 --predictions 1 \
        --activations f32 -o "$trace"
    # The validation step (every 500 steps): the Siamese encoder's forward pass, 16 per core.
    python3 $gen bert --batch 16 --seq 416 --seq2 480 --vocab 50265 --forward-only --activations f32 \
        -o "$eval_trace"
    eval_args=(--eval-trace "$eval_trace") ;;
kaggle_classifier)  # ResNet-50 at 224x224 without space-to-depth (PyTorch), 64 per core (seed 002)
    cfg=configs/kaggle_v3_8.json
    python3 $gen resnet50 --batch 64 --no-space-to-depth -o "$trace" ;;
*)
    echo "error: examples/run_case.sh: unknown case '$case_name'" >&2
    exit 2 ;;
esac
exec "$bin" train --config "$cfg" --trace "$trace" --run "examples/$case_name.run.json" \
    ${eval_args[@]+"${eval_args[@]}"} "$@"
