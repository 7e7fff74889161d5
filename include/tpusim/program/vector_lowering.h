#pragma once
// Lowering of vector trace ops (add, gelu, softmax, layernorm, ...) onto the vector unit: each
// op becomes a software-pipelined loop over 8 x 128 tiles (16 x 128 when bf16 is involved:
// bf16 is stored packed two rows per 32-bit sublane word, see docs/vpu.md), and its cost comes
// from running that loop on VpuTiming, never from a fixed per-op number.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tpusim/arch/vpu.h"
#include "tpusim/common/types.h"
#include "tpusim/config/memory_config.h"
#include "tpusim/config/vpu_config.h"

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

struct VectorOpCost {
    Cycle cycles = 0;  // first issue to last completion on one core's VPU
    Bytes vmem_bytes_loaded = 0;
    Bytes vmem_bytes_stored = 0;
    std::array<std::uint64_t, kVUnits> busy_cycles{};  // slot-cycles per VUnit (valu, vld, ..)
    std::uint64_t instructions = 0;
};

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

// Throws as vector_loop_iterations. The schedule uses the op table and the VMEM port widths.
VectorLoop lower_vector_loop(const VectorOpDesc& op, const VpuConfig& vpu, const VmemConfig& vmem);

// Chunk g (0 <= g < loop.chunks()) of the software-pipelined program, for a loop of
// `iterations` iterations (instructions of iterations outside [0, iterations) are left out).
std::vector<VInstr> emit_chunk(const VectorLoop& loop, std::int64_t g, std::int64_t iterations);

// The whole program, materialised: prologue + every chunk. For tests and small ops; use
// vector_op_cost for real sizes.
VectorProgram lower_vector_op(const VectorOpDesc& op, const VpuConfig& vpu, const VmemConfig& vmem);

// Cost by simulating the whole program on VpuTiming (the reference).
VectorOpCost simulate_vector_op(const VectorOpDesc& op, const VpuConfig& vpu,
                                const VmemConfig& vmem);

// Fast path, exactly equal to simulate_vector_op: simulates groups until the VPU state
// relative to the issue cycle repeats (the steady state: every later period adds the same
// cycles and counts), then extrapolates and simulates only the drain. The lowered loop and its
// steady state are cached per (op, cols for row ops, element sizes, config), so repeated calls
// for chunks of one op cost a drain simulation. Thread-safe.
VectorOpCost vector_op_cost(const VectorOpDesc& op, const VpuConfig& vpu, const VmemConfig& vmem);

}  // namespace tpusim
