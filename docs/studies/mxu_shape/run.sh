#!/usr/bin/env bash
# MXU 128 x 128 vs 256 x 256 vs several MXUs per core: docs/studies/mxu_shape/run.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
plot bars --x mxu --y achieved_bf16_tflops --series workload \
    --order "1 x 128x128" "2 x 128x128" "4 x 128x128" "1 x 256x256" \
    --title "achieved bf16 TFLOPS per core by MXU organisation" -o tflops
plot bars --x mxu --y seconds --series workload --relative-to "2 x 128x128" \
    --order "1 x 128x128" "2 x 128x128" "4 x 128x128" "1 x 256x256" \
    --ylabel "step time relative to 2 x 128x128 (v3)" --title "time relative to the v3 core" -o time
