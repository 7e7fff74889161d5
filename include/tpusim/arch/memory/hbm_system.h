#pragma once
// The HBM of one chip: every pseudo-channel with its scheduler, fed by transactions that are
// split into bursts through the address map. Plain C++; time is driven by the caller in core
// cycles (advance_to / next_event_cycle), internally in HBM clock cycles (half the data
// rate), and only cycles at which a command can issue are visited.
//
//   HbmSystem hbm(cfg.hbm, cfg.chip.clock_mhz, cfg.chip.cores_per_chip);
//   hbm.submit(request, now);
//   while (!hbm.idle()) {
//       hbm.advance_to(hbm.next_event_cycle());
//       for (const HbmCompletion& c : hbm.take_completions()) ...
//   }
// Bursts of a transaction enter each pseudo-channel's queue in address order as room frees
// up; different pseudo-channels do not block each other (per-channel transaction queues).
#include <cstdint>
#include <queue>
#include <vector>

#include "tpusim/arch/memory/hbm_address.h"
#include "tpusim/arch/memory/hbm_channel.h"
#include "tpusim/common/types.h"
#include "tpusim/config/hbm_config.h"
#include "tpusim/stats/stats.h"

namespace tpusim {

// A 2-D block: `rows` rows of `bytes` bytes, row r starting at addr + r * stride.
struct HbmRequest {
    Addr addr = 0;
    Bytes bytes = 0;  // per row
    std::int64_t rows = 1;
    Bytes stride = 0;
    bool is_write = false;
    int requester = -1;  // TensorCore on this chip issuing it; -1: no locality accounting
    std::uint64_t tag = 0;
};

struct HbmCompletion {
    std::uint64_t tag;
    Cycle cycle;  // core cycle at which the last byte has been transferred
};

class HbmSystem {
 public:
    HbmSystem(const HbmConfig& cfg, double core_clock_mhz, std::uint32_t cores_per_chip);
    ~HbmSystem();
    HbmSystem(const HbmSystem&) = delete;
    HbmSystem& operator=(const HbmSystem&) = delete;

    // Contract: `now` (core cycles) is not before the last advance_to. A request addressed
    // beyond the chip's capacity throws InputError. A request's locality (and so the remote
    // latency and bandwidth share) is decided by the owner of its first byte.
    void submit(const HbmRequest& r, Cycle now);
    // Runs every HBM command up to core cycle `now`.
    void advance_to(Cycle now);
    // Runs the controller ahead, past any core cycle given so far, until the earliest
    // completion not yet taken is final; returns its core cycle (kNever if nothing is in
    // flight). Collect it with advance_to(that cycle). Used by BurstHbm to wake SystemC once
    // per completion instead of once per command. A request submitted meanwhile, at an earlier
    // cycle, enters each pseudo-channel the run did not take past that cycle at that cycle,
    // and any other at the cycle that channel was run to.
    Cycle run_to_next_completion();
    // Requests completed at or before the last advance_to, in completion order.
    std::vector<HbmCompletion> take_completions();
    // Earliest core cycle at which something happens (a command or a completion); kNever if
    // nothing is pending.
    Cycle next_event_cycle() const;
    // Nothing in flight and no completion left to take.
    bool idle() const { return in_flight_ == 0 && pending_.empty() && ready_.empty(); }

    const HbmAddressMap& address_map() const { return map_; }
    const HbmCounters& counters() const { return counters_; }
    Cycle hbm_cycles() const { return now_h_; }
    double hbm_clock_mhz() const { return hbm_clock_.mhz(); }
    std::size_t pseudo_channel_count() const { return pcs_.size(); }
    StatGroup& stats() { return stats_; }
    // Registered in stats() as bytes_read and bytes_written.
    const std::uint64_t& bytes_read() const { return bytes_read_; }
    const std::uint64_t& bytes_written() const { return bytes_written_; }

 private:
    struct Txn {
        std::uint64_t tag = 0;
        std::uint64_t outstanding = 0;  // bursts not yet transferred
        bool remote = false;
        Cycle done_h = 0;
    };
    // A burst waiting for room in its pseudo-channel's queue (the controller's transaction
    // queue, unbounded: back-pressure is the requesters' in-flight limit).
    struct Waiting {
        HbmBurst burst;
        Cycle release;  // HBM cycle from which it may enter the channel queue
    };
    // FIFO on a vector: cheaper than std::deque for this push-back / pop-front pattern.
    struct Fifo {
        std::vector<Waiting> v;
        std::size_t head = 0;
        bool empty() const { return head == v.size(); }
        const Waiting& front() const { return v[head]; }
        void push_back(const Waiting& w) { v.push_back(w); }
        void pop_front() {
            if (++head == v.size()) {
                v.clear();
                head = 0;
            } else if (head >= 4096 && head * 2 >= v.size()) {
                v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(head));
                head = 0;
            }
        }
    };
    struct Backlog {
        Fifo reads, writes;
    };
    void process(Cycle t);
    void top_up(std::size_t pc, Cycle t);
    void refresh_wake(std::size_t pc);
    void on_issued(const HbmPseudoChannel::Issued& is);
    Cycle next_hbm_event() const;
    Cycle core_to_hbm_floor(Cycle c) const;

    HbmConfig cfg_;
    HbmAddressMap map_;
    ClockDomain core_clock_, hbm_clock_;
    HbmCounters counters_;
    std::vector<HbmPseudoChannel> pcs_;
    std::vector<Backlog> backlog_;
    std::vector<Cycle> wake_;    // per pseudo-channel: next cycle it needs attention
    std::vector<Cycle> pc_now_;  // per pseudo-channel: the cycle it was last run to
    std::vector<Txn> txns_;
    std::vector<std::uint32_t> free_slots_;
    std::vector<HbmPseudoChannel::Issued> issued_;
    struct Later {
        bool operator()(const HbmCompletion& a, const HbmCompletion& b) const {
            return a.cycle > b.cycle;
        }
    };
    std::priority_queue<HbmCompletion, std::vector<HbmCompletion>, Later> pending_;
    std::vector<HbmCompletion> ready_;
    std::size_t in_flight_ = 0;
    Cycle now_h_ = 0;
    // Remote bandwidth share: per requester, the HBM cycle (fractional) at which its next
    // remote burst may enter a channel queue; bursts are spaced burst_bytes / remote_rate_.
    double remote_rate_ = 0;
    std::vector<double> remote_next_;
    std::uint64_t bytes_read_ = 0, bytes_written_ = 0, requests_ = 0, remote_requests_ = 0;
    StatGroup stats_{"hbm", "HBM of one chip"};
};

}  // namespace tpusim
