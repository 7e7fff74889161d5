#include "tpusim/arch/memory/hbm_channel.h"

#include <algorithm>
#include <cmath>

namespace tpusim {

HbmPseudoChannel::HbmPseudoChannel(const HbmConfig& cfg, HbmCounters& counters, Cycle first_refresh)
    : t_(cfg.timing),
      c_(counters),
      banks_per_group_(static_cast<std::uint32_t>(cfg.banks_per_group)),
      read_depth_(static_cast<std::size_t>(cfg.read_queue_depth)),
      write_depth_(static_cast<std::size_t>(cfg.write_queue_depth)),
      writes_per_switch_(static_cast<std::uint64_t>(cfg.writes_per_switch)),
      burst_cycles_(static_cast<Cycle>(cfg.timing.burst_length / 2)),
      banks_(static_cast<std::size_t>(cfg.bank_groups * cfg.banks_per_group)),
      bg_next_rd_(static_cast<std::size_t>(cfg.bank_groups), 0),
      bg_next_wr_(static_cast<std::size_t>(cfg.bank_groups), 0),
      bg_next_act_(static_cast<std::size_t>(cfg.bank_groups), 0),
      next_refresh_(first_refresh) {
    // High watermark at least one entry, low strictly below it (config checks low < high).
    drain_high_ = std::max<std::size_t>(
        1, static_cast<std::size_t>(std::ceil(cfg.write_drain_high * write_depth_)));
    drain_low_ = std::min(drain_high_ - 1,
                          static_cast<std::size_t>(std::floor(cfg.write_drain_low * write_depth_)));
    if (burst_cycles_ == 0) burst_cycles_ = 1;
    col_ready_.assign(banks_.size(), 0);
    reads_.reserve(read_depth_);
    writes_.reserve(write_depth_);
}

void HbmPseudoChannel::enqueue(const HbmBurst& b, Cycle now) {
    if (idle()) {
        // Refreshes that fell due while nothing was queued happened on time; replay them.
        catch_up_refresh(now);
        busy_since_ = now;
    }
    const std::uint32_t bank = b.bank_group * banks_per_group_ + b.bank;
    (b.is_write ? writes_ : reads_).push_back(Entry{b, bank});
    Bank& bk = banks_[bank];
    ++bk.queued[b.is_write];
    if (bk.open_row == static_cast<std::int64_t>(b.row)) ++bk.hits[b.is_write];
    // Scheduling the new request is deferred to the next next_event() query, so that a batch
    // of arrivals costs one pass over the banks.
    settle_at_ = now;  // the current cycle; same-cycle re-issue is excluded by the timing state
}

void HbmPseudoChannel::settle() {
    update_mode();
    next_event_ = std::min(next_event_, compute_next_event(settle_at_));
    settle_at_ = kNever;
}

void HbmPseudoChannel::catch_up_refresh(Cycle now) {
    while (next_refresh_ <= now) refresh(next_refresh_);
}

void HbmPseudoChannel::refresh(Cycle due) {
    // REFab: precharge every open bank (as soon as tRAS/tRTP/tWR allow), wait tRP, then the
    // whole pseudo-channel is blocked for tRFC.
    Cycle ref = due;
    for (Bank& b : banks_) {
        if (b.open_row >= 0) {
            ref = std::max(ref, std::max(b.next_pre, due) + static_cast<Cycle>(t_.tRP));
            ++c_.precharges;
        } else {
            ref = std::max(ref, b.next_act);
        }
    }
    const Cycle end = ref + static_cast<Cycle>(t_.tRFC);
    for (Bank& b : banks_) {
        b.open_row = -1;
        b.next_act = end;
        b.conflict_precharge = false;
        b.hits[0] = b.hits[1] = 0;
    }
    ++c_.refreshes;
    refresh_start_ = due;
    refresh_end_ = end;
    next_refresh_ += static_cast<Cycle>(t_.tREFI);
}

void HbmPseudoChannel::update_mode() {
    // Write drains (gem5's DRAM controller policy): a drain starts when the write queue reaches
    // its high watermark, or when writes wait and no read does; it ends when the writes run
    // out, or when reads wait and the write queue is down to its low watermark. With
    // hbm.writes_per_switch = N > 0 a drain also hands the bus back to waiting reads after N
    // writes (gem5's min_writes_per_switch), and the next drain waits for one read to be
    // served, so that a write queue refilling above its high watermark cannot starve the reads
    // (docs/hbm.md, "Read/write switching").
    if (draining_writes_) {
        const bool switch_due = writes_per_switch_ != 0 && run_ >= writes_per_switch_;
        if (writes_.empty() || (!reads_.empty() && (writes_.size() <= drain_low_ || switch_due))) {
            draining_writes_ = false;
            run_ = 0;
        }
    } else if ((writes_.size() >= drain_high_ && (writes_per_switch_ == 0 || run_ > 0)) ||
               (!writes_.empty() && reads_.empty())) {
        draining_writes_ = true;
        run_ = 0;
    }
}

void HbmPseudoChannel::step(Cycle now, std::vector<Issued>& out) {
    bool changed = settle_at_ != kNever;
    while (next_refresh_ <= now) {
        refresh(next_refresh_);
        changed = true;
    }
    const bool was_draining = draining_writes_;
    update_mode();
    if (changed || was_draining != draining_writes_) compute_next_event(now);
    std::vector<Entry>& q = draining_writes_ ? writes_ : reads_;
    // col_time_ / row_time_ were computed from the current state by the last
    // compute_next_event; skip the passes that cannot issue anything now.
    if (!q.empty()) {
        if (col_time_ <= now) try_column(now, q, out);
        if (row_time_ <= now) try_row(now, q);
    }
    // The next event is computed lazily by next_event(), once, after any arrivals at `now`.
    next_event_ = kNever;
    settle_at_ = now + 1;
}

Cycle HbmPseudoChannel::bank_column_ready(std::uint32_t bank, int kind) const {
    const Bank& b = banks_[bank];
    const std::uint32_t bg = bank / banks_per_group_;
    if (kind) return std::max({b.next_wr, next_wr_, bg_next_wr_[bg]});
    return std::max({b.next_rd, next_rd_, bg_next_rd_[bg]});
}

Cycle HbmPseudoChannel::column_ready(const Entry& e) const {
    return bank_column_ready(e.bank_index, e.burst.is_write);
}

Cycle HbmPseudoChannel::act_ready_bank(std::uint32_t bank) const {
    Cycle t = std::max(
        {banks_[bank].next_act, next_act_, bg_next_act_[bank / banks_per_group_], next_row_cmd_});
    // tFAW: at most four ACTs in any window; faw_[faw_pos_] is the oldest of the last four.
    if (acts_ >= 4) t = std::max(t, faw_[faw_pos_] + static_cast<Cycle>(t_.tFAW));
    return t;
}

Cycle HbmPseudoChannel::act_ready(const Entry& e) const { return act_ready_bank(e.bank_index); }

bool HbmPseudoChannel::row_command_ready(std::uint32_t bank, int kind, Cycle now) const {
    const Bank& b = banks_[bank];
    if (b.queued[kind] == b.hits[kind]) return false;  // nothing queued that misses
    if (b.open_row < 0) return act_ready_bank(bank) <= now;
    // Open-page FR-FCFS: never close a row that a queued request still hits.
    return b.hits[kind] == 0 && b.next_pre <= now && next_row_cmd_ <= now;
}

void HbmPseudoChannel::count_hits(std::uint32_t bank) {
    Bank& b = banks_[bank];
    b.hits[0] = b.hits[1] = 0;
    for (const Entry& e : reads_) {
        if (e.bank_index == bank && static_cast<std::int64_t>(e.burst.row) == b.open_row) {
            ++b.hits[0];
        }
    }
    for (const Entry& e : writes_) {
        if (e.bank_index == bank && static_cast<std::int64_t>(e.burst.row) == b.open_row) {
            ++b.hits[1];
        }
    }
}

void HbmPseudoChannel::account_gap(Cycle now, bool is_write, const Bank& bank) {
    const Cycle expected = std::max(bus_free_, busy_since_);
    if (now <= expected) return;
    const Cycle gap = now - expected;
    const Cycle ov_lo = std::max(expected, refresh_start_);
    const Cycle ov_hi = std::min(now, refresh_end_);
    const Cycle in_refresh = ov_hi > ov_lo ? ov_hi - ov_lo : 0;
    c_.lost_refresh_cycles += in_refresh;
    const Cycle rest = gap - in_refresh;
    if (rest == 0) return;
    if (any_issued_ && is_write != last_was_write_) {
        c_.lost_turnaround_cycles += rest;
    } else if (bank.pending_cause != 0) {
        c_.lost_bank_cycles += rest;
    } else {
        c_.lost_other_cycles += rest;
    }
}

bool HbmPseudoChannel::try_column(Cycle now, std::vector<Entry>& q, std::vector<Issued>& out) {
    // First-ready: the oldest request that hits an open row and meets its column timing.
    const int kind = draining_writes_ ? 1 : 0;
    const Cycle pc_ready = kind ? next_wr_ : next_rd_;
    if (pc_ready > now) return false;
    // Whether each bank's column timing is met, computed on first use (2: not yet known):
    // the oldest request usually decides, so most calls look at one or two banks.
    std::fill(col_ready_.begin(), col_ready_.end(), std::uint8_t{2});
    for (std::size_t i = 0; i < q.size(); ++i) {
        const Entry& e = q[i];
        Bank& bank = banks_[e.bank_index];
        if (bank.open_row != static_cast<std::int64_t>(e.burst.row)) continue;
        std::uint8_t& ready = col_ready_[e.bank_index];
        if (ready == 2) {
            const std::uint32_t bg = e.bank_index / banks_per_group_;
            const Cycle r = kind ? std::max(bank.next_wr, bg_next_wr_[bg])
                                 : std::max(bank.next_rd, bg_next_rd_[bg]);
            ready = r <= now ? 1 : 0;
        }
        if (!ready) continue;
        account_gap(now, e.burst.is_write, bank);
        const std::uint32_t bg = e.burst.bank_group;
        const Cycle bc = burst_cycles_;
        Cycle data_end;
        if (e.burst.is_write) {
            data_end = now + static_cast<Cycle>(t_.tWL) + bc;
            next_wr_ = std::max(next_wr_, now + std::max<Cycle>(t_.tCCD_S, bc));
            bg_next_wr_[bg] = std::max(bg_next_wr_[bg], now + std::max<Cycle>(t_.tCCD_L, bc));
            next_rd_ = std::max(next_rd_, data_end + static_cast<Cycle>(t_.tWTR_S));
            bg_next_rd_[bg] = std::max(bg_next_rd_[bg], data_end + static_cast<Cycle>(t_.tWTR_L));
            bank.next_pre = std::max(bank.next_pre, data_end + static_cast<Cycle>(t_.tWR));
            ++c_.write_bursts;
        } else {
            data_end = now + static_cast<Cycle>(t_.tCL) + bc;
            next_rd_ = std::max(next_rd_, now + std::max<Cycle>(t_.tCCD_S, bc));
            bg_next_rd_[bg] = std::max(bg_next_rd_[bg], now + std::max<Cycle>(t_.tCCD_L, bc));
            next_wr_ = std::max(next_wr_, now + static_cast<Cycle>(t_.tRTW));
            bank.next_pre = std::max(bank.next_pre, now + static_cast<Cycle>(t_.tRTP));
            ++c_.read_bursts;
        }
        ++run_;
        // One column command per cycle on the column command bus.
        next_rd_ = std::max(next_rd_, now + 1);
        next_wr_ = std::max(next_wr_, now + 1);
        switch (bank.pending_cause) {
            case 0:
                ++c_.row_hits;
                break;
            case 1:
                ++c_.row_misses;
                break;
            default:
                ++c_.row_conflicts;
                break;
        }
        bank.pending_cause = 0;
        --bank.queued[kind];
        --bank.hits[kind];
        c_.data_bus_cycles += bc;
        bus_free_ = now + bc;
        last_was_write_ = e.burst.is_write;
        any_issued_ = true;
        out.push_back(Issued{e.burst.owner, data_end, e.burst.is_write});
        q.erase(q.begin() + static_cast<std::ptrdiff_t>(i));
        if (idle()) busy_since_ = kNever;
        return true;
    }
    return false;
}

bool HbmPseudoChannel::try_row(Cycle now, const std::vector<Entry>& q) {
    if (now < next_row_cmd_) return false;
    const int kind = draining_writes_ ? 1 : 0;
    bool any = false;
    for (std::uint32_t b = 0; b < banks_.size() && !any; ++b) {
        any = row_command_ready(b, kind, now);
    }
    if (!any) return false;
    for (const Entry& e : q) {
        Bank& bank = banks_[e.bank_index];
        const auto row = static_cast<std::int64_t>(e.burst.row);
        if (bank.open_row == row || !row_command_ready(e.bank_index, kind, now)) continue;
        if (bank.open_row < 0) {
            bank.open_row = row;
            bank.next_rd = bank.next_wr = now + static_cast<Cycle>(t_.tRCD);
            bank.next_pre = std::max(bank.next_pre, now + static_cast<Cycle>(t_.tRAS));
            bank.pending_cause = bank.conflict_precharge ? 2 : 1;
            bank.conflict_precharge = false;
            next_act_ = now + static_cast<Cycle>(t_.tRRD_S);
            bg_next_act_[e.burst.bank_group] = now + static_cast<Cycle>(t_.tRRD_L);
            faw_[faw_pos_] = now;
            faw_pos_ = (faw_pos_ + 1) % 4;
            ++acts_;
            ++c_.activates;
            count_hits(e.bank_index);
        } else {
            bank.open_row = -1;
            bank.next_act = std::max(bank.next_act, now + static_cast<Cycle>(t_.tRP));
            bank.conflict_precharge = true;
            bank.hits[0] = bank.hits[1] = 0;
            ++c_.precharges;
        }
        next_row_cmd_ = now + 1;
        return true;
    }
    return false;
}

Cycle HbmPseudoChannel::compute_next_event(Cycle earliest) {
    col_time_ = row_time_ = kNever;
    if (idle()) return kNever;
    const int kind = draining_writes_ ? 1 : 0;
    Cycle col = kNever, row = kNever;
    for (std::uint32_t b = 0; b < banks_.size(); ++b) {
        const Bank& bank = banks_[b];
        if (bank.queued[kind] == 0) continue;
        const std::uint32_t bg = b / banks_per_group_;
        if (bank.hits[kind] > 0) {
            col = std::min(col, kind ? std::max(bank.next_wr, bg_next_wr_[bg])
                                     : std::max(bank.next_rd, bg_next_rd_[bg]));
        }
        if (bank.queued[kind] == bank.hits[kind]) continue;
        if (bank.open_row < 0) {
            row = std::min(row, act_ready_bank(b));
        } else if (bank.hits[kind] == 0) {
            row = std::min(row, std::max(bank.next_pre, next_row_cmd_));
        }
    }
    if (col != kNever) col = std::max(col, kind ? next_wr_ : next_rd_);
    col_time_ = col;
    row_time_ = row;
    return std::max(std::min({next_refresh_, col, row}), earliest);
}
}  // namespace tpusim
