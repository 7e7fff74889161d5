#include "tpusim/arch/memory/hbm_system.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "tpusim/common/error.h"

namespace tpusim {

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
    backlog_.resize(n);
    wake_.assign(n, kNever);
    pc_now_.assign(n, 0);
    const double half_bytes_per_tck =
        static_cast<double>(cfg.channels() / cores_per_chip * cfg.channel_width_bits / 8 * 2);
    remote_rate_ = cfg.remote_bandwidth_fraction * half_bytes_per_tck;
    remote_next_.assign(cores_per_chip, 0.0);

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
    const Bytes extent =
        r.rows <= 0 || r.bytes == 0 ? 0 : static_cast<Bytes>(r.rows - 1) * r.stride + r.bytes;
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
    t.tag = r.tag;
    // The bursts enter their pseudo-channels from the request's arrival: a channel that the
    // controller has not yet run past it (BurstHbm runs ahead to the next completion) takes
    // them then; one that has, from its own current cycle.
    const Cycle start = hbm_clock_.from(core_clock_, now);
    const bool remote = r.requester >= 0 &&
                        static_cast<std::size_t>(r.requester) < remote_next_.size() &&
                        !map_.is_local(static_cast<std::uint32_t>(r.requester), r.addr);
    t.remote = remote;
    remote_requests_ += remote ? 1 : 0;
    const Bytes bb = map_.burst_bytes();
    const double spacing = static_cast<double>(bb) / remote_rate_;
    double* rnext = remote ? &remote_next_[static_cast<std::size_t>(r.requester)] : nullptr;
    if (rnext) *rnext = std::max(*rnext, static_cast<double>(start));
    const auto pcs_per_channel = static_cast<std::uint32_t>(cfg_.pseudo_channels);
    for (std::int64_t row = 0; row < r.rows; ++row) {
        const Addr first = r.addr + static_cast<Addr>(row) * r.stride;
        for (Addr a = first / bb * bb; a < first + r.bytes; a += bb) {
            const HbmLocation loc = map_.decode(a);
            const std::uint32_t pc = loc.pc_index(pcs_per_channel);
            Cycle release = start;
            if (rnext) {
                // The remote half is reached through the other core's side of the chip: this
                // requester draws at most remote_bandwidth_fraction of that half's peak.
                release = static_cast<Cycle>(std::ceil(*rnext));
                *rnext += spacing;
            }
            release = std::max(release, pc_now_[pc]);
            Backlog& q = backlog_[pc];
            (r.is_write ? q.writes : q.reads)
                .push_back(Waiting{
                    HbmBurst{static_cast<std::uint8_t>(loc.bank_group),
                             static_cast<std::uint8_t>(loc.bank), r.is_write, loc.row, slot},
                    release});
            ++t.outstanding;
            wake_[pc] = std::min(wake_[pc], release);
        }
    }
    ++in_flight_;
}

void HbmSystem::top_up(std::size_t p, Cycle t) {
    HbmPseudoChannel& pc = pcs_[p];
    Backlog& q = backlog_[p];
    while (!q.reads.empty() && q.reads.front().release <= t && pc.can_accept(false)) {
        pc.enqueue(q.reads.front().burst, t);
        q.reads.pop_front();
    }
    while (!q.writes.empty() && q.writes.front().release <= t && pc.can_accept(true)) {
        pc.enqueue(q.writes.front().burst, t);
        q.writes.pop_front();
    }
}

void HbmSystem::refresh_wake(std::size_t p) {
    // A waiting burst needs attention when it is released and its queue has room; a full
    // queue frees room only through a step, which the channel's own next_event covers.
    Cycle w = pcs_[p].next_event();
    const Backlog& q = backlog_[p];
    if (!q.reads.empty() && pcs_[p].can_accept(false)) w = std::min(w, q.reads.front().release);
    if (!q.writes.empty() && pcs_[p].can_accept(true)) w = std::min(w, q.writes.front().release);
    wake_[p] = w;
}

void HbmSystem::on_issued(const HbmPseudoChannel::Issued& is) {
    Txn& t = txns_[is.owner];
    const Bytes bb = map_.burst_bytes();
    (is.is_write ? bytes_written_ : bytes_read_) += bb;
    t.done_h = std::max(t.done_h, is.data_end);
    if (--t.outstanding == 0) {
        Cycle done = core_clock_.from(hbm_clock_, t.done_h);
        if (t.remote) done += static_cast<Cycle>(cfg_.remote_latency_cycles);
        pending_.push(HbmCompletion{t.tag, done});
        free_slots_.push_back(is.owner);
        --in_flight_;
    }
}

Cycle HbmSystem::next_hbm_event() const {
    Cycle t = kNever;
    for (const Cycle w : wake_) t = std::min(t, w);
    return t;
}

void HbmSystem::process(Cycle t) {
    // Each pseudo-channel keeps its own clock: t is the earliest cycle any of them needs
    // attention, which may lie before a cycle the controller already ran another channel to.
    now_h_ = std::max(now_h_, t);
    for (std::size_t p = 0; p < pcs_.size(); ++p) {
        if (wake_[p] > t) continue;
        const Cycle tp = std::max(t, pc_now_[p]);
        pc_now_[p] = tp;
        top_up(p, tp);
        if (pcs_[p].next_event() <= tp) {
            issued_.clear();
            pcs_[p].step(tp, issued_);
            for (const auto& is : issued_) on_issued(is);
            top_up(p, tp);  // room freed by the issued burst
        }
        refresh_wake(p);
    }
}

Cycle HbmSystem::run_to_next_completion() {
    // Runs until the earliest completion is final: no command still to run (at or after its
    // own cycle) can complete a request earlier.
    for (;;) {
        if (!ready_.empty()) return ready_.front().cycle;
        const Cycle t = next_hbm_event();
        if (!pending_.empty() &&
            (t == kNever || core_clock_.from(hbm_clock_, t) >= pending_.top().cycle)) {
            return pending_.top().cycle;
        }
        if (t == kNever) return kNever;
        process(t);
    }
}

void HbmSystem::advance_to(Cycle now) {
    const Cycle target = core_to_hbm_floor(now);
    for (;;) {
        const Cycle t = next_hbm_event();
        if (t > target) break;
        process(t);
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
