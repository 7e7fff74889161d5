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
// shared constants; the rest are the iteration's own, numbered from const_regs. The loop is
// unrolled `unroll` times and the copies interleaved instruction by instruction, each copy
// in its own vregs: that is the software pipeline (it fills as many vregs as fit).
struct VectorLoop {
    std::vector<VInstr> prologue;
    std::vector<VInstr> body;
    int const_regs = 0;
    int body_regs = 0;
    int unroll = 1;
    std::int64_t iterations = 0;
    bool row_op = false;  // the body depends on cols (row reductions and norms)
};

// Op names lower_vector_op accepts.
const std::vector<std::string>& vector_op_names();

// Throws InputError("vector op", <op>, ...) for an unknown op, non-positive sizes or element
// sizes other than 2 and 4.
VectorLoop lower_vector_loop(const VectorOpDesc& op, const VpuConfig& vpu);

// Iterations [first, first + count) of the loop, interleaved (count <= loop.unroll).
std::vector<VInstr> emit_group(const VectorLoop& loop, std::int64_t first, int count);

// The whole program, materialised: prologue + every group. For tests and small ops; use
// vector_op_cost for real sizes.
VectorProgram lower_vector_op(const VectorOpDesc& op, const VpuConfig& vpu);

// Cost by simulating the whole program on VpuTiming (the reference).
VectorOpCost simulate_vector_op(const VectorOpDesc& op, const VpuConfig& vpu,
                                const VmemConfig& vmem);

// Fast path, exactly equal to simulate_vector_op: simulates groups until the VPU state
// relative to the issue cycle repeats (the steady state: every later period adds the same
// cycles and counts), then extrapolates and simulates only the tail. The per-(loop, config)
// steady state is cached, so repeated calls for chunks of one op cost a tail simulation.
VectorOpCost vector_op_cost(const VectorOpDesc& op, const VpuConfig& vpu,
                            const VmemConfig& vmem);

}  // namespace tpusim
