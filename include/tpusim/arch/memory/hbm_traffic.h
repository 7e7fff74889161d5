#pragma once
// Synthetic traffic through an HbmSystem: the streams `tpusim bench hbm` and the bandwidth
// tests run. Each requesting core keeps a fixed number of chunk-sized transactions in flight
// (as its DMA engines would) and submits the next one when one completes.
#include <cstdint>
#include <random>
#include <vector>

#include "tpusim/arch/memory/hbm_system.h"

namespace tpusim {

struct HbmTraffic {
    enum class Kind { Read, Write, Copy, Random };
    Kind kind = Kind::Read;
    std::vector<int> cores = {0, 1};   // requesting TensorCores of the chip
    bool remote = false;               // each core targets the other core's half
    Bytes bytes_per_core = 64 * kMiB;  // per direction (copy reads and writes this much)
    Bytes chunk_bytes = 64 * kKiB;     // one transaction (random: the access size)
    int outstanding_per_core = 8;
    std::uint64_t seed = 1;
};

struct HbmTrafficResult {
    Cycle cycles = 0;  // core cycles from the first submit to the last completion
    double seconds = 0;
    Bytes bytes_read = 0, bytes_written = 0;
    std::uint64_t bursts = 0;
    double gbps = 0;  // (bytes read + bytes written) / seconds, 10^9 B/s
    HbmCounters counters;
    Cycle hbm_cycles = 0;
    double wall_seconds = 0;
};

// The address sequence of each requesting core's stream (its index in traffic.cores).
class HbmTrafficStreams {
 public:
    HbmTrafficStreams(const HbmTraffic& traffic, const HbmAddressMap& map);
    std::size_t size() const { return streams_.size(); }
    int core(std::size_t i) const { return streams_[i].core; }
    // Whether stream `i` has transactions left to issue.
    bool wants_more(std::size_t i) const;
    // Stream `i`'s next transaction (requester, address, bytes, direction; tag = i).
    HbmRequest next(std::size_t i);

 private:
    struct Stream {
        int core = 0;
        Addr base = 0;   // start of the half this core targets
        Bytes span = 0;  // bytes of that half used
        Bytes issued = 0, issued_writes = 0;
    };
    HbmTraffic tr_;
    std::vector<Stream> streams_;
    std::mt19937_64 rng_;
};

// The figures of a finished run on `hbm` whose last completion was at core cycle `last`.
HbmTrafficResult traffic_result(const HbmSystem& hbm, Cycle last, double core_clock_mhz);

// Runs `traffic` on `hbm` (fresh, idle) with the core clock `core_clock_mhz`.
HbmTrafficResult run_hbm_traffic(HbmSystem& hbm, const HbmTraffic& traffic, double core_clock_mhz);

// Submits `r` to `hbm` at core cycle `at` (not before the last cycle it was advanced to) and
// runs the HBM until `r` has completed; returns that core cycle (kNever if nothing completes).
// Completions of earlier requests up to `at` are dropped: for one transfer at a time.
Cycle run_isolated(HbmSystem& hbm, const HbmRequest& r, Cycle at);

// Latency of isolated transfers over the phase of the refresh schedule: `samples` transfers
// of `bytes` from core 0's half, one at a time, their start times spread evenly over one
// refresh interval (the schedule repeats with it), each on a row of its own and started after
// the one before has landed. The spread shows what a transfer waits for a refresh in
// progress (docs/hbm.md, "Known limitation: refresh in the latency").
struct HbmLatencyResult {
    double mean_cycles = 0;  // core cycles from submit to the last byte, over the samples
    Cycle min_cycles = 0, max_cycles = 0;
    std::uint64_t bursts = 0;
};
HbmLatencyResult isolated_latency_over_refresh(const HbmConfig& cfg, double core_clock_mhz,
                                               std::uint32_t cores_per_chip, Bytes bytes,
                                               bool write, int samples);

}  // namespace tpusim
