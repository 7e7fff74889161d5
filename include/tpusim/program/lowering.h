#pragma once
// Program layer: lowers trace ops to per-core instruction streams, the way XLA does for a TPU
// before the chip runs anything:
//   - matmuls (and convolutions as implicit GEMMs) are tiled to fit VMEM and the MXUs: operand
//     tiles are DMAed from HBM, weight tiles are split between the core's MXUs, results are
//     written back; the DMA of the next tiles is issued before the MXU work of the current
//     ones (double buffering), and tiles of a K-independent weight block stay resident.
//   - vector ops are cut into VMEM-sized chunks of whole rows: DMA in, a vector loop, DMA out.
//   - an op marked `fused` consumes its producer's result tiles in VMEM (no HBM round trip);
//     the producer then skips its write-back.
//   - collectives and host transfers become one instruction for the ICI / host link.
// Dependencies become waits on the producing instructions; VMEM buffers are allocated from a
// ring, and reusing a region waits for its last reader (write-after-read), so the amount of
// buffering follows from the VMEM capacity in the config.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tpusim/config/tpu_config.h"
#include "tpusim/program/program.h"
#include "tpusim/trace/op_kind.h"
#include "tpusim/trace/trace.h"

namespace tpusim {

// One op as the program layer sees it (trace ops are converted into this; see lower_trace).
struct OpSpec {
    std::string id;
    OpKind kind = OpKind::Matmul;  // any but Conv2d (op_specs lowers a conv as its GEMM)
    // matmul / conv2d as implicit GEMM
    std::int64_t batch = 1, m = 0, k = 0, n = 0;
    std::int64_t in_bytes = 2, out_bytes = 2;   // element sizes
    std::int64_t lhs_bytes = 2, rhs_bytes = 2;  // matmul: each operand's element size
    int mxu_passes = 1;  // matmul: passes through the MXU per tile (precision_passes)
    // matmul: times its tile plan's VMEM budget was halved because its pipeline's buffers did
    // not fit beside the ones it holds (lower_ops retries; docs/program.md, "VMEM").
    int vmem_halvings = 0;
    // conv2d: the NHWC input the implicit GEMM's LHS views (kh = 0: a plain matmul). The LHS
    // tiles then move the input rows their windows cover, not im2col rows (MatmulLowering).
    struct ConvWindow {
        std::int64_t h = 0, w = 0, c = 0, kh = 0, kw = 0, stride_h = 1, out_h = 0, out_w = 0;
    } conv;
    // vector
    VectorOp vop = VectorOp::Add;
    // dropout: also writes its keep mask (a second result); dropout_grad: reads it (a second
    // operand). VectorShape::saved_mask.
    bool saved_mask = false;
    std::int64_t rows = 0, cols = 0;
    std::int64_t vector_inputs = 1;
    // Full-size result streams, each its own array in the result buffer (adam: p, m, v).
    std::int64_t vector_outputs = 1;
    // Element size of input stream j / result array k where it is not in_bytes / out_bytes
    // (0 or past the end: the op's); a saved dropout mask is pred, 1 byte.
    std::vector<std::int64_t> input_elem, output_elem;
    // The result array of its dep that operand j reads (0 or past the end: the first; a
    // saved-mask dropout_grad's mask is its dropout's second).
    std::vector<std::int64_t> operand_array;
    bool rowwise = false;     // reduces along cols (softmax, layernorm, reduce_*): whole rows
    double vector_flops = 0;  // useful FLOPs of a vector op on one core (op_flops)
    // data movement and collectives
    Bytes bytes = 0;
    // Collectives: the replica groups (TraceOp::replica_groups), a partition of the op's
    // cores; each core takes the group that holds it. Empty: one group of all the op's cores.
    std::vector<std::vector<std::int64_t>> replica_groups;
    std::int64_t peer = -1;
    std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
    // graph
    std::vector<std::size_t> deps;
    std::vector<std::size_t> carried;  // loop body ops: ops of the previous trip it needs
    // Operand j reads deps[operands[j]] (-1 or past the list: a parameter); empty: deps[j]
    // while j < deps.size() (TraceOp::operands).
    std::vector<int> operands;
    bool fused = false;
    bool lhs_in_vmem = false, rhs_in_vmem = false, result_in_vmem = false;  // S(1): no DMA
    std::uint32_t vmem_inputs = 0;    // vector: bit j set when input j is on chip (no DMA)
    std::vector<std::int64_t> cores;  // empty: every core of the program
};

// ops[first, first + count) run `trips` times (a trace loop): lowered trip after trip with
// the same HBM addresses, each trip's instructions made when the stream reaches them.
struct LoopSpec {
    std::size_t first = 0, count = 0;
    std::int64_t trips = 1;
    // Trips lowered into the streams, 0: all. Fewer for loop reuse (docs/program.md, "Loops"):
    // the simulation charges the rest; per-op figures (OpInfo) still count all `trips`.
    std::int64_t lowered_trips = 0;
    std::int64_t lowered() const {
        return lowered_trips > 0 && lowered_trips < trips ? lowered_trips : trips;
    }
};

struct LoweringOptions {
    std::int64_t cores = 1;       // program cores (SPMD); tiling choices: cfg.lowering
    std::vector<LoopSpec> loops;  // by first, disjoint
};

// Instructions one core's stream may hold: waits name instructions by 32-bit index.
inline constexpr std::size_t kMaxCoreInstructions = (std::size_t{1} << 32) - 1;

// Element bytes of a vector op's input stream j and result array k in HBM and VMEM: its
// in_bytes and out_bytes, except a saved dropout mask, a pred array of one byte per element
// (XLA's TPU layout packs four to a 32-bit word).
std::int64_t vector_input_bytes(const OpSpec& op, std::int64_t j);
std::int64_t vector_output_bytes(const OpSpec& op, std::int64_t k);

// The index in op.replica_groups of the last group that holds `core`, or -1 for none.
std::ptrdiff_t replica_group_of(const OpSpec& op, std::int64_t core);
// The ICI instruction of collective (or send / recv) op `i` on `core` of a program on `cores`
// cores: its role, kind, bytes and this core's replica group (or op.cores, or every core).
CollectiveInstr collective_instr(const OpSpec& op, std::size_t i, std::int64_t core,
                                 std::int64_t cores);

// Extra reads of its input that XLA's separate statistics fusions add to an unfused row
// normalisation (layernorm, softmax: 2; rmsnorm: 1; other ops: 0). docs/program.md.
int xla_statistics_passes(VectorOp vop);

// Throws InputError(trace_name, "op \"id\"", ...) when an op cannot be placed (e.g. its
// smallest tile does not fit VMEM).
Program lower_ops(const std::vector<OpSpec>& ops, const TpuConfig& cfg, const LoweringOptions& opts,
                  const std::string& trace_name);

}  // namespace tpusim
