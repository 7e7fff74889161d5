#include "tpusim/arch/host/host_link.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tpusim {

HostLink::HostLink(const HostConfig& cfg, double core_clock_mhz, int chip)
    : bytes_per_cycle_(cfg.pcie_bandwidth_gbps * 1e9 / (core_clock_mhz * 1e6)),
      stats_(fmt::format("host_link{}", chip), "PCIe link from the host to one chip") {
    stats_.counter("bytes_to_device", bytes_in_, "B", "infeed bytes");
    stats_.counter("bytes_to_host", bytes_out_, "B", "outfeed bytes");
    stats_.counter("busy_cycles", busy_cycles_, "cycles", "cycles the link was transferring");
    stats_.counter("transfers", transfers_, "transfers", "infeed and outfeed transfers");
}

Cycle HostLink::transfer(Bytes bytes, bool to_device, Cycle now) {
    const Cycle start = std::max(now, free_at_);
    const auto dur = static_cast<Cycle>(std::ceil(static_cast<double>(bytes) / bytes_per_cycle_));
    free_at_ = start + dur;
    busy_cycles_ += dur;
    ++transfers_;
    (to_device ? bytes_in_ : bytes_out_) += bytes;
    return free_at_;
}

}  // namespace tpusim
