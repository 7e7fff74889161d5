#pragma once
// The timing of one MXU as the TensorCore drives it: a *block* is one matmul instruction, a
// list of weight tiles (passes) that all stream the same LHS rows, issued together at one
// cycle with every operand in VMEM. Two fidelities give the same answer (tested):
//
//   tile  MxuTiming, the closed-form pass schedule (fast: O(passes));
//   pe    MxuPeArray stepped cycle by cycle, every processing element (O(cycles x rows)).
//
// Contract: blocks are issued in order, each no earlier than the previous block's lhs_end
// (the lane takes the next block once the array has accepted the last LHS row). Later blocks
// never change an earlier block's timing: passes run in order.
#include <cstdint>
#include <memory>
#include <vector>

#include "tpusim/arch/mxu/mxu_fidelity.h"
#include "tpusim/arch/mxu/mxu_gemm.h"
#include "tpusim/arch/mxu/mxu_pe_array.h"
#include "tpusim/arch/mxu/mxu_timing.h"
#include "tpusim/config/mxu_config.h"

namespace tpusim {

struct MxuBlockTiming {
    Cycle first_weights_start = 0;  // the first pass starts loading its weights
    Cycle lhs_end = 0;              // the last pass has pushed its last LHS row
    Cycle results_end = 0;          // the cycle after the last result left the array
    Cycle busy_cycles = 0;          // cycles added to the union of [weights_start, results_end)
    std::uint64_t useful_macs = 0, array_macs = 0, passes = 0;
};

// Real numbers for a block (pe fidelity; the tile timer has none): C (m x n) += A (m x k) x
// B (k x n), row-major with leading dimensions in elements. Null pointers: zeros / discard.
struct MxuBlockOperands {
    const float* a = nullptr;
    std::int64_t lda = 0;
    const float* b = nullptr;
    std::int64_t ldb = 0;
    float* c = nullptr;
    std::int64_t ldc = 0;
};
// The operands of one of the block's tiles: its weights, its LHS columns and its output
// columns, accumulated (the accumulators summing the K tiles in pass order).
MxuPeOperands tile_operands(const MxuTile& tile, const MxuBlockOperands& ops);

class MxuBlockTimer {
 public:
    virtual ~MxuBlockTimer() = default;
    // Runs the passes of one block (mxu_gemm_tiles of its m x k x n) issued at `now`, all
    // operands available then. Every result is written to ops.c exactly once, by the time
    // run returns (pe fidelity).
    virtual MxuBlockTiming run(const std::vector<MxuTile>& tiles, Cycle now,
                               const MxuBlockOperands& ops = {}) = 0;
};

std::unique_ptr<MxuBlockTimer> make_mxu_block_timer(const MxuConfig& cfg, MxuFidelity fidelity);

}  // namespace tpusim
