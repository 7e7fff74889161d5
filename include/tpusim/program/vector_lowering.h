#pragma once
// Lowering of vector trace ops (add, gelu, softmax, layernorm, ...) onto the vector unit: each
// op becomes a software-pipelined loop over 8 x 128 tiles (16 x 128 when bf16 is involved:
// bf16 is stored packed two rows per 32-bit sublane word, see docs/vpu.md), and its cost comes
// from running that loop on VpuTiming (arch/vpu/vector_cost.h), never from a fixed per-op
// number.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tpusim/common/types.h"
#include "tpusim/config/memory_config.h"
#include "tpusim/config/vpu_config.h"
#include "tpusim/program/vector_isa.h"
#include "tpusim/trace/trace.h"

namespace tpusim {

// One vector op on a rows x cols array (row ops reduce / normalise along cols). Element
// sizes in bytes: bf16 = 2, f32 = 4.
struct VectorOpDesc {
    VectorOp op = VectorOp::Add;
    // dropout: also writes its keep mask; dropout_grad: reads that mask instead of
    // regenerating it (VectorShape::saved_mask). Their bodies differ; other ops ignore it.
    bool saved_mask = false;
    std::int64_t rows = 1;
    std::int64_t cols = 1;
    std::int64_t in_bytes = 4;
    std::int64_t out_bytes = 4;
};

// The element size the VPU works in for data stored with `stored_bytes` per element in HBM
// and VMEM. The VPU of TPU v2/v3 has no 8-bit arithmetic: 8-bit data (s8, u8, pred) is
// widened as it is loaded and runs packed like bf16, while it moves at its own size. The
// program layer keeps OpSpec's sizes as stored and passes this to the VPU body.
inline std::int64_t vpu_element_bytes(std::int64_t stored_bytes) {
    return stored_bytes < 2 ? 2 : stored_bytes;
}

// The lowered op: a prologue (constants splatted into vregs) and a loop whose body is one
// iteration (one tile, or one row group for row ops). Body vregs below `const_regs` are the
// shared constants; the rest belong to the iteration, numbered from const_regs, and rotate
// over `reg_sets` copies (modulo variable expansion) so that iterations can overlap.
//
// Software pipeline (modulo schedule): body instruction j has an issue time t_j in a schedule
// of one iteration alone; iteration i's copy of it is placed at i * II + t_j (II, the
// initiation interval, a fraction of cycles), and the program lists instructions in that
// order. Chunk g of the program holds positions in [g * II, (g + 1) * II): body instruction j
// of iteration g - stage_j, in `kernel_order`. The in-order VPU then issues each as early as
// its slots and operands allow, so II only orders the listing; the cycles come from the VPU.
struct VectorLoop {
    std::vector<VInstr> prologue;
    std::vector<VInstr> body;
    int const_regs = 0;
    int body_regs = 0;
    int reg_sets = 1;
    std::int64_t iterations = 0;
    bool row_op = false;  // the body depends on cols (row reductions and norms)

    Cycle ii_num = 1, ii_den = 1;   // II = ii_num / ii_den cycles between iteration starts
    std::vector<int> stage;         // per body instruction: floor(t_j / II)
    std::vector<int> kernel_order;  // body indices by (t_j mod II, older iteration first)
    double ii() const { return static_cast<double>(ii_num) / static_cast<double>(ii_den); }
    int stages() const;  // 1 + max stage
    std::int64_t chunks() const { return iterations + stages() - 1; }
};

struct Ctx;  // a loop body under construction (src/program/vector_lower_ctx.h)

// What the program layer knows of one vector op: one entry per VectorOp
// (vector_op_lowering), so that a new op is one entry. Its name in reports and messages is
// the trace format's (vector_op_info(op).name; vector_op_name), its streams and FLOPs are in
// the trace layer's table (VectorOpInfo), and whether it reduces each row to one value is
// VectorOpInfo::reduces.
struct VectorOpLowering {
    // Builds one iteration of the op's loop body (a tile, or a row group for row ops).
    void (*expand)(Ctx& c);
    // Row op: reduces or normalises along cols, so one iteration is a row group across all
    // of cols, the body depends on cols, and chunks hold whole rows (softmax, layernorm,
    // rmsnorm, reduce_*; bias_add and batchnorm are row-wise in the trace's sense only).
    bool row_op;
    // Extra reads of its input that XLA's separate statistics fusions add when the op is not
    // fused (xla_statistics_passes): the first a reduce_max where statistics_max_first, the
    // others reduce_sum.
    int statistics_passes;
    bool statistics_max_first;
    // Its result is followed by two rows of per-column sums (dgamma and dbeta).
    bool column_sums;
    // The last statistics kernel also stores the elementwise value the final kernel reads in
    // place of the input (softmax: exp(x - max), which XLA's instruction fusion does not
    // duplicate into its two users, the row sum and the quotient, because exp is one of its
    // expensive ops; docs/program.md, "Row normalisations are XLA's kernels").
    bool stores_intermediate;
};
const VectorOpLowering& vector_op_lowering(VectorOp op);

// Every form lower_vector_loop accepts, in the trace format's order (docs/trace-format.md):
// each VectorOp, then the saved-mask forms of dropout and dropout_grad, with the default
// sizes of VectorOpDesc.
const std::vector<VectorOpDesc>& vector_op_forms();
// The op's name in messages: the trace's, with "_saved_mask" for a saved-mask form.
std::string vector_op_name(VectorOp op, bool saved_mask);
// Row ops (VectorOpLowering::row_op) iterate over row groups.
inline bool is_row_vector_op(VectorOp op) { return vector_op_lowering(op).row_op; }

// Loop iterations of `op` (tiles, or row groups for row ops). Throws InputError("vector op",
// <vector_op_name>, ...) for an op outside the enum, non-positive sizes or element sizes other than
// 2 and 4.
std::int64_t vector_loop_iterations(const VectorOpDesc& op, const VpuConfig& vpu);

// The loop body, not yet scheduled (ii 1, no stages): the VPU layer fills in the modulo
// schedule from its own timing (schedule_loop in arch/vpu/vector_cost.h). Throws as
// vector_loop_iterations.
VectorLoop lower_vector_loop(const VectorOpDesc& op, const VpuConfig& vpu);

}  // namespace tpusim
