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

namespace tpusim {

// One vector op on a rows x cols array (row ops reduce / normalise along cols). Element
// sizes in bytes: bf16 = 2, f32 = 4.
struct VectorOpDesc {
    std::string op;
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

// Op names lower_vector_op accepts.
const std::vector<std::string>& vector_op_names();
// Row ops reduce or normalise along cols; their loop iterates over row groups.
bool is_row_vector_op(const std::string& op);

// Loop iterations of `op` (tiles, or row groups for row ops). Throws InputError("vector op",
// <op>, ...) for an unknown op, non-positive sizes or element sizes other than 2 and 4.
std::int64_t vector_loop_iterations(const VectorOpDesc& op, const VpuConfig& vpu);

// The loop body, not yet scheduled (ii 1, no stages): the VPU layer fills in the modulo
// schedule from its own timing (schedule_loop in arch/vpu/vector_cost.h). Throws as
// vector_loop_iterations.
VectorLoop lower_vector_loop(const VectorOpDesc& op, const VpuConfig& vpu);

}  // namespace tpusim
