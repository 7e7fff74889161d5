#pragma once
// Tile-fidelity timing of one MXU: the pipeline of docs/mxu.md in closed form, one weight tile
// ("pass") at a time. Plain C++ (no SystemC), so the sequencer, the property tests and the
// bench can all call it. MxuPeArray (mxu_pe_array.h) steps the same pipeline PE by PE and must
// produce identical MxuPassTiming for every pass; tests/unit/mxu_property_test.cpp checks it.
#include <cstdint>

#include "tpusim/common/types.h"
#include "tpusim/config/mxu_config.h"

namespace tpusim {

// One weight tile k x n (k <= rows, n <= cols; padded with zeros to the array) and the m LHS
// rows (m >= 1) streamed through it. Each LHS row is a vector of k values; each result row a
// vector of n fp32 values.
struct MxuPass {
    std::int64_t k = 0;
    std::int64_t n = 0;
    std::int64_t m = 0;
};

// Cycle numbers of one pass. Intervals are half-open: weights load during
// [weights_start, weights_ready), LHS rows are pushed during [lhs_start, lhs_end), and
// results_end is the cycle after the last result row is popped.
struct MxuPassTiming {
    Cycle weights_start = 0;
    Cycle weights_ready = 0;
    Cycle lhs_start = 0;
    Cycle lhs_end = 0;
    Cycle results_end = 0;
};

bool operator==(const MxuPassTiming& a, const MxuPassTiming& b);
inline bool operator!=(const MxuPassTiming& a, const MxuPassTiming& b) { return !(a == b); }

// Constants of the pipeline, derived once from the config (docs/mxu.md names them).
struct MxuPipeline {
    Cycle rows, cols;
    Cycle load_cycles;  // Lw = ceil(rows / weight_load_rows_per_cycle)
    Cycle input_latency, accumulator_latency, pop_latency;
    Cycle pass_gap;  // idle LHS-port cycles between passes (sequencer loop overhead)
    bool double_buffer, overlap;

    explicit MxuPipeline(const MxuConfig& cfg);
    // An LHS element that enters PE(0,0) at cycle t passes PE(rows-1, cols-1) at t + span().
    Cycle span() const { return rows + cols - 2; }
};

// The tile-fidelity model. Passes are scheduled in order on one MXU.
class MxuTiming {
 public:
    explicit MxuTiming(const MxuConfig& cfg);

    // weights_avail / lhs_avail: earliest cycles at which the pass's weight tile and LHS rows
    // are available (in VMEM). Honours the double-buffering and overlap switches.
    MxuPassTiming schedule(const MxuPass& pass, Cycle weights_avail, Cycle lhs_avail);
    // The weights_start the next pass would get: it does not depend on the pass's own LHS, so
    // a caller can announce the weight load before the LHS arrives.
    Cycle next_weights_start(Cycle weights_avail) const;

    // Cycles in which the MXU had any pass in flight (union of [weights_start, results_end)).
    Cycle busy_cycles() const { return busy_; }
    // Multiply-accumulates that contribute to a result (m * k * n per pass).
    std::uint64_t useful_macs() const { return useful_macs_; }
    // MACs the array performs including padding (rows * cols * m per pass).
    std::uint64_t padded_macs() const { return padded_macs_; }
    std::uint64_t passes() const { return passes_; }
    // Cycle after the last result of every pass scheduled so far (0 when none).
    Cycle results_end() const { return prev_.results_end; }
    const MxuPipeline& pipeline() const { return pipe_; }
    void reset();

 private:
    MxuPipeline pipe_;
    bool have_prev_ = false;
    MxuPassTiming prev_;
    Cycle busy_ = 0;
    std::uint64_t useful_macs_ = 0, padded_macs_ = 0, passes_ = 0;
};

// Whole GEMM (all operands available at cycle 0) on `mxus` MXUs of one core: cycles and MAC
// accounting. The K x N weight matrix is cut into ceil(K/rows) x ceil(N/cols) tiles, each
// streamed with the M LHS rows. Work is split between the MXUs either by N tiles or by M rows,
// whichever finishes first (an XLA-like compiler may choose either).
struct GemmTiming {
    Cycle cycles = 0;
    std::uint64_t useful_macs = 0;  // M * K * N
    std::uint64_t array_macs = 0;   // rows * cols * m summed over passes (padding included)
    std::uint64_t passes = 0;
};
GemmTiming mxu_gemm_timing(const MxuConfig& cfg, std::int64_t mxus, std::int64_t m, std::int64_t k,
                           std::int64_t n);

// Cycles of `count` identical passes of `m` rows scheduled back to back on one MXU with all
// operands available at cycle 0 (the results_end of the last). Timing does not depend on a
// pass's k and n (the tile is padded to the array). Runs pass by pass until the schedule is
// periodic, then extrapolates; equal to the pass-by-pass loop (tested).
Cycle mxu_repeated_passes_cycles(const MxuConfig& cfg, std::uint64_t count, std::int64_t m);

}  // namespace tpusim
