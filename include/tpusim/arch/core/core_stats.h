#pragma once
// Per-core statistics: unit busy cycles and per-op timing, registered in a StatGroup.
#include <cstdint>
#include <string>
#include <vector>

#include "tpusim/common/types.h"
#include "tpusim/program/program.h"
#include "tpusim/stats/stats.h"

namespace tpusim {

inline constexpr std::size_t kUnitCount = 5;  // Unit::Dma .. Unit::Host

struct OpTiming {
    Cycle start = ~Cycle{0};  // first instruction issued
    Cycle end = 0;            // last instruction completed
    Cycle busy[kUnitCount] = {0, 0, 0, 0, 0};
    std::uint64_t instructions = 0;
    bool ran() const { return instructions > 0; }
};

struct CoreStats {
    explicit CoreStats(const std::string& name);
    CoreStats(const CoreStats&) = delete;

    StatGroup group;
    std::uint64_t instructions = 0;
    std::uint64_t issue_stall_cycles = 0;  // cycles the sequencer waited on flags or queues
    std::uint64_t mxu_busy_cycles = 0;     // summed over the core's MXUs
    std::uint64_t mxu_useful_macs = 0;
    std::uint64_t mxu_array_macs = 0;  // including padding
    std::uint64_t mxu_passes = 0;
    std::uint64_t vpu_busy_cycles = 0;
    std::uint64_t vpu_instructions = 0;
    std::uint64_t dma_busy_cycles = 0;  // cycles with at least one descriptor in flight
    std::uint64_t dma_descriptors = 0;
    std::uint64_t dma_bytes_read = 0;     // HBM -> VMEM
    std::uint64_t dma_bytes_written = 0;  // VMEM -> HBM
    std::uint64_t ici_busy_cycles = 0;
    std::uint64_t host_busy_cycles = 0;
    std::vector<OpTiming> ops;
};

}  // namespace tpusim
