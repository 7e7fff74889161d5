#pragma once
// The cost of a lowered vector op on one core's VPU: the modulo schedule of its loop (derived
// from the VPU's own timing of one iteration), the instruction stream it lists, and the cycles
// and unit counts of running that stream on VpuTiming, exactly or by the steady-state fast
// path. Plain C++ (no SystemC).
#include <array>
#include <cstdint>
#include <vector>

#include "tpusim/arch/vpu/vpu.h"
#include "tpusim/common/types.h"
#include "tpusim/config/memory_config.h"
#include "tpusim/config/vpu_config.h"
#include "tpusim/program/vector_isa.h"
#include "tpusim/program/vector_lowering.h"

namespace tpusim {

struct VectorOpCost {
    Cycle cycles = 0;  // first issue to last completion on one core's VPU
    Bytes vmem_bytes_loaded = 0;
    Bytes vmem_bytes_stored = 0;
    std::array<std::uint64_t, kVUnits> busy_cycles{};  // slot-cycles per VUnit (valu, vld, ..)
    std::uint64_t instructions = 0;
};

// Fills loop.ii, stage and kernel_order (the modulo schedule; see VectorLoop) from one
// iteration timed alone on VpuTiming.
void schedule_loop(VectorLoop& loop, const VpuConfig& vpu, const VmemConfig& vmem);

// lower_vector_loop followed by schedule_loop. Throws as vector_loop_iterations.
VectorLoop scheduled_vector_loop(const VectorOpDesc& op, const VpuConfig& vpu,
                                 const VmemConfig& vmem);

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
