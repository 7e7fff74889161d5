#include "tpusim/arch/core/core_stats.h"

namespace tpusim {

CoreStats::CoreStats(const std::string& name) : group(name, "TensorCore") {
    group.counter("instructions", instructions, "instructions", "instructions issued");
    group.counter("issue_stall_cycles", issue_stall_cycles, "cycles",
                  "cycles the sequencer waited on sync flags or full unit queues");
    group.counter("mxu_busy_cycles", mxu_busy_cycles, "cycles",
                  "cycles with a pass in flight, summed over the core's MXUs");
    group.counter("mxu_useful_macs", mxu_useful_macs, "MACs",
                  "multiply-accumulates that contribute to a result");
    group.counter("mxu_array_macs", mxu_array_macs, "MACs",
                  "multiply-accumulates the arrays performed, padding included");
    group.counter("mxu_passes", mxu_passes, "passes", "weight tiles streamed");
    group.counter("vpu_busy_cycles", vpu_busy_cycles, "cycles", "cycles running vector loops");
    group.counter("vpu_instructions", vpu_instructions, "instructions",
                  "vector instructions executed");
    group.counter("dma_busy_cycles", dma_busy_cycles, "cycles",
                  "cycles with at least one DMA descriptor in flight");
    group.counter("dma_descriptors", dma_descriptors, "descriptors", "DMA descriptors");
    group.counter("dma_bytes_read", dma_bytes_read, "B", "bytes moved HBM -> VMEM");
    group.counter("dma_bytes_written", dma_bytes_written, "B", "bytes moved VMEM -> HBM");
    group.counter("ici_busy_cycles", ici_busy_cycles, "cycles",
                  "cycles with a collective in flight");
    group.counter("host_busy_cycles", host_busy_cycles, "cycles",
                  "cycles with a host transfer in flight");
    group.formula(
        "mxu_padding_waste",
        [this] {
            return mxu_array_macs == 0 ? 0.0
                                       : 1.0 - static_cast<double>(mxu_useful_macs) /
                                                   static_cast<double>(mxu_array_macs);
        },
        "fraction", "share of the arrays' MACs spent on padding");
}

}  // namespace tpusim
