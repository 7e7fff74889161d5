#!/usr/bin/env bash
# Every whole-module HLO sample in tests/data/hlo/ replays with `tpusim run --hlo` and exit 0,
# listing no opcode as unknown; files with several modules (lit tests split by "// -----")
# and a cut-off one are rejected with a located error. The whole models are checked through
# import and lowering (`trace check`), as a replay takes seconds to minutes each
# (scripts/hlo_replay.sh replays them). Then `import hlo` + `run --trace` must give the same
# cycles as `run --hlo`, and the matrix FLOPs of MobileNetV2 and the Llama-3 8B 1x4 step must
# equal an independent count (hlo_flops.py).
# Usage: hlo_samples.sh path/to/tpusim (run from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# A hang detector, not a time bound: each command takes seconds here and about 10x that
# under the sanitizers, on a machine that may be loaded (TPUSIM_HANG_SECONDS overrides).
v3=configs/tpu_v3_8.json
v2=configs/tpu_v2_8.json


# Checked by import + lowering (trace check) instead of a full replay, because their replay
# takes more than a few seconds each (docs/hlo.md, "Limits").
check_only=" gemma3_1b_flax_call nv_maxtext_1n1g_jit_train_step_before_optimization "
check_only+="mobilenet_v2 hlo_llama3_8b_cp_bf16_1x4 "
check_only+="resnet50_dp8.before_optimizations resnet50_dp8.after_spmd_partitioning "
check_only+="resnet_unet_dp8.before_optimizations resnet_unet_dp8.after_spmd_partitioning "
check_only+="roberta_base_quest_dp8.before_optimizations roberta_base_quest_dp8.after_spmd_partitioning "
check_only+="lstm_imdb_dp8.before_optimizations lstm_imdb_dp8.after_spmd_partitioning "
check_only+="hlo_cost_analysis_test__L1021__FusionCostAnalysis.NestedFusionFeedsMultipleUsers "
# Not whole modules: cut off before the end of their computation when extracted from the test.
not_whole=" latency_hiding_scheduler_test__L5978__LatencyHidingSchedulerTest.MemoryPressureTrackingWithAsyncCollective "

for f in tests/data/hlo/*/*.hlo; do
    stem=$(basename "$f" .hlo)
    modules=$(grep -c '^ *HloModule' "$f")
    if [ "$modules" -gt 1 ] || [[ $not_whole == *" $stem "* ]]; then
        # Several modules (lit tests split by "// -----") or a cut-off module: a located error.
        err=$(timeout "$hang" "$bin" trace check --hlo "$f" 2>&1 >/dev/null)
        rc=$?
        if [ $rc -ne 2 ] || ! [[ "$err" =~ ^error:\ $f:[0-9]+:[0-9]+:\  ]]; then
            fail "$f: not a whole module: rc=$rc $err"
        else
            passes=$((passes + 1))
        fi
        continue
    fi
    # The smallest board with the module's devices: a v3-8, else the 32-core slice, else (the
    # 1024-core pod config) import and lowering only. --while-trips applies only to loops
    # whose trip count the module does not tell.
    cmd=(run -q)
    cfg=$v3
    [[ $check_only == *" $stem "* ]] && cmd=(trace check)
    out=$(timeout "$hang" "$bin" "${cmd[@]}" --config $v3 --while-trips 3 --hlo "$f" 2>&1)
    rc=$?
    if [ $rc -eq 2 ] && [[ "$out" =~ program\ for\ ([0-9]+)\ devices ]]; then
        cfg=configs/tpu_v3_32.json
        [ "${BASH_REMATCH[1]}" -gt 32 ] && cfg=configs/tpu_v3_1024.json && cmd=(trace check)
        out=$(timeout "$hang" "$bin" "${cmd[@]}" --config $cfg --while-trips 3 --hlo "$f" 2>&1)
        rc=$?
    fi
    # The HBM footprint check (program/hbm_footprint) rejects some imported whole models as
    # larger than a core's HBM (Llama-3 8B 1x4: 22.4 GiB of entry parameters; the others:
    # live activations without input_output_alias or rematerialisation; hlo_replays.sh lists
    # them). Their import and lowering are checked here with 32x the rows.
    if [ $rc -eq 2 ] && [[ "$out" == *"resource exhausted"* ]]; then
        echo "NOTE $stem: over a core's HBM by the footprint check; checked with hbm.rows x32"
        out=$(timeout "$hang" "$bin" "${cmd[@]}" --config "${cfg:-$v3}" --set hbm.rows=1048576 \
            --while-trips 3 --hlo "$f" 2>&1)
        rc=$?
    fi
    # Llama-3.1 70B 16x8 needs 16.25 GiB per core at its peak (12.3 GiB of entry parameters),
    # over a v3 core's 16 GiB even so; its import is checked by `import hlo` instead.
    if [ $rc -eq 2 ] && [[ $stem == hlo_llama31_70b_bf16_16x8 && "$out" == *"resource exhausted"* ]]; then
        out=$(timeout "$hang" "$bin" import hlo --config "$cfg" --while-trips 3 "$f" 2>&1 >/dev/null)
        rc=$?
    fi
    if [ $rc -ne 0 ] || grep -qi 'unknown' <<<"$out"; then
        fail "$f: rc=$rc $(tail -c 300 <<<"$out")"
    else
        passes=$((passes + 1))
    fi
done

# import + run --trace == run --hlo (cycles), on fused TPU modules, a pre-optimisation one and
# while modules (trace loops, format version 2).
for f in tests/data/hlo/xla_tests_tpu_extracted/hlo_isolation_test_base_test__L140__HloIsolationTest.TestOutputIsReduce.hlo \
    tests/data/hlo/xla_repo_small_tests/xla_tools_multihost_hlo_runner_data_multiple_gemm_fusions.hlo \
    tests/data/hlo/xla_tests_tpu_extracted/while_loop_unroller_test__L1611__WhileLoopUnrollerTest.SymmetricMatMul.hlo \
    tests/data/hlo_loops/rnn_while.hlo; do
    "$bin" import hlo "$f" --config $v3 --while-trips 3 -o "$tmp/t.json" 2>/dev/null || fail "import $f"
    a=$("$bin" run --config $v3 -q --json --while-trips 3 --hlo "$f" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cycles"])')
    b=$("$bin" run --config $v3 -q --json --trace "$tmp/t.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cycles"])')
    if [ -z "$a" ] || [ "$a" != "$b" ]; then fail "$f: run --hlo $a cycles, import + run --trace $b"; else passes=$((passes + 1)); fi
done

# MobileNetV2 and the Llama-3 8B 1x4 step: matrix FLOPs equal the independent count.
for f in tests/data/hlo/xla_repo_models_preopt/mobilenet_v2.hlo \
    tests/data/hlo/xla_repo_models_preopt/hlo_llama3_8b_cp_bf16_1x4.hlo; do
    if python3 tests/cli/hlo_flops.py "$f" "$bin" --config $v3 --set hbm.rows=1048576 >/dev/null; then
        passes=$((passes + 1))
    else
        fail "flops $f"
    fi
done

echo "hlo samples: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
