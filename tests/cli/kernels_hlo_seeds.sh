#!/usr/bin/env bash
# Kernel rows on the larger HLO seed modules (ResNet-50 and the ResNet-UNet after SPMD
# partitioning, 5-30 s each): the checks of kernels.sh (tests/cli/kernels_check.py) on the
# report, the table and the --ops CSV. Usage: kernels_hlo_seeds.sh path/to/tpusim.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
d=tests/data/hlo/jax_seed_workloads
for m in resnet50_dp8 resnet_unet_dp8; do
    if ! timeout "$hang" "$bin" run -q --config configs/tpu_v3_8.json \
        --hlo "$d/$m.after_spmd_partitioning.hlo" --report "$tmp/$m.json" --ops "$tmp/$m.csv" \
        > "$tmp/$m.txt"; then
        fail "$m: run failed"
        continue
    fi
    if python3 tests/cli/kernels_check.py "$tmp/$m.json" --text "$tmp/$m.txt" --csv "$tmp/$m.csv"; then
        passes=$((passes + 1))
    else
        fails=$((fails + 1))
    fi
done
finish
