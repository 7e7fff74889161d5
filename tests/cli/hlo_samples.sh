#!/usr/bin/env bash
# Every whole-module HLO sample in tests/data/hlo/ replays with `tpusim run --hlo` and exit 0,
# listing no opcode as unknown; files with several modules (lit tests split by "// -----")
# are rejected with a located error. The big pre-optimisation models are checked through
# import and lowering only (`trace check`) where a replay takes more than a few seconds, and
# the 128-device Llama-3.1 70B step on the 1024-core pod config. Then `import hlo` +
# `run --trace` must give the same cycles as `run --hlo`, and the FLOPs of MobileNetV2 and the
# Llama-3 8B 1x4 step must equal an independent count (hlo_flops.py).
# Usage: hlo_samples.sh path/to/tpusim (run from the source root).
set -u
bin=$1
fails=0
passes=0
v3=configs/tpu_v3_8.json
v2=configs/tpu_v2_8.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() {
    echo "FAIL $*"
    fails=$((fails + 1))
}

# Checked by import + lowering (trace check) instead of a full replay: replays of a few
# seconds or more each (timings in docs/hlo.md).
check_only=" gemma3_1b_flax_call nv_maxtext_1n1g_jit_train_step_before_optimization "
check_only+="resnet50_dp8.before_optimizations resnet50_dp8.after_spmd_partitioning "
check_only+="resnet_unet_dp8.before_optimizations resnet_unet_dp8.after_spmd_partitioning "
check_only+="roberta_base_quest_dp8.before_optimizations roberta_base_quest_dp8.after_spmd_partitioning "
check_only+="hlo_llama31_70b_bf16_16x8 "

for f in tests/data/hlo/*/*.hlo; do
    stem=$(basename "$f" .hlo)
    modules=$(grep -c '^ *HloModule' "$f")
    cfg=$v3
    [[ $stem == hlo_llama31_70b_bf16_16x8 ]] && cfg=configs/tpu_v3_1024.json
    if [ "$modules" -gt 1 ]; then
        err=$(timeout 20 "$bin" trace check --hlo "$f" 2>&1 >/dev/null)
        rc=$?
        if [ $rc -ne 2 ] || [[ "$err" != "error: $f:"*"a second HloModule in one file"* ]]; then
            fail "$f: several modules: rc=$rc $err"
        else
            passes=$((passes + 1))
        fi
        continue
    fi
    if [[ $check_only == *" $stem "* ]]; then
        out=$(timeout 60 "$bin" trace check --config "$cfg" --hlo "$f" 2>&1)
    else
        out=$(timeout 60 "$bin" run --config "$cfg" -q --hlo "$f" 2>&1)
    fi
    rc=$?
    if [ $rc -ne 0 ] || grep -qi 'unknown' <<<"$out"; then
        fail "$f: rc=$rc $(tail -c 300 <<<"$out")"
    else
        passes=$((passes + 1))
    fi
done

# import + run --trace == run --hlo (cycles), on a fused TPU module and a pre-optimisation one.
for f in tests/data/hlo/xla_tests_tpu_extracted/hlo_isolation_test_base_test__L140__HloIsolationTest.TestOutputIsReduce.hlo \
    tests/data/hlo/jax_seed_workloads/lstm_imdb_dp8.after_spmd_partitioning.hlo; do
    "$bin" import hlo "$f" -o "$tmp/t.json" 2>/dev/null || fail "import $f"
    a=$("$bin" run --config $v3 -q --json --hlo "$f" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cycles"])')
    b=$("$bin" run --config $v3 -q --json --trace "$tmp/t.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cycles"])')
    if [ -z "$a" ] || [ "$a" != "$b" ]; then fail "$f: run --hlo $a cycles, import + run --trace $b"; else passes=$((passes + 1)); fi
done

# MobileNetV2 and Llama-3 8B 1x4 end to end on v2-8 and v3-8, FLOPs against the independent count.
for f in tests/data/hlo/xla_repo_models_preopt/mobilenet_v2.hlo \
    tests/data/hlo/xla_repo_models_preopt/hlo_llama3_8b_cp_bf16_1x4.hlo; do
    python3 tests/cli/hlo_flops.py "$f" "$bin" --config $v3 >/dev/null || fail "flops $f"
    for cfg in $v2 $v3; do
        timeout 120 "$bin" run --config $cfg -q --hlo "$f" >/dev/null || fail "run $f on $cfg"
    done
    passes=$((passes + 1))
done

echo "hlo samples: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
