#pragma once
// The host's PCIe link to one chip [NORn: 16 GB/s per chip]. Infeed and outfeed transfers of
// the chip's cores share it first come, first served. This is the analytical host model
// (bytes / bandwidth + a fixed latency): the host side is outside the chip model.
#include <cstdint>

#include "tpusim/common/types.h"
#include "tpusim/config/board_config.h"
#include "tpusim/stats/stats.h"

namespace tpusim {

class HostLink {
 public:
    HostLink(const HostConfig& cfg, double core_clock_mhz, int chip);

    // A transfer of `bytes` requested at `now`: returns its completion cycle.
    Cycle transfer(Bytes bytes, bool to_device, Cycle now);
    const StatGroup& stats() const { return stats_; }
    std::uint64_t bytes_in() const { return bytes_in_; }
    std::uint64_t bytes_out() const { return bytes_out_; }

 private:
    double bytes_per_cycle_;
    Cycle free_at_ = 0;
    std::uint64_t bytes_in_ = 0, bytes_out_ = 0, busy_cycles_ = 0, transfers_ = 0;
    StatGroup stats_;
};

}  // namespace tpusim
