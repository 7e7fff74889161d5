#include "tpusim/arch/memory/vmem_module.h"

namespace tpusim {

Vmem::Vmem(sc_core::sc_module_name name, const VmemConfig& vmem, const DmaConfig& dma)
    : sc_module(name),
      capacity_(static_cast<Bytes>(vmem.capacity_mib) * kMiB),
      dma_port_(dma.vmem_bytes_per_cycle) {
    dma_in.bind(*this);
    stats_.counter("dma_port_busy_cycles", dma_port_.busy_cycles(), "cycles",
                   "cycles the DMA port was transferring");
    stats_.counter("dma_port_bytes", dma_port_.bytes(), "B", "bytes through the DMA port");
}

Cycle Vmem::reserve_dma_port(Cycle now, Bytes bytes, Cycle horizon) {
    return dma_port_.reserve(now, bytes, horizon);
}

}  // namespace tpusim
