#!/usr/bin/env bash
# Every dma.* key is read in a default (calibrated HBM) run: the DMA engines carry every
# transfer, so changing any one of them changes the cycles of a committed trace. How much each
# moves a transfer is derived in tests/system/dma_calibrated_test.cpp; this checks that the
# whole run (TensorCore -> DmaEngine -> calibrated HBM) sees each key, the core's in-flight
# limit (descriptors_per_engine) included.
# Usage: dma_keys.sh path/to/tpusim (run from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cycles() {
    "$bin" run --config configs/tpu_v3_8.json --trace traces/mlp_fwd_bwd.json -q --json "$@" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["cycles"])'
}
base=$(cycles) || fatal "default run exited with $?"
[[ $(cycles --set sim.hbm_model=calibrated) == "$base" ]] || fatal "calibrated is not the default"
for set in dma.engines=1 dma.descriptors_per_engine=1 dma.max_outstanding_chunks=1 \
    dma.setup_latency_cycles=500 dma.vmem_bytes_per_cycle=128 dma.chunk_bytes=8192; do
    c=$(cycles --set "$set") || fatal "run with $set exited with $?"
    [[ $c != "$base" ]] || fatal "$set leaves the cycles at $base"
    echo "$set: $base -> $c cycles"
done
echo "every dma key is read"
