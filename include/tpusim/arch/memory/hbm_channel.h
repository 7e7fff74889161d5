#pragma once
// One HBM2 pseudo-channel: its banks, command timing and an FR-FCFS scheduler with separate
// read and write queues, write-drain watermarks and writes per switch, open-page policy and
// all-bank refresh.
// Plain C++ in HBM clock cycles (tCK); the caller steps it only at the cycles returned by
// next_event(), so idle cycles cost nothing (DRAMsim3-style timing without a per-cycle tick).
//
// Modelling choices (docs/hbm.md): a pseudo-channel has its own row and column command
// paths (HBM2 separates row and column command buses), so one row command (ACT/PRE) and one
// column command (RD/WR) may issue in the same cycle; refresh is REFab per pseudo-channel at
// exactly every tREFI (never postponed), preceded by a precharge of the open banks.
#include <cstdint>
#include <limits>
#include <vector>

#include "tpusim/common/types.h"
#include "tpusim/config/hbm_config.h"

namespace tpusim {

inline constexpr Cycle kNever = std::numeric_limits<Cycle>::max();

// Packed (12 B): millions of these sit in queues and backlogs during a run.
struct HbmBurst {
    std::uint8_t bank_group = 0;  // config limits: at most 16 bank groups ...
    std::uint8_t bank = 0;        // ... of at most 16 banks
    bool is_write = false;
    std::uint32_t row = 0;
    std::uint32_t owner = 0;  // opaque to the channel: the transaction slot it belongs to
};

// Counters shared by all pseudo-channels of a chip (HbmSystem registers them as stats).
// Lost cycles are column-command slots (BL/2 tCK each) that passed while the pseudo-channel
// had work queued but could not transfer data, by the cause that held the next burst back.
struct HbmCounters {
    std::uint64_t read_bursts = 0;
    std::uint64_t write_bursts = 0;
    std::uint64_t row_hits = 0;
    std::uint64_t row_misses = 0;     // bank was closed
    std::uint64_t row_conflicts = 0;  // another row was open and had to be precharged
    std::uint64_t activates = 0;
    std::uint64_t precharges = 0;
    std::uint64_t refreshes = 0;
    std::uint64_t data_bus_cycles = 0;         // tCK with data on a pseudo-channel bus
    std::uint64_t lost_refresh_cycles = 0;     // blocked by a refresh
    std::uint64_t lost_turnaround_cycles = 0;  // read/write bus turnaround (tRTW, tWTR)
    std::uint64_t lost_bank_cycles = 0;        // waiting for ACT/PRE (row miss or conflict)
    std::uint64_t lost_other_cycles = 0;       // tCCD_L, tRRD/tFAW, write drain
};

class HbmPseudoChannel {
 public:
    // `first_refresh` staggers refreshes across pseudo-channels.
    HbmPseudoChannel(const HbmConfig& cfg, HbmCounters& counters, Cycle first_refresh);

    bool can_accept(bool is_write) const {
        return is_write ? writes_.size() < write_depth_ : reads_.size() < read_depth_;
    }
    // Contract: can_accept(b.is_write); `now` is not before the last step().
    void enqueue(const HbmBurst& b, Cycle now);

    struct Issued {
        std::uint32_t owner;
        Cycle data_end;  // cycle at which the burst's last beat has been transferred
        bool is_write;
    };
    // Issues every command that is legal at `now` and appends the bursts whose column command
    // issued. Contract: `now` >= every earlier `now`.
    void step(Cycle now, std::vector<Issued>& out);
    // Earliest cycle at which step() could issue a command; kNever when nothing is queued.
    Cycle next_event() {
        if (settle_at_ != kNever) settle();
        return next_event_;
    }
    bool idle() const { return reads_.empty() && writes_.empty(); }
    std::size_t queued() const { return reads_.size() + writes_.size(); }

 private:
    struct Bank {
        std::int64_t open_row = -1;
        Cycle next_act = 0, next_pre = 0, next_rd = 0, next_wr = 0;
        // What the next column command to this bank pays for: 0 hit, 1 miss, 2 conflict.
        int pending_cause = 0;
        bool conflict_precharge = false;  // the last PRE closed a row another request missed
        // Queued requests to this bank, and those of them that hit its open row, by kind
        // (0 read, 1 write): the scheduler's per-bank view, so that finding the next event
        // costs one pass over the banks, not over the queue.
        std::uint32_t queued[2] = {0, 0};
        std::uint32_t hits[2] = {0, 0};
    };
    struct Entry {
        HbmBurst burst;
        std::uint32_t bank_index;
    };

    void settle();
    void refresh(Cycle due);
    void catch_up_refresh(Cycle now);
    bool try_column(Cycle now, std::vector<Entry>& q, std::vector<Issued>& out);
    bool try_row(Cycle now, const std::vector<Entry>& q);
    void update_mode();
    // Earliest command cycle, not before `earliest`.
    Cycle compute_next_event(Cycle earliest);
    Cycle column_ready(const Entry& e) const;
    Cycle act_ready(const Entry& e) const;
    Cycle act_ready_bank(std::uint32_t bank) const;
    Cycle bank_column_ready(std::uint32_t bank, int kind) const;
    bool row_command_ready(std::uint32_t bank, int kind, Cycle now) const;
    void count_hits(std::uint32_t bank);
    void account_gap(Cycle now, bool is_write, const Bank& bank);

    HbmTimingConfig t_;
    HbmCounters& c_;
    std::uint32_t banks_per_group_;
    std::size_t read_depth_, write_depth_, drain_high_, drain_low_;
    std::uint64_t writes_per_switch_;  // hbm.writes_per_switch (0: no bound)
    Cycle burst_cycles_;
    std::vector<Bank> banks_;
    std::vector<std::uint8_t> col_ready_;  // scratch for try_column
    std::vector<Cycle> bg_next_rd_, bg_next_wr_, bg_next_act_;
    Cycle next_rd_ = 0, next_wr_ = 0, next_act_ = 0, next_row_cmd_ = 0;
    Cycle faw_[4] = {0, 0, 0, 0};  // last four ACT times (ring)
    unsigned faw_pos_ = 0;
    std::uint64_t acts_ = 0;
    std::vector<Entry> reads_, writes_;
    bool draining_writes_ = false;
    std::uint64_t run_ = 0;  // bursts served since the bus last turned
    Cycle next_refresh_;
    Cycle refresh_start_ = 0, refresh_end_ = 0;  // the last refresh's blocking window
    // Loss accounting: when the next column slot was due and when work became queued.
    Cycle bus_free_ = 0, busy_since_ = 0;
    bool last_was_write_ = false;
    bool any_issued_ = false;
    Cycle next_event_ = kNever;
    Cycle col_time_ = kNever, row_time_ = kNever;  // earliest column / row command
    Cycle settle_at_ = kNever;  // an enqueue at this cycle has not been scheduled yet
};

}  // namespace tpusim
