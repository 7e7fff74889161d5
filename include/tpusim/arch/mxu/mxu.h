#pragma once
// The matrix unit (MXU) of a TensorCore: a weight-stationary systolic array of rows x cols PEs
// (128 x 128 on TPU v2 and v3), bf16 multiplies and fp32 accumulation. Start here; the parts:
//
//   mxu_block.h     MxuBlockTimer: one matmul instruction (a block of weight tiles that stream
//                   the same LHS rows) timed at once, by the configured fidelity:
//   mxu_timing.h    MxuTiming: tile fidelity, the pipeline in closed form, one weight tile
//                   ("pass") at a time; mxu_gemm_timing for a whole GEMM on 1..n MXUs.
//   mxu_pe_array.h  MxuPeArray: PE fidelity, every PE every cycle, real numbers; the reference
//                   the tile model is tested against (same MxuPassTiming for every pass).
//   mxu_numerics.h  bf16 rounding and the reference GEMM the PE array matches bit for bit.
//   mxu_gemm.h      a GEMM cut into the array's tiles.
//   docs/mxu.md     the pipeline, the cycle equations and a worked example.
//
// Mxu (below) is the unit the TensorCore, `tpusim bench mxu` and the tests issue matmul
// instructions to, through core_in (UnitIf, tpusim/arch/core/unit_if.h). It owns its queue
// (sequencer.unit_queue_depth blocks) and one SystemC thread that takes the blocks in order:
// the fidelity's block timer gives the block's cycles at once, the completion is told then
// (delivered by the issuer at results_end), and the queue slot frees when the block's last LHS
// row has entered the array (lhs_end), when the array takes the next block, whose weights the
// model preloads behind this one. Both fidelities give the same cycles. Time convention: one
// SystemC ns is one core cycle (sim_time.h).
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <systemc>
#include <vector>

#include "tpusim/arch/core/unit_if.h"
#include "tpusim/arch/mxu/mxu_block.h"
#include "tpusim/arch/mxu/mxu_fidelity.h"
#include "tpusim/arch/mxu/mxu_pe_array.h"
#include "tpusim/config/mxu_config.h"

namespace tpusim {

class Mxu : public sc_core::sc_module, public UnitIf {
 public:
    sc_core::sc_export<UnitIf> core_in{"core_in"};

    // `queue_depth`: blocks issued and not yet streamed (sequencer.unit_queue_depth); `index`:
    // which of its core's MXUs it is (its timeline track, "MXU 1").
    SC_HAS_PROCESS(Mxu);
    Mxu(sc_core::sc_module_name name, const MxuConfig& cfg, MxuFidelity fidelity,
        std::int64_t queue_depth, std::size_t index = 0);

    // UnitIf: a matmul instruction (MatmulInstr: its m x k x n block).
    bool full(const Instr& in) const override;
    const sc_core::sc_event& freed(const Instr&) const override { return popped_; }
    void issue(const Instr& in, const UnitRequest& req) override;
    std::string track_name() const override;

    // PE fidelity: the numbers of the next block issued (bench --check, tests); its results
    // are in `ops.c` once its completion has been told. A block issued without carries zeros.
    void compute_next(const MxuBlockOperands& ops) { next_ops_ = ops; }
    MxuFidelity fidelity() const { return fidelity_; }

    // PE fidelity: writes the LHS value and partial sum of the top-left dim x dim PEs to a
    // waveform; call during elaboration. Values of cycle t appear at time t + 1. The waveform
    // comes from a second array stepped in SystemC time with the same passes (the block timer
    // runs ahead of the simulation); it shows, it does not time.
    void trace(sc_core::sc_trace_file* tf, std::int64_t dim);

 private:
    struct Block {
        MatmulInstr mm;
        MxuBlockOperands ops;
        UnitRequest req;
    };
    void run();
    void wave_thread();
    void sample_wave();

    MxuConfig cfg_;
    MxuFidelity fidelity_;
    std::size_t depth_, index_;
    std::unique_ptr<MxuBlockTimer> block_;
    std::deque<Block> queue_;
    std::vector<MxuTile> tiles_;  // the running block's passes (storage reused per block)
    sc_core::sc_event pushed_, popped_;
    MxuBlockOperands next_ops_;
    // Waveform mirror (fixed size once traced).
    std::unique_ptr<MxuPeArray> wave_;
    sc_core::sc_event wave_work_;
    std::int64_t trace_dim_ = 0;
    sc_dt::uint64 trace_cycle_ = 0;
    std::vector<float> trace_lhs_, trace_psum_;
};

}  // namespace tpusim
