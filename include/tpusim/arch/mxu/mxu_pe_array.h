#pragma once
// PE-fidelity MXU: a rows x cols weight-stationary systolic array stepped one cycle at a time,
// computing real bf16 x bf16 -> fp32 results. It is the reference the tile model
// (mxu_timing.h) is tested against: for the same passes and operand availability it must give
// the same MxuPassTiming, and its results must equal mxu_reference_gemm bit for bit.
//
// Every cycle every PE(r, c) computes psum_out = psum_in + w[r][c] * x, where x is the LHS
// value arriving from its left neighbour and psum_in the partial sum from the PE above. LHS row
// i of a pass enters array row r at cycle t0 + i + r (the skew), so it meets PE(r, c) at
// t0 + i + r + c, and its partial sums leave the bottom edge of column c at t0 + i + rows-1 + c.
//
// Layout (why it is fast): the LHS value at PE(r, c) at cycle t is the value that entered row r
// at cycle t - c, so each row keeps a time-reversed history of its left-edge inputs and the
// values under the row's PEs are `cols` contiguous floats of it; nothing is shifted. Partial
// sums live in one rows x cols array updated in place from the bottom row up. A cycle is thus
// `rows` contiguous loops `p[r][c] = p[r-1][c] + w[r][c] * x[c]` that the compiler vectorises.
//
// Weights: each PE has an active and (with double buffering) a shadow register. A tile is
// written into a free buffer weight_load_rows_per_cycle rows per cycle; PE(r, c) switches to
// it when the pass's first LHS row reaches it (the switch travels with the data, so there is
// no bubble). The controller decides from what it has observed in earlier cycles.
#include <cstdint>
#include <deque>
#include <vector>

#include "tpusim/arch/mxu/mxu_timing.h"
#include "tpusim/common/types.h"
#include "tpusim/config/mxu_config.h"

namespace tpusim {

// Operands of one pass (row-major, leading dimensions in elements). Null pointers mean zeros
// (weights, lhs) or discard (out): timing-only use. Values are rounded to bf16 on entry.
struct MxuPeOperands {
    const float* weights = nullptr;  // k x n
    std::int64_t ldw = 0;
    const float* lhs = nullptr;  // m x k
    std::int64_t ldl = 0;
    float* out = nullptr;  // m x n, written as results leave the array
    std::int64_t ldo = 0;
    // Add to `out` instead of overwriting it: the accumulators summing K tiles in pass order.
    bool accumulate = false;
};

class MxuPeArray {
 public:
    static constexpr Cycle kNever = ~Cycle{0};

    explicit MxuPeArray(const MxuConfig& cfg);

    // Queues a pass (executed in submission order); returns its index. The weight tile is
    // available from `weights_avail`; the LHS rows from `lhs_avail` (kNever: not yet, see
    // provide_lhs). The operand pointers must stay valid until the pass completes.
    std::size_t submit(const MxuPass& pass, Cycle weights_avail, Cycle lhs_avail = kNever,
                       const MxuPeOperands& ops = {});
    void provide_lhs(std::size_t pass, Cycle lhs_avail, const float* lhs, std::int64_t ldl,
                     float* out, std::int64_t ldo, bool accumulate = false);

    // Simulates cycle now() and advances to the next.
    void step();
    // Steps until every submitted pass has completed. Throws std::logic_error if a pass waits
    // for LHS rows that were never provided.
    void run_until_idle();
    // True when nothing can happen until new operands arrive: no pass in flight, no load in
    // progress and no queued pass with its operands.
    bool quiescent() const;
    // Results still to leave the array are discarded from now on (their rows written by a
    // copy of the array that runs ahead instead: the block timer, mxu_block.h).
    void discard_outputs();
    // Jumps over idle cycles: only while no pass is loading or in the array, and with t not
    // past the availability of a queued operand (the caller's responsibility).
    void skip_to(Cycle t);

    Cycle now() const { return now_; }
    std::size_t passes_submitted() const { return passes_.size(); }
    std::size_t passes_completed() const { return completed_; }
    // Valid for a pass once its results have been popped (index < passes_completed()).
    const MxuPassTiming& timing(std::size_t pass) const { return passes_[pass].timing; }
    // Known once the load / streaming has started (else kNever).
    Cycle weights_start(std::size_t pass) const { return passes_[pass].timing_ws; }
    Cycle lhs_start(std::size_t pass) const { return passes_[pass].timing_ls; }
    std::int64_t rows() const { return rows_; }
    std::int64_t cols() const { return cols_; }

    // Observation for waveforms: the LHS value at / partial sum leaving PE(r, c) in the cycle
    // last stepped.
    float lhs_at(std::int64_t r, std::int64_t c) const;
    float psum_at(std::int64_t r, std::int64_t c) const {
        return psum_[static_cast<std::size_t>(r * cols_ + c)];
    }

 private:
    struct PassState {
        MxuPass pass;
        Cycle weights_avail = kNever, lhs_avail = kNever;
        MxuPeOperands ops;
        int buffer = 0;
        Cycle timing_ws = kNever, timing_ls = kNever;
        Cycle t0 = kNever;  // cycle LHS row 0 enters PE(0,0)
        Cycle swap_done = kNever, last_exit = kNever;
        MxuPassTiming timing;
    };
    struct Pop {
        Cycle at;
        std::size_t pass;
        bool last;
    };

    bool buffer_free(std::size_t pass) const;
    void control();
    void load_weights();
    void enter_lhs();
    void compute();
    void drain();
    float* history_row(std::int64_t r) {
        return &history_[static_cast<std::size_t>(r * hist_len_)];
    }

    MxuPipeline pipe_;
    std::int64_t rows_, cols_, load_rate_;
    Cycle now_ = 0;
    std::vector<PassState> passes_;
    std::size_t next_load_ = 0, next_stream_ = 0, completed_ = 0;
    Cycle loader_free_at_ = 0, stream_free_at_ = 0;
    std::size_t loading_ = 0;             // pass being loaded while now_ < loader_free_at_
    std::vector<std::size_t> in_flight_;  // streamed, last row not yet out; oldest first
    std::deque<Pop> pops_;

    std::vector<float> weights_[2];  // rows x cols each; [1] unused without double buffering
    std::vector<float> psum_;        // rows x cols, the partial sum leaving each PE
    std::vector<float> history_;     // rows x hist_len_, time-reversed left-edge inputs
    std::vector<float> zero_row_;    // the partial sum entering the top row
    std::int64_t hist_len_ = 0, hist_pos_ = 0;
};

}  // namespace tpusim
