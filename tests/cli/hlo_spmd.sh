#!/usr/bin/env bash
# The SPMD partitioning pass (docs/hlo.md, "SPMD and collectives") from the command line: a
# data-parallel MLP step written before XLA's partitioner runs per device (the report's hlo
# block says so; the written module's matrix FLOPs, counted by hlo_flops.py, are the global
# module's over num_partitions; its all-reduces are the collectives the report counts), the
# pass turned off runs the global module on every core (N x the matrix FLOPs), a fallback is a located warning counted in the
# report, bad shardings are one located error each, and the written module reads back without
# being partitioned again.
# Usage: hlo_spmd.sh path/to/tpusim (run from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
v3=configs/tpu_v3_8.json
d=tests/data/hlo/spmd
bad=tests/data/hlo_bad
mlp=$d/mlp_dp8_train_step.hlo

field() {  # field REPORT KEY: the hlo block's KEY
    python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))["hlo"][sys.argv[2]]; print(str(v).lower())' "$1" "$2"
}

"$bin" run --config $v3 --hlo $mlp --report "$tmp/on.json" --quiet >/dev/null 2>"$tmp/on.err" ||
    fatal "run $mlp"
"$bin" import hlo $mlp --config $v3 --after-passes "$tmp/after.hlo" -o "$tmp/after.json" \
    >/dev/null 2>&1 || fatal "import $mlp --after-passes"
[ "$(field "$tmp/on.json" spmd_partitioned)" = true ] || fail "spmd_partitioned not true"
inserted=$(grep -c ' all-reduce(' "$tmp/after.hlo")
[ "$inserted" -gt 0 ] || fail "no all-reduce in the partitioned module"
[ "$(field "$tmp/on.json" spmd_collectives_inserted)" = "$inserted" ] ||
    fail "spmd_collectives_inserted $(field "$tmp/on.json" spmd_collectives_inserted), the module has $inserted all-reduces"
[ "$(field "$tmp/on.json" spmd_fallbacks)" = 0 ] || fail "fallbacks on the MLP"
[ -s "$tmp/on.err" ] && fail "warnings on the MLP: $(cat "$tmp/on.err")"
n=$(sed -n 's/.*num_partitions=\([0-9]*\).*/\1/p' $mlp | head -1)
global=$(python3 tests/cli/hlo_flops.py $mlp)
local=$(python3 tests/cli/hlo_flops.py "$tmp/after.hlo")
[ $((local * n)) -eq "$global" ] || fail "per-device FLOPs $local x $n != global $global"
grep -q 'num_partitions=8' "$tmp/after.hlo" || fail "num_partitions not kept"

# Turned off: the global module on every core (no pass, more work per core).
"$bin" run --config $v3 --hlo $mlp --hlo-passes fusion,kernel-graphs,producer-fusion,tile-padding,direct-convolutions,memory-scheduler \
    --report "$tmp/off.json" --quiet >/dev/null 2>&1 || fatal "run with the pass off"
[ "$(field "$tmp/off.json" spmd_partitioned)" = false ] || fail "the pass ran although off"
# The board's matrix FLOPs: per device the global count once over the 8 cores when
# partitioned, every core doing all of it when not.
python3 - "$tmp/on.json" "$tmp/off.json" "$global" "$n" <<'PY' || fail "mxu_flops: partitioned != global count, or off != $n x partitioned"
import json, sys
on, off = (json.load(open(p)) for p in sys.argv[1:3])
g, n = int(sys.argv[3]), int(sys.argv[4])
sys.exit(0 if on["mxu_flops"] == g and off["mxu_flops"] == n * g else 1)
PY
# The written module reads back as a partitioned module: not partitioned again.
"$bin" run --config $v3 --hlo "$tmp/after.hlo" --report "$tmp/again.json" --quiet >/dev/null 2>&1 ||
    fatal "run the written module"
[ "$(field "$tmp/again.json" spmd_partitioned)" = false ] || fail "the written module was partitioned again"

# A fallback: located warnings on stderr, counted in the report.
"$bin" run --config $v3 --hlo $d/fallback_2d_tiling.hlo --report "$tmp/fb.json" --quiet \
    >/dev/null 2>"$tmp/fb.err" || fatal "run the fallback module"
warned=$(grep -c "^$d/fallback_2d_tiling.hlo:[0-9]*:[0-9]*: warning: spmd-partitioner:" "$tmp/fb.err")
[ "$warned" -ge 1 ] || fail "no located warning for the fallback"
[ "$(field "$tmp/fb.json" spmd_fallbacks)" = "$warned" ] || fail "spmd_fallbacks != $warned warnings"

# A real jit module before partitioning: the MaxText step (xla_repo_models_preopt), which
# shards over 8 devices (devices=[8,1,1]<=[8], Sharding custom-calls, a scan loop) but whose
# HloModule line names no num_partitions, given num_partitions=8. Per device it holds 1/8 of
# the matrix FLOPs and fits a v3 core's HBM; replayed whole on every core it does not.
mt=tests/data/hlo/xla_repo_models_preopt/nv_maxtext_1n1g_jit_train_step_before_optimization.hlo
sed '0,/^HloModule jit_train_step, /s//HloModule jit_train_step, num_partitions=8, /' $mt >"$tmp/mt8.hlo"
"$bin" import hlo "$tmp/mt8.hlo" --config $v3 --after-passes "$tmp/mt8.after.hlo" -o "$tmp/mt8.json" \
    >/dev/null 2>"$tmp/mt8.err" || fatal "import the MaxText step with num_partitions=8"
g=$(python3 tests/cli/hlo_flops.py "$tmp/mt8.hlo")
l=$(python3 tests/cli/hlo_flops.py "$tmp/mt8.after.hlo")
[ $((l * 8)) -eq "$g" ] || fail "MaxText per-device FLOPs $l x 8 != $g"
"$bin" trace check --config $v3 --hlo "$tmp/mt8.hlo" >/dev/null 2>&1 || fail "the partitioned MaxText step does not fit a v3 core"
"$bin" trace check --config $v3 --hlo "$tmp/mt8.hlo" --hlo-passes fusion,kernel-graphs,producer-fusion,tile-padding,direct-convolutions,memory-scheduler \
    2>&1 | grep -q "resource exhausted" || fail "the unpartitioned MaxText step fits a v3 core"

# Bad shardings: one located error, exit 2.
expect_error "device count" "$bad/spmd_device_count.hlo:5:38: bad sharding" -- \
    run --config $v3 --hlo $bad/spmd_device_count.hlo
expect_error "malformed sharding" "$bad/spmd_sharding_text.hlo:5:38: bad sharding" -- \
    run --config $v3 --hlo $bad/spmd_sharding_text.hlo
finish
