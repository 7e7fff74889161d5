#pragma once
// The cost of a lowered vector op on one core's VPU: the modulo schedule of its loop (derived
// from the VPU's own timing of one iteration), the instruction stream it lists, and the cycles
// and unit counts of running that stream on VpuTiming, exactly or by the steady-state fast
// path. Plain C++ (no SystemC).
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
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

struct VectorSteadyState;  // a loop body's repeating VPU state (vector_cost.cpp)

// The cost of vector ops on one VPU and VMEM configuration by the fast path, exactly equal to
// simulate_vector_op: simulates groups until the VPU state relative to the issue cycle
// repeats (the steady state: every later period adds the same cycles and counts), then
// extrapolates and simulates only the drain. It remembers the lowered loop and steady state
// of each loop body (op, saved mask, cols for row ops, element sizes), so further chunks of
// one op cost a drain simulation, and the cost of each exact op shape, since a program repeats
// a few chunk shapes thousands of times. Owned by the Vpu that asks; what it remembers is a
// pure function of the op and the config, so the models of one config on one thread share it
// (a pod's 2048 cores would otherwise each hold every body's snapshots: gigabytes; never
// shared between threads).
class VectorCostModel {
 public:
    VectorCostModel(const VpuConfig& vpu, const VmemConfig& vmem);
    ~VectorCostModel();
    VectorCostModel(const VectorCostModel&) = delete;
    VectorCostModel& operator=(const VectorCostModel&) = delete;

    // Throws as vector_loop_iterations. The reference stays valid while the model lives.
    const VectorOpCost& cost(const VectorOpDesc& op);

 private:
    struct BodyKey {
        VectorOp op;
        bool saved_mask;
        std::int64_t row_cols;  // cols for row ops (their body depends on it), else 0
        std::int64_t in_bytes, out_bytes;
        bool operator<(const BodyKey& o) const;
    };
    struct ShapeKey {
        VectorOp op;
        bool saved_mask;
        std::int64_t rows, cols, in_bytes, out_bytes;
        bool operator==(const ShapeKey& o) const;
    };
    struct ShapeHash {
        std::size_t operator()(const ShapeKey& k) const;
    };
    const VectorSteadyState& steady_state(const VectorOpDesc& op);

    // What the models of one config remember (see above), alive while one of them is.
    struct Memory {
        std::map<BodyKey, std::unique_ptr<const VectorSteadyState>> bodies;
        // Looked up once per vector instruction a core issues: hashed (references stay valid).
        std::unordered_map<ShapeKey, VectorOpCost, ShapeHash> costs;
    };
    static std::shared_ptr<Memory> shared_memory(const VpuConfig& vpu, const VmemConfig& vmem);

    VpuConfig vpu_;
    VmemConfig vmem_;
    std::shared_ptr<Memory> memory_;
};

// One op's cost by a model of its own: for tests and one-off queries (a simulation asks its
// Vpu, whose model remembers).
VectorOpCost vector_op_cost(const VectorOpDesc& op, const VpuConfig& vpu, const VmemConfig& vmem);

}  // namespace tpusim
