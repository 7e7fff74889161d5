#pragma once
// Vmem: a TensorCore's vector memory as a module. It owns the port the DMA engines move data
// through (dma.vmem_bytes_per_cycle, each transfer in its earliest idle stretch, vmem.h's
// VmemPort) and the capacity that bounds every descriptor. Buffer placement is the program layer's
// (VmemAllocator); the vector unit's load/store ports are timed inside the Vpu.
#include <systemc>

#include "tpusim/arch/memory/vmem.h"
#include "tpusim/common/types.h"
#include "tpusim/config/memory_config.h"
#include "tpusim/stats/stats.h"

namespace tpusim {

class VmemIf : public virtual sc_core::sc_interface {
 public:
    // Reserves the DMA port for `bytes` from `now` on, in its first idle stretch that fits;
    // returns the cycle at which the transfer through it ends. `horizon`: the caller's current
    // cycle (no reservation will ask for an earlier start).
    virtual Cycle reserve_dma_port(Cycle now, Bytes bytes, Cycle horizon) = 0;
    virtual Bytes capacity_bytes() const = 0;
};

class Vmem : public sc_core::sc_module, public VmemIf {
 public:
    sc_core::sc_export<VmemIf> dma_in{"dma_in"};  // the core's DMA engines bind here

    Vmem(sc_core::sc_module_name name, const VmemConfig& vmem, const DmaConfig& dma);

    Cycle reserve_dma_port(Cycle now, Bytes bytes, Cycle horizon) override;
    Bytes capacity_bytes() const override { return capacity_; }
    StatGroup& stats() { return stats_; }

 private:
    Bytes capacity_;
    VmemPort dma_port_;
    StatGroup stats_{"vmem", "VMEM of one TensorCore"};
};

}  // namespace tpusim
