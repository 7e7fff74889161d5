#!/usr/bin/env bash
# Per-core batch 8..256 (XLA padding to 8 / 128): docs/studies/batch_size/run.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
plot curves --x workload.batch --y "batch / seconds" --series workload \
    --ylabel "samples per second per core" --title "throughput against per-core batch (v3 core)" -o throughput
plot curves --x workload.batch --y utilization_mxu_padding_waste --series workload \
    --ylabel "MXU MACs spent on padding (fraction)" --title "padding waste against per-core batch" -o padding
