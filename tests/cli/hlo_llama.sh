#!/usr/bin/env bash
# Llama-3 8B 1x4 (a JAX training step after SPMD partitioning, 4 partitions) on a v2-8 and a
# v3-8. One device's shard needs 53.6 GiB of HBM at its peak (22.4 GiB of f32 weights and
# optimizer state, the rest live activations), more than a v2 core (8 GiB) or a v3 core
# (16 GiB) holds: on the real boards it is the located "resource exhausted" error, and it
# replays on configs/tpu_v{2,3}_8_hbm128.json, the same chips with 128 GiB of HBM per chip
# as an explicit what-if (docs/hlo.md, "Llama-3 8B 1x4"). On both what-if boards: exit 0,
# no unknown opcode, the module's 4 partitions on 4 cores, and the matrix FLOPs per core
# equal to tests/cli/hlo_flops.py's count from the dot and convolution shapes alone. The
# check is `trace check` (import, lowering, HBM check: about a second); the full simulation
# takes about 11 s per board, so scripts/hlo_replay.sh runs it (docs/hlo.md has its figures).
# Usage: hlo_llama.sh path/to/tpusim (from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
f=tests/data/hlo/xla_repo_models_preopt/hlo_llama3_8b_cp_bf16_1x4.hlo
want=$(python3 tests/cli/hlo_flops.py "$f") || exit 1
errf=$tmp/err
for chip in v2 v3; do
    # The real board: the footprint check refuses the program, naming the op and the sizes.
    err=$("$bin" trace check --config configs/tpu_${chip}_8.json --hlo "$f" 2>&1 >/dev/null)
    rc=$?
    err=$(grep -v ': warning: ' <<<"$err")
    if [ $rc -ne 2 ] || ! [[ "$err" =~ ^error:\ $f:\ op\ \"[^\"]+\":\ resource\ exhausted:\ core\ 0\ needs ]]; then
        echo "FAIL tpu_${chip}_8: expected the located resource exhausted error, got rc=$rc $(head -c 300 <<<"$err")"
        fails=$((fails + 1))
    fi
    # The what-if board: same compute, bandwidth and ICI, more HBM.
    cfg=configs/tpu_${chip}_8_hbm128.json
    out=$("$bin" trace check --config "$cfg" --hlo "$f" --json 2>"$errf")
    rc=$?
    err=$(grep -v ': warning: ' "$errf")
    if [ $rc -ne 0 ] || grep -qi 'unknown' <<<"$err$out"; then
        echo "FAIL $cfg: rc=$rc $(head -c 300 <<<"$err")"
        fails=$((fails + 1))
        continue
    fi
    got=$(python3 -c '
import json, sys
j = json.loads(sys.stdin.read())
# 4 partitions on 4 cores; a footprint over the real core (so the what-if is what fits it).
assert j["cores"] == 4, j["cores"]
assert j["hbm_footprint_bytes_per_core"] > 16 * 2**30, j["hbm_footprint_bytes_per_core"]
print(int(j["flops_by_kind"]["matmul"]) // j["cores"])' <<<"$out") || { fails=$((fails + 1)); continue; }
    if [ "$got" != "$want" ]; then
        echo "FAIL $cfg: $got matrix FLOPs per core, the shapes say $want"
        fails=$((fails + 1))
    else
        echo "$cfg: 4 cores, $got matrix FLOPs per core as the shapes count"
    fi
done
[ "$fails" -eq 0 ]
