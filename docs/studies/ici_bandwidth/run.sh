#!/usr/bin/env bash
# ICI link bandwidth for data-parallel steps: docs/studies/ici_bandwidth/run.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
plot curves --x ici.link_bandwidth_gbps --y "seconds * 1e3" --series workload --logx \
    --ylabel "step time (ms)" --title "step time against ICI link bandwidth (v3-8)" -o step_time
plot curves --x ici.link_bandwidth_gbps --y utilization_ici_busy --series workload --logx \
    --title "ICI busy share of the step" -o ici_busy
