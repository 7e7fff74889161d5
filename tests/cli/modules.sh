#!/usr/bin/env bash
# `tpusim info --modules`: the module tree a run elaborates has the hierarchy of
# docs/architecture.md, with one Mxu per configured MXU, a sequencer, a Vpu and a Vmem per
# core, every core's ports, and a DMA engine inside each core whose TLM socket the chip binds to
# its HBM (a TLM target in both HBM models).
# Usage: modules.sh path/to/tpusim (run from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
v3=configs/tpu_v3_8.json
tree=$("$bin" info --config $v3 --modules) || fatal "info --modules exited with $?"
for name in board board.ici board.ici_rendezvous board.chip3 board.chip0.hbm board.chip0.host \
    board.chip0.core0 board.chip0.core0.mxu_0 board.chip0.core0.mxu_1 board.chip0.core0.vpu \
    board.chip0.core0.sequencer board.chip0.core0.sequencer.core_out board.chip0.core0.vmem \
    board.chip0.core0.vmem.dma_in \
    board.chip0.core0.dma_out board.chip0.core0.ici_out board.chip0.core0.host_out \
    board.chip1.core3 board.chip0.hbm.target_in board.chip0.core0.dma \
    board.chip0.core0.dma.hbm_out board.chip0.core0.dma.core_in board.chip0.core0.dma.vmem_out; do
    grep -Eq "^ *$name  \(" <<< "$tree" || fatal "no $name in the module tree"
done
# v3-8: 4 chips x 2 cores x core.mxus = 2 MXUs; an override changes the count.
[[ $(grep -Ec '\.mxu_[0-9]+  \(sc_module\)' <<< "$tree") == 16 ]] || fatal "expected 16 MXUs"
tree=$("$bin" info --config $v3 --modules --set core.mxus=3 --set sim.hbm_model=burst) ||
    fatal "info --modules (burst) exited with $?"
[[ $(grep -Ec '\.mxu_[0-9]+  \(sc_module\)' <<< "$tree") == 24 ]] || fatal "expected 24 MXUs"
for name in board.chip0.core0.dma board.chip0.core0.dma.hbm_out board.chip0.core0.dma.core_in \
    board.chip0.core0.dma.vmem_out board.chip0.hbm.target_in; do
    grep -Eq "^ *$name  \(" <<< "$tree" || fatal "no $name in the burst module tree"
done
echo "module tree ok"
