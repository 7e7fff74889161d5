#!/usr/bin/env bash
# v2-8 vs v3-8 per workload: docs/studies/v2_vs_v3/run.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
plot bars --x workload --y "1 / seconds" --series board --relative-to v2-8 \
    --ylabel "speed relative to v2-8 (1 / time)" --title "v3-8 against v2-8, per workload" -o speedup
plot bars --x workload --y mxu_utilization --series board \
    --title "MXU utilisation (achieved / peak FLOPs)" -o mxu_utilization
