#!/usr/bin/env bash
# Whole-model HLO samples replayed end to end (`tpusim run --hlo` on a v3-8, the full
# simulation, not only import and lowering as in hlo_samples.sh): exit 0 and no opcode listed
# as unknown. A model whose live HBM footprint exceeds a v3-8 core's 16 GiB (docs/program.md,
# "HBM capacity") must instead be the located exit-2 "resource exhausted" error naming an op;
# the list below says which, and the test fails if one of them starts to fit (update the list)
# or one that fits stops fitting. Usage: hlo_replays.sh path/to/tpusim (from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# A hang detector, not a time bound: each command takes seconds here and about 10x that
# under the sanitizers, on a machine that may be loaded (TPUSIM_HANG_SECONDS overrides).
v3=configs/tpu_v3_8.json
d=tests/data/hlo
fits="$d/jax_seed_workloads/lstm_imdb_dp8.after_spmd_partitioning.hlo
$d/jax_seed_workloads/lstm_imdb_dp8.before_optimizations.hlo
$d/jax_seed_workloads/roberta_base_quest_dp8.after_spmd_partitioning.hlo
$d/jax_seed_workloads/roberta_base_quest_dp8.before_optimizations.hlo
$d/xla_repo_models_preopt/gemma3_1b_flax_call.hlo"
# MobileNetV2 fits (8.0 GiB at its peak) and has its own test, hlo_mobilenet.sh.
# These fit too (peak live HBM per core: ResNet-50 9.9 GiB after SPMD partitioning, 12.4
# before; the UNet 9.4 / 11.3) but take 25-30 s each to replay, too long to add four to the
# suite: `trace check --lower` runs their import, HBM footprint check and lowering (exit 0,
# no unknown opcode), without simulating; scripts/hlo_replay.sh replays them end to end
# (docs/hlo.md).
checked="$d/jax_seed_workloads/resnet50_dp8.after_spmd_partitioning.hlo
$d/jax_seed_workloads/resnet50_dp8.before_optimizations.hlo
$d/jax_seed_workloads/resnet_unet_dp8.after_spmd_partitioning.hlo
$d/jax_seed_workloads/resnet_unet_dp8.before_optimizations.hlo"
# Over 16 GiB per core by the check: Llama-3 8B 1x4 has 22.4 GiB of entry parameters (f32
# weights and optimizer state per device), more than a core holds (hlo_llama.sh replays it on
# the what-if boards with more HBM, configs/tpu_v{2,3}_8_hbm128.json); MaxText holds 24.7 GiB
# at its peak (its 7.5 GiB of parameters and 17.2 GiB of live results; no
# rematerialisation: docs/hlo.md, "Limits").
over="$d/xla_repo_models_preopt/hlo_llama3_8b_cp_bf16_1x4.hlo
$d/xla_repo_models_preopt/nv_maxtext_1n1g_jit_train_step_before_optimization.hlo"
# Each module must exit 0 with no opcode listed as unknown: `trace check --lower` (import,
# the HBM check and the lowering) for $checked, a whole `run` for $fits, whose report must show no DMA chunk refused by
# the HBM (dma.hbm_errors: the lowering keeps every descriptor inside its buffer; RoBERTa's
# replay had 70 per odd core, reads past the end of the chip's HBM, before the import said
# which buffer each operand is in).
report=$tmp/report.json
expect_clean() {  # COMMAND FILES...
    local cmd=$1 f out rc errs
    shift
    for f in "$@"; do
        rm -f "$report"
        if [ "$cmd" = "run -q" ]; then
            out=$(timeout "$hang" "$bin" $cmd --config $v3 --hlo "$f" --report "$report" 2>&1)
        else
            out=$(timeout "$hang" "$bin" $cmd --config $v3 --hlo "$f" 2>&1)
        fi
        rc=$?
        errs=0
        if [ -s "$report" ]; then
            errs=$(python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))["stats"]
print(sum(c["dma"]["hbm_errors"] for k, chip in s.items() if k.startswith("chip")
          for n, c in chip.items() if n.startswith("core")))' "$report")
        fi
        if [ $rc -ne 0 ] || grep -qi 'unknown' <<<"$out" || [ "$errs" != 0 ]; then
            echo "FAIL $f: rc=$rc hbm_errors=$errs $(tail -c 300 <<<"$out")"
            fails=$((fails + 1))
        else
            passes=$((passes + 1))
        fi
    done
}
# shellcheck disable=SC2086
expect_clean "trace check --lower" $checked
# shellcheck disable=SC2086
expect_clean "run -q" $fits
for f in $over; do
    err=$(timeout "$hang" "$bin" run -q --config $v3 --hlo "$f" 2>&1 >/dev/null)
    rc=$?
    err=$(grep -v ': warning: ' <<<"$err")
    if [ $rc -ne 2 ] || ! [[ "$err" =~ ^error:\ $f:\ op\ \"[^\"]+\":\ resource\ exhausted:\ core\ 0\ needs ]]; then
        echo "FAIL $f: expected the located resource exhausted error, got: $(head -c 300 <<<"$err")"
        fails=$((fails + 1))
    else
        passes=$((passes + 1))
    fi
done
echo "hlo replays: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
