#!/usr/bin/env bash
# HBM bandwidth 0.5x..2x on BERT and ResNet-50: docs/studies/hbm_bandwidth/run.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
plot curves --x hbm_peak_gbps_per_chip --y achieved_bf16_tflops --series workload \
    --title "achieved TFLOPS against HBM bandwidth (v3 core)" -o tflops
plot curves --x hbm_peak_gbps_per_chip --y utilization_hbm_bandwidth --series workload \
    --title "share of the HBM bandwidth used" -o hbm_share
