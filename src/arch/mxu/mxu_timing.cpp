// Closed-form timing of the MXU pipeline. The equations are derived in docs/mxu.md; every
// constraint below has a counterpart that MxuPeArray observes cycle by cycle.
#include "tpusim/arch/mxu/mxu_timing.h"

#include <algorithm>
#include <stdexcept>

namespace tpusim {

bool operator==(const MxuPassTiming& a, const MxuPassTiming& b) {
    return a.weights_start == b.weights_start && a.weights_ready == b.weights_ready &&
           a.lhs_start == b.lhs_start && a.lhs_end == b.lhs_end && a.results_end == b.results_end;
}

MxuPipeline::MxuPipeline(const MxuConfig& cfg)
    : rows(static_cast<Cycle>(cfg.rows)),
      cols(static_cast<Cycle>(cfg.cols)),
      load_cycles(ceil_div(static_cast<Cycle>(cfg.rows),
                           static_cast<Cycle>(cfg.weight_load_rows_per_cycle))),
      input_latency(static_cast<Cycle>(cfg.input_latency_cycles)),
      accumulator_latency(static_cast<Cycle>(cfg.accumulator_latency_cycles)),
      pop_latency(static_cast<Cycle>(cfg.result_pop_latency_cycles)),
      pass_gap(static_cast<Cycle>(cfg.pass_gap_cycles)),
      double_buffer(cfg.weight_double_buffer),
      overlap(cfg.overlap_tiles) {
    if (cfg.rows < 1 || cfg.cols < 1 || cfg.weight_load_rows_per_cycle < 1) {
        throw std::invalid_argument("MxuConfig: rows, cols and load rate must be positive");
    }
}

MxuTiming::MxuTiming(const MxuConfig& cfg) : pipe_(cfg) {}

void MxuTiming::reset() {
    have_prev_ = false;
    prev_ = MxuPassTiming{};
    busy_ = 0;
    useful_macs_ = padded_macs_ = passes_ = 0;
}

Cycle MxuTiming::next_weights_start(Cycle weights_avail) const {
    if (!have_prev_) return weights_avail;
    // The buffer the load fills must be free: with double buffering that is the shadow buffer,
    // free once the previous pass's swap wave has reached the last PE; without it, the only
    // buffer, free once the previous pass's last LHS row has left the last PE.
    const Cycle prev_t0 = prev_.lhs_start + pipe_.input_latency;  // row 0 enters PE(0,0)
    const Cycle free_at = pipe_.double_buffer
                              ? prev_t0 + pipe_.span() + 1
                              : prev_.lhs_end - 1 + pipe_.input_latency + pipe_.span() + 1;
    return std::max({weights_avail, free_at, prev_.weights_ready});
}

MxuPassTiming MxuTiming::schedule(const MxuPass& pass, Cycle weights_avail, Cycle lhs_avail) {
    if (pass.m < 1 || pass.k < 1 || pass.n < 1 || static_cast<Cycle>(pass.k) > pipe_.rows ||
        static_cast<Cycle>(pass.n) > pipe_.cols) {
        throw std::invalid_argument("MxuPass: need 1 <= k <= rows, 1 <= n <= cols, m >= 1");
    }
    const Cycle m = static_cast<Cycle>(pass.m);
    MxuPassTiming t;

    t.weights_start = next_weights_start(weights_avail);
    t.weights_ready = t.weights_start + pipe_.load_cycles;

    // LHS streaming: one row per cycle through a single port, after the load has started and
    // such that row 0 reaches the array edge no earlier than the weights are in place.
    t.lhs_start = std::max(lhs_avail, t.weights_start);
    if (t.weights_ready > pipe_.input_latency) {
        t.lhs_start = std::max(t.lhs_start, t.weights_ready - pipe_.input_latency);
    }
    if (have_prev_) {
        t.lhs_start = std::max(t.lhs_start, prev_.lhs_end + pipe_.pass_gap);
        if (!pipe_.overlap) t.lhs_start = std::max(t.lhs_start, prev_.results_end);
    }
    t.lhs_end = t.lhs_start + m;
    // Last row: enters PE(0,0) at lhs_start + input_latency + m - 1, leaves the bottom-right
    // PE span() cycles later, then accumulator and pop latency.
    t.results_end = t.lhs_start + pipe_.input_latency + (m - 1) + pipe_.span() + 1 +
                    pipe_.accumulator_latency + pipe_.pop_latency;

    const Cycle busy_from =
        have_prev_ ? std::max(t.weights_start, prev_.results_end) : t.weights_start;
    if (t.results_end > busy_from) busy_ += t.results_end - busy_from;
    useful_macs_ += static_cast<std::uint64_t>(pass.m) * static_cast<std::uint64_t>(pass.k) *
                    static_cast<std::uint64_t>(pass.n);
    padded_macs_ += pipe_.rows * pipe_.cols * m;
    ++passes_;
    prev_ = t;
    have_prev_ = true;
    return t;
}

Cycle mxu_repeated_passes_cycles(const MxuConfig& cfg, std::uint64_t count, std::int64_t m) {
    if (count == 0) return 0;
    MxuTiming timing(cfg);
    const MxuPass pass{1, 1, m};
    MxuPassTiming prev = timing.schedule(pass, 0, 0);
    for (std::uint64_t i = 1; i < count; ++i) {
        const MxuPassTiming cur = timing.schedule(pass, 0, 0);
        // The schedule of pass i depends only on pass i-1 (and on the availability 0, which
        // binds only for pass 0), and every constraint is a max of (field + constant). So once
        // all fields advance by the same d, every later pass advances by d as well.
        const Cycle d = cur.results_end - prev.results_end;
        if (i >= 2 && cur.weights_start - prev.weights_start == d &&
            cur.weights_ready - prev.weights_ready == d && cur.lhs_start - prev.lhs_start == d &&
            cur.lhs_end - prev.lhs_end == d) {
            return cur.results_end + (count - 1 - i) * d;
        }
        prev = cur;
    }
    return prev.results_end;
}

GemmTiming mxu_gemm_timing(const MxuConfig& cfg, std::int64_t mxus, std::int64_t m, std::int64_t k,
                           std::int64_t n) {
    if (mxus < 1 || m < 0 || k < 0 || n < 0) {
        throw std::invalid_argument("mxu_gemm_timing: need mxus >= 1 and M, K, N >= 0");
    }
    GemmTiming g;
    if (m == 0 || k == 0 || n == 0) return g;
    const auto um = static_cast<std::uint64_t>(m);
    const auto units = static_cast<std::uint64_t>(mxus);
    const std::uint64_t k_tiles =
        ceil_div(static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(cfg.rows));
    const std::uint64_t n_tiles =
        ceil_div(static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(cfg.cols));
    const std::uint64_t tiles = k_tiles * n_tiles;
    g.useful_macs = um * static_cast<std::uint64_t>(k) * static_cast<std::uint64_t>(n);
    g.array_macs = static_cast<std::uint64_t>(cfg.rows * cfg.cols) * um * tiles;

    // Split by N tiles: each MXU owns whole output columns and runs all K tiles for them.
    const Cycle by_n = mxu_repeated_passes_cycles(cfg, ceil_div(n_tiles, units) * k_tiles, m);
    // Split by M rows: every MXU runs every tile on its share of the rows.
    const std::uint64_t m_share = ceil_div(um, units);
    const Cycle by_m = mxu_repeated_passes_cycles(cfg, tiles, static_cast<std::int64_t>(m_share));
    if (units == 1 || by_n <= by_m) {
        g.cycles = by_n;
        g.passes = tiles;
    } else {
        g.cycles = by_m;
        g.passes = tiles * ceil_div(um, m_share);  // MXUs that received rows
    }
    return g;
}

}  // namespace tpusim
