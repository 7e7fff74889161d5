// PE-by-PE, cycle-by-cycle model of the weight-stationary systolic array (see mxu_pe_array.h for
// the data layout). The controller below only uses what earlier cycles have observed (a load
// in progress, the swap reaching the last PE, the last row leaving it, the last result popped);
// docs/mxu.md shows that these observations give the closed form of MxuTiming.
#include "tpusim/arch/mxu/mxu_pe_array.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "tpusim/arch/mxu/mxu_numerics.h"

namespace tpusim {

namespace {

// Inputs older than this many cycles beyond the row width are dropped in one block move, so the
// history costs one memmove of `cols` floats per row every kHistorySlack cycles.
constexpr std::int64_t kHistorySlack = 1024;

// One PE row segment: partial sum from above plus weight times the LHS value under each PE.
// The product of two bf16 values is exact in fp32, so this equals the hardware's bf16 multiply
// followed by an fp32 add whether or not the compiler fuses it.
inline void mac_row(float* __restrict dst, const float* __restrict above, const float* __restrict w,
                    const float* __restrict x, std::int64_t n) {
#pragma GCC unroll 4
    for (std::int64_t c = 0; c < n; ++c) dst[c] = above[c] + w[c] * x[c];
}

}  // namespace

MxuPeArray::MxuPeArray(const MxuConfig& cfg)
    : pipe_(cfg),
      rows_(cfg.rows),
      cols_(cfg.cols),
      load_rate_(cfg.weight_load_rows_per_cycle),
      psum_(static_cast<std::size_t>(cfg.rows * cfg.cols), 0.0f),
      hist_len_(kHistorySlack + cfg.cols),
      hist_pos_(kHistorySlack) {
    const auto cells = static_cast<std::size_t>(rows_ * cols_);
    weights_[0].assign(cells, 0.0f);
    if (pipe_.double_buffer) weights_[1].assign(cells, 0.0f);
    history_.assign(static_cast<std::size_t>(rows_ * hist_len_), 0.0f);
    zero_row_.assign(static_cast<std::size_t>(cols_), 0.0f);
}

std::size_t MxuPeArray::submit(const MxuPass& pass, Cycle weights_avail, Cycle lhs_avail,
                               const MxuPeOperands& ops) {
    if (pass.m < 1 || pass.k < 1 || pass.n < 1 || pass.k > rows_ || pass.n > cols_) {
        throw std::invalid_argument("MxuPass: need 1 <= k <= rows, 1 <= n <= cols, m >= 1");
    }
    PassState s;
    s.pass = pass;
    s.weights_avail = weights_avail;
    s.lhs_avail = lhs_avail;
    s.ops = ops;
    s.buffer = pipe_.double_buffer ? static_cast<int>(passes_.size() % 2) : 0;
    passes_.push_back(s);
    return passes_.size() - 1;
}

void MxuPeArray::provide_lhs(std::size_t pass, Cycle lhs_avail, const float* lhs, std::int64_t ldl,
                             float* out, std::int64_t ldo, bool accumulate) {
    PassState& s = passes_.at(pass);
    if (s.timing_ls != kNever) throw std::logic_error("MxuPeArray: LHS already streaming");
    s.lhs_avail = lhs_avail;
    s.ops.lhs = lhs;
    s.ops.ldl = ldl;
    s.ops.out = out;
    s.ops.ldo = ldo;
    s.ops.accumulate = accumulate;
}

bool MxuPeArray::buffer_free(std::size_t pass) const {
    if (pass == 0) return true;
    const PassState& prev = passes_[pass - 1];
    // Double buffering: the shadow registers are free once every PE has switched to the
    // previous tile. Otherwise the only register is free once the previous tile's last LHS
    // row has left the array.
    const Cycle seen = pipe_.double_buffer ? prev.swap_done : prev.last_exit;
    return seen != kNever && seen < now_;
}

void MxuPeArray::control() {
    if (next_load_ < passes_.size() && now_ >= loader_free_at_) {
        PassState& p = passes_[next_load_];
        if (p.weights_avail <= now_ && buffer_free(next_load_)) {
            p.timing_ws = now_;
            p.timing.weights_start = now_;
            p.timing.weights_ready = now_ + pipe_.load_cycles;
            loader_free_at_ = p.timing.weights_ready;
            loading_ = next_load_++;
        }
    }
    if (next_stream_ < next_load_ && now_ >= stream_free_at_) {
        PassState& p = passes_[next_stream_];
        const bool drained = pipe_.overlap || next_stream_ == 0 || completed_ >= next_stream_;
        if (p.lhs_avail <= now_ && p.timing.weights_ready <= now_ + pipe_.input_latency &&
            drained) {
            p.timing_ls = now_;
            p.timing.lhs_start = now_;
            p.timing.lhs_end = now_ + static_cast<Cycle>(p.pass.m);
            p.t0 = now_ + pipe_.input_latency;
            stream_free_at_ = p.timing.lhs_end + pipe_.pass_gap;
            in_flight_.push_back(next_stream_++);
        }
    }
}

void MxuPeArray::load_weights() {
    if (now_ >= loader_free_at_) return;
    const PassState& p = passes_[loading_];
    float* buf = weights_[p.buffer].data();
    const std::int64_t first = static_cast<std::int64_t>(now_ - p.timing_ws) * load_rate_;
    for (std::int64_t r = first; r < std::min(rows_, first + load_rate_); ++r) {
        float* dst = buf + r * cols_;
        std::fill(dst, dst + cols_, 0.0f);  // padding rows and columns hold zero weights
        if (r < p.pass.k && p.ops.weights != nullptr) {
            const float* src = p.ops.weights + r * p.ops.ldw;
            for (std::int64_t c = 0; c < p.pass.n; ++c) dst[c] = round_to_bf16(src[c]);
        }
    }
}

void MxuPeArray::enter_lhs() {
    if (--hist_pos_ < 0) {
        for (std::int64_t r = 0; r < rows_; ++r) {
            float* h = history_row(r);
            std::memmove(h + kHistorySlack + 1, h,
                         static_cast<std::size_t>(cols_ - 1) * sizeof(float));
        }
        hist_pos_ = kHistorySlack;
    }
    // Each row takes the value of the one pass whose LHS row now - t0 - r exists; gaps and
    // padding rows (r >= k) take zero.
    for (std::int64_t r = 0; r < rows_; ++r) history_row(r)[hist_pos_] = 0.0f;
    for (const std::size_t idx : in_flight_) {
        const PassState& p = passes_[idx];
        if (now_ < p.t0 || p.ops.lhs == nullptr) continue;
        const auto d = static_cast<std::int64_t>(now_ - p.t0);  // row r holds LHS row d - r
        const std::int64_t lo = std::max<std::int64_t>(0, d - (p.pass.m - 1));
        const std::int64_t hi = std::min({p.pass.k - 1, d, rows_ - 1});
        for (std::int64_t r = lo; r <= hi; ++r) {
            history_row(r)[hist_pos_] = round_to_bf16(p.ops.lhs[(d - r) * p.ops.ldl + r]);
        }
    }
}

void MxuPeArray::compute() {
    if (in_flight_.empty()) return;
    // Bottom row first, so that row r - 1 still holds last cycle's partial sums.
    for (std::int64_t r = rows_ - 1; r >= 0; --r) {
        float* dst = &psum_[static_cast<std::size_t>(r * cols_)];
        const float* above = r > 0 ? dst - cols_ : zero_row_.data();
        const float* x = history_row(r) + hist_pos_;
        // Column c holds the LHS value that entered this row at now_ - c; newer passes occupy
        // the lower columns, each with its own weight buffer.
        std::int64_t start = 0;
        for (auto it = in_flight_.rbegin(); it != in_flight_.rend() && start < cols_; ++it) {
            const PassState& p = passes_[*it];
            if (now_ < p.t0 + static_cast<Cycle>(r)) continue;
            const auto end = std::min(cols_, static_cast<std::int64_t>(now_ - p.t0) - r + 1);
            if (end <= start) continue;
            const float* w = weights_[p.buffer].data() + r * cols_;
            mac_row(dst + start, above + start, w + start, x + start, end - start);
            start = end;
        }
        // Lanes holding no LHS value (before the oldest pass in flight) pass partial sums on.
        if (start < cols_) std::copy(above + start, above + cols_, dst + start);
    }
}

void MxuPeArray::drain() {
    const float* bottom = &psum_[static_cast<std::size_t>((rows_ - 1) * cols_)];
    const Cycle out_latency = pipe_.accumulator_latency + pipe_.pop_latency;
    bool finished = false;
    for (const std::size_t idx : in_flight_) {
        PassState& p = passes_[idx];
        const Cycle first_out = p.t0 + static_cast<Cycle>(rows_ - 1);
        if (now_ < first_out) continue;
        // Column c emits LHS row base - c of this pass.
        const auto base = static_cast<std::int64_t>(now_ - first_out);
        const std::int64_t lo = std::max<std::int64_t>(0, base - (p.pass.m - 1));
        const std::int64_t hi = std::min(cols_ - 1, base);
        if (p.ops.out != nullptr) {
            for (std::int64_t c = lo; c <= std::min(hi, p.pass.n - 1); ++c) {
                float& dst = p.ops.out[(base - c) * p.ops.ldo + c];
                dst = p.ops.accumulate ? dst + bottom[c] : bottom[c];
            }
        }
        if (p.swap_done == kNever && base >= cols_ - 1) p.swap_done = now_;
        if (lo <= cols_ - 1 && cols_ - 1 <= hi) {  // a result row is complete
            const bool last = base - (cols_ - 1) == p.pass.m - 1;
            pops_.push_back(Pop{now_ + out_latency, idx, last});
            if (last) {
                p.last_exit = now_;
                finished = true;
            }
        }
    }
    if (finished) {
        in_flight_.erase(
            std::remove_if(in_flight_.begin(), in_flight_.end(),
                           [&](std::size_t i) { return passes_[i].last_exit == now_; }),
            in_flight_.end());
    }
    while (!pops_.empty() && pops_.front().at <= now_) {
        if (pops_.front().last) {
            passes_[pops_.front().pass].timing.results_end = pops_.front().at + 1;
            ++completed_;
        }
        pops_.pop_front();
    }
}

void MxuPeArray::step() {
    control();
    load_weights();
    enter_lhs();
    compute();
    drain();
    ++now_;
}

bool MxuPeArray::quiescent() const {
    if (!in_flight_.empty() || !pops_.empty() || now_ < loader_free_at_) return false;
    const bool can_load = next_load_ < passes_.size() && next_load_ == next_stream_ &&
                          passes_[next_load_].weights_avail != kNever;
    const bool can_stream = next_stream_ < next_load_ && passes_[next_stream_].lhs_avail != kNever;
    return !can_load && !can_stream;
}

void MxuPeArray::run_until_idle() {
    while (completed_ < passes_.size()) {
        if (quiescent()) throw std::logic_error("MxuPeArray: a pass waits for operands");
        step();
    }
}

void MxuPeArray::discard_outputs() {
    for (std::size_t i = completed_; i < passes_.size(); ++i) passes_[i].ops.out = nullptr;
}

void MxuPeArray::skip_to(Cycle t) {
    if (!in_flight_.empty() || !pops_.empty() || now_ < loader_free_at_) {
        throw std::logic_error("MxuPeArray::skip_to while a pass is in the array");
    }
    now_ = std::max(now_, t);
}

float MxuPeArray::lhs_at(std::int64_t r, std::int64_t c) const {
    return history_[static_cast<std::size_t>(r * hist_len_ + hist_pos_ + c)];
}

}  // namespace tpusim
