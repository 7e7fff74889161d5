#!/usr/bin/env bash
# Kernel rows (docs/program.md, "Kernels and the critical-path split"): on every committed
# trace on a v3-8 and a v2-8, on a while loop and on the smaller HLO seed modules (LSTM,
# RoBERTa; the larger ones: kernels_hlo_seeds.sh), the rows' self cycles add up to the run's
# cycles, each op is in exactly one kernel, no fused op has a row (or TFLOPS) of its own, and
# each row's figures are its members' from the report's own `ops`
# (tests/cli/kernels_check.py); the terminal table, --top, the --ops CSV and the timeline's
# kernel track say the same. Usage: kernels.sh path/to/tpusim (from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
check=tests/cli/kernels_check.py

run_and_check() {  # label, --top N, check options, run arguments...
    local label=$1 top=$2 opts=$3
    shift 3
    if ! timeout "$hang" "$bin" run -q "$@" --top "$top" --report "$tmp/$label.json" \
        --ops "$tmp/$label.csv" --timeline "$tmp/$label.tl.json" > "$tmp/$label.txt"; then
        fail "$label: run failed: $*"
        return
    fi
    # shellcheck disable=SC2086
    if python3 $check "$tmp/$label.json" --text "$tmp/$label.txt" --top "$top" \
        --csv "$tmp/$label.csv" --timeline "$tmp/$label.tl.json" $opts; then
        passes=$((passes + 1))
    else
        fails=$((fails + 1))
    fi
}

n=0
for t in traces/*.json; do
    for board in tpu_v3_8 tpu_v2_8; do
        n=$((n + 1))
        # --top alternates between the default and a short table.
        run_and_check "$(basename "$t" .json)_$board" $((n % 2 ? 12 : 3)) "" \
            --config "configs/$board.json" --trace "$t"
    done
done
# A while loop (docs/hlo.md, "Control flow"): its kernels split the loop's time by weight.
run_and_check rnn_while 12 --loop --config configs/tpu_v3_8.json \
    --hlo tests/data/hlo_loops/rnn_while.hlo --while-trips 16
# The same loop as a trace file (format version 2, "loops"), per-trip figures and all.
if "$bin" import hlo --config configs/tpu_v3_8.json tests/data/hlo_loops/rnn_while.hlo \
    --while-trips 16 -o "$tmp/rnn_trace.json" 2>/dev/null; then
    run_and_check rnn_trace 12 --loop --config configs/tpu_v3_8.json --trace "$tmp/rnn_trace.json"
else
    fail "import hlo rnn_while.hlo"
fi
d=tests/data/hlo/jax_seed_workloads
run_and_check lstm 12 "" --config configs/tpu_v3_8.json --hlo $d/lstm_imdb_dp8.after_spmd_partitioning.hlo
run_and_check roberta 5 "" --config configs/tpu_v3_8.json \
    --hlo $d/roberta_base_quest_dp8.after_spmd_partitioning.hlo
finish
