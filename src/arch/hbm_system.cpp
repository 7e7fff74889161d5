#include "tpusim/arch/hbm_system.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "tpusim/common/error.h"

namespace tpusim {

struct HbmSystem::Txn {
    HbmRequest req;
    Addr next = 0;      // address of the next burst to hand out
    Addr row_end = 0;   // end of the current row
    std::int64_t row = 0;
    bool fed_all = false;
    bool remote = false;
    bool live = false;
    std::uint64_t outstanding = 0;  // bursts handed to a channel and not yet transferred
    Cycle start_h = 0;              // HBM cycle at which the request arrives
    Cycle done_h = 0;
};

HbmSystem::HbmSystem(const HbmConfig& cfg, double core_clock_mhz, std::uint32_t cores_per_chip)
    : cfg_(cfg),
      map_(cfg, cores_per_chip),
      core_clock_(core_clock_mhz),
      hbm_clock_(cfg.clock_mhz()) {
    const auto n = static_cast<std::size_t>(cfg.pseudo_channels_total());
    pcs_.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        // Stagger refreshes evenly so that the chip never refreshes every channel at once.
        const Cycle first = static_cast<Cycle>(cfg.timing.tREFI) * (i + 1) / n;
        pcs_.emplace_back(cfg, counters_, first);
    }
    const double half_bytes_per_tck =
        static_cast<double>(cfg.channels() / cores_per_chip * cfg.channel_width_bits / 8 * 2);
    remote_rate_ = cfg.remote_bandwidth_fraction * half_bytes_per_tck;
    remote_credit_.assign(cores_per_chip, 0.0);
    remote_credit_at_.assign(cores_per_chip, 0);

    const HbmCounters& c = counters_;
    stats_.counter("bytes_read", bytes_read_, "B", "bytes read (whole bursts)");
    stats_.counter("bytes_written", bytes_written_, "B", "bytes written (whole bursts)");
    stats_.counter("requests", requests_, "requests", "transactions submitted");
    stats_.counter("remote_requests", remote_requests_, "requests",
                   "transactions to the other TensorCore's half");
    stats_.counter("read_bursts", c.read_bursts, "bursts", "read bursts");
    stats_.counter("write_bursts", c.write_bursts, "bursts", "write bursts");
    stats_.counter("row_hits", c.row_hits, "bursts", "bursts to an already open row");
    stats_.counter("row_misses", c.row_misses, "bursts", "bursts that needed an ACT");
    stats_.counter("row_conflicts", c.row_conflicts, "bursts",
                   "bursts that needed a PRE of another row and an ACT");
    stats_.counter("activates", c.activates, "commands", "ACT commands");
    stats_.counter("precharges", c.precharges, "commands", "PRE commands (refresh included)");
    stats_.counter("refreshes", c.refreshes, "commands", "REFab commands");
    stats_.counter("data_bus_cycles", c.data_bus_cycles, "tCK",
                   "pseudo-channel data bus cycles carrying data (summed over channels)");
    stats_.counter("lost_refresh_cycles", c.lost_refresh_cycles, "tCK",
                   "bus cycles lost to refresh while work was queued");
    stats_.counter("lost_turnaround_cycles", c.lost_turnaround_cycles, "tCK",
                   "bus cycles lost to read/write turnaround");
    stats_.counter("lost_bank_cycles", c.lost_bank_cycles, "tCK",
                   "bus cycles lost waiting for ACT/PRE (row misses and conflicts)");
    stats_.counter("lost_other_cycles", c.lost_other_cycles, "tCK",
                   "bus cycles lost to tCCD_L, tRRD/tFAW and write drain");
    stats_.formula(
        "row_hit_rate",
        [this] {
            const auto& k = counters_;
            const double all = static_cast<double>(k.row_hits + k.row_misses + k.row_conflicts);
            return all > 0 ? static_cast<double>(k.row_hits) / all : 0.0;
        },
        "fraction", "row hits / bursts");
    stats_.formula(
        "bus_utilization",
        [this] {
            const double cap = static_cast<double>(now_h_) * static_cast<double>(pcs_.size());
            return cap > 0 ? static_cast<double>(counters_.data_bus_cycles) / cap : 0.0;
        },
        "fraction", "data bus cycles / (pseudo-channels x elapsed tCK)");
}

HbmSystem::~HbmSystem() = default;

Cycle HbmSystem::core_to_hbm_floor(Cycle c) const {
    const long double v =
        static_cast<long double>(c) * hbm_clock_.mhz() / core_clock_.mhz() + 1e-9L;
    return static_cast<Cycle>(std::floor(v));
}

void HbmSystem::submit(const HbmRequest& r, Cycle now) {
    const Bytes extent = r.rows <= 0 || r.bytes == 0
                             ? 0
                             : static_cast<Bytes>(r.rows - 1) * r.stride + r.bytes;
    if (r.addr + extent > map_.capacity_bytes()) {
        throw InputError("", "hbm",
                         fmt::format("access [{:#x}, {:#x}) lies beyond the chip's {} GiB of HBM",
                                     r.addr, r.addr + extent, map_.capacity_bytes() / kGiB));
    }
    ++requests_;
    if (extent == 0) {
        pending_.push(HbmCompletion{r.tag, now});
        return;
    }
    std::uint32_t slot;
    if (free_slots_.empty()) {
        slot = static_cast<std::uint32_t>(txns_.size());
        txns_.emplace_back();
    } else {
        slot = free_slots_.back();
        free_slots_.pop_back();
    }
    Txn& t = txns_[slot];
    t = Txn{};
    t.req = r;
    t.live = true;
    const Bytes bb = map_.burst_bytes();
    t.next = r.addr / bb * bb;
    t.row_end = r.addr + r.bytes;
    t.start_h = hbm_clock_.from(core_clock_, now);
    if (r.requester >= 0 && static_cast<std::size_t>(r.requester) < remote_credit_.size() &&
        !map_.is_local(static_cast<std::uint32_t>(r.requester), r.addr)) {
        t.remote = true;
        ++remote_requests_;
    }
    feeding_.push_back(slot);
    ++in_flight_;
    feed_wake_ = std::min(feed_wake_, t.start_h);
}

