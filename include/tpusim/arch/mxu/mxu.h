#pragma once
// The matrix unit (MXU) of a TensorCore: a weight-stationary systolic array of rows x cols PEs
// (128 x 128 on TPU v2 and v3), bf16 multiplies and fp32 accumulation. Start here; the parts:
//
//   mxu_timing.h    MxuTiming: tile fidelity, the pipeline in closed form, one weight tile
//                   ("pass") at a time; mxu_gemm_timing for a whole GEMM on 1..n MXUs.
//   mxu_pe_array.h  MxuPeArray: PE fidelity, every PE every cycle, real numbers; the reference
//                   the tile model is tested against (same MxuPassTiming for every pass).
//   mxu_numerics.h  bf16 rounding and the reference GEMM the PE array matches bit for bit.
//   mxu_gemm.h      a GEMM tiled onto one PE array (bench and tests).
//   docs/mxu.md     the pipeline, the cycle equations and a worked example.
//
// Mxu (below) is the SystemC face for the sequencer: push a weight tile, stream its LHS rows,
// wait for the results, with one event notification per pass for each stage. Both fidelities
// give the same cycles. Time convention: one SystemC ns is one core cycle (sim_time.h).
#include <cstdint>
#include <memory>
#include <string>
#include <systemc>
#include <vector>

#include "tpusim/arch/mxu/mxu_block.h"
#include "tpusim/arch/mxu/mxu_fidelity.h"
#include "tpusim/arch/mxu/mxu_pe_array.h"
#include "tpusim/arch/mxu/mxu_timing.h"
#include "tpusim/config/mxu_config.h"

namespace tpusim {

class Mxu : public sc_core::sc_module {
 public:
    using PassId = std::size_t;

    Mxu(sc_core::sc_module_name name, const MxuConfig& cfg, MxuFidelity fidelity);

    // Contract: passes execute in the order of push_weights, and stream_lhs is called in that
    // order too. Operands count as available at the current cycle. The pointers (pe fidelity
    // only; null means zeros / discard) must stay valid until the pass is done; `out`
    // (m x n) receives the pass's fp32 results, added to it when `accumulate` (the
    // accumulators summing K tiles in pass order).
    PassId push_weights(const MxuPass& pass, const float* weights = nullptr, std::int64_t ldw = 0);
    void stream_lhs(PassId id, const float* lhs = nullptr, std::int64_t ldl = 0,
                    float* out = nullptr, std::int64_t ldo = 0, bool accumulate = false);

    // The TensorCore's entry: one matmul instruction (the passes of its block, mxu_block.h)
    // issued at `now` and timed at once by the fidelity's block timer. Contract: a module is
    // driven either block by block (run) or pass by pass (push_weights / stream_lhs), not both.
    MxuBlockTiming run_block(const std::vector<MxuTile>& tiles, Cycle now) {
        return block_->run(tiles, now);
    }

    // Each is notified once per pass, in pass order: when its weights are in place, when its
    // last LHS row has been pushed, and when its last result row has been popped.
    const sc_core::sc_event& weights_loaded_event() const { return weights_q_.default_event(); }
    const sc_core::sc_event& lhs_consumed_event() const { return lhs_q_.default_event(); }
    const sc_core::sc_event& results_event() const { return results_q_.default_event(); }

    bool done(PassId id) const;
    // Blocks the calling SC_THREAD until pass `id` is done.
    void wait_done(PassId id);
    // Valid once done(id).
    MxuPassTiming timing(PassId id) const;
    std::size_t passes() const { return passes_.size(); }
    MxuFidelity fidelity() const { return fidelity_; }
    const MxuTiming& tile_model() const { return tile_; }

    // Writes the LHS value and partial sum of the top-left dim x dim PEs (pe fidelity) to a
    // waveform; call during elaboration. Values of cycle t appear at time t + 1.
    void trace(sc_core::sc_trace_file* tf, std::int64_t dim);

 private:
    struct PassRecord {
        MxuPass pass;
        Cycle weights_avail = 0;
        bool streamed = false;
        MxuPassTiming timing;  // tile fidelity
    };
    void pe_thread();
    void notify_at(sc_core::sc_event_queue& q, Cycle at);
    void after_pe_step();
    void announce_weight_loads();

    MxuFidelity fidelity_;
    MxuPipeline pipe_;
    MxuTiming tile_;
    std::unique_ptr<MxuPeArray> pe_;
    std::vector<PassRecord> passes_;
    std::size_t next_stream_ = 0, weights_announced_ = 0, loads_seen_ = 0, streams_seen_ = 0,
                done_seen_ = 0;
    sc_core::sc_event work_;
    sc_core::sc_event_queue weights_q_, lhs_q_, results_q_;
    std::unique_ptr<MxuBlockTimer> block_;  // run_block
    // Waveform mirror (fixed size once traced).
    std::int64_t trace_dim_ = 0;
    sc_dt::uint64 trace_cycle_ = 0;
    std::vector<float> trace_lhs_, trace_psum_;
};

}  // namespace tpusim