bool HbmSystem::push_one(Txn& t, std::uint32_t slot) {
    const HbmLocation loc = map_.decode(t.next);
    HbmPseudoChannel& pc = pcs_[loc.pc_index(static_cast<std::uint32_t>(cfg_.pseudo_channels))];
    if (!pc.can_accept(t.req.is_write)) return false;
    const Bytes bb = map_.burst_bytes();
    if (t.remote) {
        // The remote half is reached through the other core's side of the chip: this
        // requester may draw remote_bandwidth_fraction of that half's peak.
        const auto q = static_cast<std::size_t>(t.req.requester);
        double& credit = remote_credit_[q];
        credit = std::min(credit + remote_rate_ * static_cast<double>(now_h_ - remote_credit_at_[q]),
                          static_cast<double>(64 * bb));
        remote_credit_at_[q] = now_h_;
        if (credit < static_cast<double>(bb)) {
            const double wait = std::ceil((static_cast<double>(bb) - credit) / remote_rate_);
            feed_wake_ = std::min(feed_wake_, now_h_ + static_cast<Cycle>(std::max(1.0, wait)));
            return false;
        }
        credit -= static_cast<double>(bb);
    }
    pc.enqueue(HbmBurst{loc.bank_group, loc.bank, loc.row, t.req.is_write, slot}, now_h_);
    ++t.outstanding;
    t.next += bb;
    if (t.next >= t.row_end) {
        if (++t.row >= t.req.rows) {
            t.fed_all = true;
        } else {
            const Addr start = t.req.addr + static_cast<Addr>(t.row) * t.req.stride;
            t.next = start / bb * bb;
            t.row_end = start + t.req.bytes;
        }
    }
    return true;
}

void HbmSystem::feed() {
    if (feeding_.empty()) return;
    feed_wake_ = kNever;
    // Hand out one burst per transaction per round so that concurrent requesters interleave
    // fairly; a transaction whose next channel queue is full waits for a later step.
    std::vector<std::uint32_t> round;
    round.reserve(feeding_.size());
    const std::size_t n = feeding_.size();
    for (std::size_t k = 0; k < n; ++k) {
        const std::uint32_t slot = feeding_[(rr_ + k) % n];
        if (txns_[slot].start_h <= now_h_) {
            round.push_back(slot);
        } else {
            feed_wake_ = std::min(feed_wake_, txns_[slot].start_h);
        }
    }
    rr_ = n ? (rr_ + 1) % n : 0;
    while (!round.empty()) {
        std::size_t keep = 0;
        for (std::size_t i = 0; i < round.size(); ++i) {
            Txn& t = txns_[round[i]];
            if (push_one(t, round[i]) && !t.fed_all) round[keep++] = round[i];
        }
        round.resize(keep);
    }
    feeding_.erase(std::remove_if(feeding_.begin(), feeding_.end(),
                                  [this](std::uint32_t s) { return txns_[s].fed_all; }),
                   feeding_.end());
}

void HbmSystem::on_issued(const HbmPseudoChannel::Issued& is) {
    Txn& t = txns_[is.owner];
    const Bytes bb = map_.burst_bytes();
    (is.is_write ? bytes_written_ : bytes_read_) += bb;
    t.done_h = std::max(t.done_h, is.data_end);
    if (--t.outstanding == 0 && t.fed_all) {
        Cycle done = core_clock_.from(hbm_clock_, t.done_h);
        if (t.remote) done += static_cast<Cycle>(cfg_.remote_latency_cycles);
        pending_.push(HbmCompletion{t.req.tag, done});
        t.live = false;
        free_slots_.push_back(is.owner);
        --in_flight_;
    }
}

Cycle HbmSystem::next_hbm_event() const {
    Cycle t = feed_wake_;
    for (const auto& pc : pcs_) t = std::min(t, pc.next_event());
    return t;
}

void HbmSystem::advance_to(Cycle now) {
    const Cycle target = core_to_hbm_floor(now);
    for (;;) {
        if (!feeding_.empty() && feed_wake_ <= now_h_) feed();
        const Cycle t = next_hbm_event();
        if (t > target) break;
        now_h_ = std::max(now_h_, t);
        for (auto& pc : pcs_) {
            if (pc.next_event() > now_h_) continue;
            issued_.clear();
            pc.step(now_h_, issued_);
            for (const auto& is : issued_) on_issued(is);
        }
        // A freed queue slot may let a waiting transaction feed at this cycle.
        if (!feeding_.empty()) feed_wake_ = std::min(feed_wake_, now_h_);
    }
    now_h_ = std::max(now_h_, target);
    while (!pending_.empty() && pending_.top().cycle <= now) {
        ready_.push_back(pending_.top());
        pending_.pop();
    }
}

std::vector<HbmCompletion> HbmSystem::take_completions() {
    std::vector<HbmCompletion> out;
    out.swap(ready_);
    return out;
}

Cycle HbmSystem::next_event_cycle() const {
    Cycle t = kNever;
    if (!ready_.empty()) return 0;
    if (!pending_.empty()) t = pending_.top().cycle;
    const Cycle h = next_hbm_event();
    if (h != kNever) t = std::min(t, core_clock_.from(hbm_clock_, h));
    return t;
}

}  // namespace tpusim
