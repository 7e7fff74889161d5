#pragma once
// Trace format v1 (docs/trace-format.md): the in-memory program the program layer lowers.
//
// Contract: a Trace returned by read_trace/parse_trace is fully validated: ids are unique,
// deps name existing ops and form no cycle, `ops` is in a topological order (file order where
// the deps allow), every size is positive, and every FLOP and byte figure below fits in 63 bits.
// Shapes are per core (SPMD, as in XLA HLO after partitioning): an op runs on each core of
// `cores` (or of the whole program) with the same shape.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tpusim/trace/op_kind.h"

namespace tpusim {

enum class DType { Bf16, F16, F32, S32, S8, U8, Pred };

// Element-wise, row-wise and optimizer operations of the vector unit (VPU).
// clang-format off
enum class VectorOp {
    // elementwise, two full-size inputs
    Add, Sub, Mul, Div, Max, Min,
    // elementwise, one input
    Neg, Abs, Relu, Gelu, Tanh, Sigmoid, Exp, Log, Sqrt, Rsqrt, Scale, Convert, Dropout,
    Transpose,
    // gradients: dy and the forward input or output (dropout_grad: dy only)
    ReluGrad, GeluGrad, TanhGrad, SigmoidGrad, DropoutGrad,
    // row-wise (along cols): a rows x cols shape is required
    BiasAdd, Softmax, SoftmaxGrad, Layernorm, LayernormGrad, Rmsnorm, ReduceSum, ReduceMax,
    // batch norm: statistics per column, over the rows (rows = batch x pixels, cols = channels)
    Batchnorm, BatchnormGrad,
    // embedding tables: rows x cols gathered from / scattered into a table
    Gather, ScatterAdd,
    // optimizer updates over `elements` parameters (state kept in the parameter dtype)
    Sgd, SgdMomentum, Adam, Lamb,
};
// clang-format on

// What the VPU does per element of a vector op, for the lowering and for op_flops.
struct VectorOpInfo {
    const char* name;
    int inputs;             // full-size input streams (rows x cols each)
    int outputs;            // full-size output streams (reductions: 1 of `rows` elements)
    int flops_per_element;  // arithmetic per element, counting a transcendental as one
    int transcendentals_per_element;
    bool row_wise;  // needs rows x cols; runs along cols
    bool reduces;   // output has `rows` elements
};
const VectorOpInfo& vector_op_info(VectorOp op);

enum class Padding { Same, Valid };

enum class MatmulPrecision { Default, High, Highest };
const char* precision_name(MatmulPrecision p);
bool parse_precision(std::string_view s, MatmulPrecision& out);

struct MatmulShape {
    std::int64_t batch = 1, m = 0, k = 0, n = 0;  // [batch] x (m x k) * (k x n)
    bool transpose_lhs = false, transpose_rhs = false;
};

struct Conv2dShape {
    std::int64_t batch = 0, h = 0, w = 0, c_in = 0, c_out = 0, kh = 0, kw = 0;
    std::int64_t stride_h = 1, stride_w = 1;
    Padding padding = Padding::Same;
    std::int64_t out_h() const;
    std::int64_t out_w() const;
};

struct VectorShape {
    VectorOp op = VectorOp::Add;
    std::int64_t rows = 1, cols = 0;  // `elements` in the file is rows = 1, cols = elements
    std::int64_t table_rows = 0;      // gather/scatter_add: rows of the embedding table
    // dropout: also writes its keep mask (a second result); dropout_grad: reads that mask (a
    // second operand) instead of regenerating it from the seed. `"mask": "saved"`.
    bool saved_mask = false;
    std::int64_t elements() const { return rows * cols; }
};
// Full-size input and output streams of this vector op: its table row's, plus the mask of a
// dropout or dropout_grad that saves it.
int vector_inputs(const VectorShape& v);
int vector_outputs(const VectorShape& v);

struct TraceOp {
    std::string id;
    OpKind kind = OpKind::Matmul;
    DType dtype = DType::Bf16;
    DType out_dtype = DType::Bf16;  // result dtype: the dtype unless the file says otherwise
    // matmul, conv2d: an operand's element type in HBM where it is not the dtype. An f32
    // operand of a bf16 matmul is XLA's convert fused into the dot: read at 4 bytes, rounded
    // to bf16 on its way into the array.
    std::optional<DType> lhs_dtype, rhs_dtype;
    DType lhs_type() const { return lhs_dtype.value_or(dtype); }
    DType rhs_type() const { return rhs_dtype.value_or(dtype); }
    // matmul, conv2d: XLA's PrecisionConfig of the dot ("precision": default, high, highest).
    // The MXU multiplies bf16 only, so an f32 operand is split into bf16 parts and the product
    // takes 1 (default: each operand rounded to bf16), 3 (high: bf16_3x) or 6 (highest) passes
    // through the array (precision_passes).
    MatmulPrecision precision = MatmulPrecision::Default;
    MatmulShape matmul;
    Conv2dShape conv;
    VectorShape vector;
    // copy/infeed/outfeed: bytes moved; collectives/send/recv: the per-core input buffer.
    std::int64_t bytes = 0;
    // Collectives: a partition of the op's cores into equal groups (default: one group).
    std::vector<std::vector<int>> replica_groups;
    std::vector<std::pair<int, int>> source_target_pairs;  // collective_permute
    int peer = -1;                                         // send: target; recv: source
    // Indices into Trace::ops, all earlier than this op, in the order the file names them.
    std::vector<std::size_t> deps;
    // Ops of a loop body only (format version 2): body ops of the same loop whose result of
    // the previous trip this op needs (a loop-carried value; in the first trip the loop's
    // inputs, which `deps` name). Indices into Trace::ops, in the order the file names them.
    std::vector<std::size_t> carried;
    // Which dep each HBM operand reads (`operands` in the file): operand j (in
    // op_operand_bytes order, primary first) reads the result of deps[operands[j]], or is a
    // parameter (a tensor no op of the trace produces) where operands[j] is -1 or j is past
    // the list. Empty: operand j reads deps[j] while there are deps (the default).
    std::vector<int> operands;
    // The primary operand (first input) arrives on chip from the producer(s) in `deps` and is
    // not read from HBM; producers whose consumers are all fused keep their result on chip.
    bool fused = false;
    // Operands (matmul/conv2d: 0 = lhs, 1 = rhs) held in VMEM (XLA's memory space S(1)): no
    // HBM read. result_in_vmem: the result stays in VMEM, not written back to HBM.
    std::vector<int> vmem_operands;
    bool result_in_vmem = false;
    std::vector<int> cores;  // the cores that run this op; empty: every core of the program
    int line = 0;            // 1-based line of the op in its file; 0 when unknown
};

// A loop (format version 2): ops[first, first + count) run `trips` times in a row, trip after
// trip, without being copied. A body op's `deps` inside the body are ops of the same trip;
// deps outside it are ops before the loop; an op after the loop that names a body op waits
// for its last trip.
struct TraceLoop {
    std::string id;
    std::size_t first = 0, count = 0;
    std::int64_t trips = 1;
};

struct Trace {
    std::string name;
    int version = 1;
    std::int64_t cores = 1;
    std::vector<TraceOp> ops;  // topological order
    std::string path;
    // Bytes per core of the program's parameters (inputs resident in HBM for the whole run,
    // each counted once however many ops read it), or -1 when the file does not say; then the
    // HBM footprint counts every operand without a producer as a parameter of its own.
    std::int64_t parameter_bytes = -1;
    std::vector<TraceLoop> loops;  // by `first`, disjoint; empty in a version 1 file
};

inline constexpr int kTraceVersion = 1;
// Version 2 is version 1 plus loops (`loops`, and `carried` on body ops); files without loops
// are written as version 1.
inline constexpr int kTraceLoopVersion = 2;
// Ops a loop-free copy of a trace may have (unroll_loops).
inline constexpr std::size_t kMaxUnrolledOps = std::size_t{1} << 24;
inline constexpr const char* kTraceFormat = "tpusim.trace";

// Throws InputError(path, where, what): where is a JSON pointer ("/version"),
// "line L, column C" (JSON syntax) or op "<id>" / ops[<index>] (one op).
// board_cores: TensorCores of the configured board; the trace's `cores` defaults to it.
Trace read_trace(const std::string& path, std::int64_t board_cores);
// read_trace on text already in memory; `name` stands for the file in messages.
Trace parse_trace_text(const std::string& text, const std::string& name, std::int64_t board_cores);
Trace parse_trace(const nlohmann::json& j, const std::string& name, std::int64_t board_cores);
// As parse_trace, with the 1-based source line of each op (op_lines[i] for ops[i]).
Trace parse_trace(const nlohmann::json& j, const std::string& name, std::int64_t board_cores,
                  const std::vector<int>& op_lines);

// Passes of a matmul or conv2d through the MXU under its precision: 1, 3 or 6 where an
// operand is f32 (XLA's bf16 splitting of an f32 dot on the TPU), 1 for bf16 and 8-bit operands.
int precision_passes(const TraceOp& op);
const char* dtype_name(DType d);
std::int64_t dtype_bytes(DType d);

// The implicit GEMM of a conv2d: m = batch*out_h*out_w, k = kh*kw*c_in, n = c_out.
MatmulShape conv_as_matmul(const Conv2dShape& c);

// Per core running the op. FLOPs: 2*batch*m*k*n for matmul/conv (a multiply-add is two),
// flops_per_element*elements for vector ops, 0 for data movement and collectives.
std::int64_t op_flops(const TraceOp& op);
// Sizes of the operands in their order (primary first) and of the result(s).
std::vector<std::int64_t> op_operand_bytes(const TraceOp& op);
std::int64_t op_bytes_in(const TraceOp& op);
std::int64_t op_bytes_out(const TraceOp& op);
// The dep (an index into Trace::ops) whose result operand j of `op` reads, or -1 when the
// operand is a parameter (`operands`, else positional: deps[j] while j < deps.size()).
std::ptrdiff_t op_operand_dep(const TraceOp& op, std::size_t j);
// Bytes read from HBM: op_bytes_in less the primary operand of a fused op and the operands
// held in VMEM (vmem_operands).
std::int64_t op_hbm_bytes_in(const TraceOp& op);
// How many cores run the op.
std::int64_t op_core_count(const Trace& t, const TraceOp& op);
// For each op: how many times it runs (its loop's trips, else 1).
std::vector<std::int64_t> op_trips(const Trace& t);
// The same program with every loop written out trip by trip (the body op `x` of trip t > 0 is
// "x@t"; carried deps name the previous trip's op): what a loop means, for tests and for
// consumers that need a flat trace. Throws InputError when the copy would exceed
// kMaxUnrolledOps.
Trace unroll_loops(const Trace& t);

// For each op: true when its result is not stored in HBM: it stays in VMEM
// (result_in_vmem), or it has consumers and all of them are fused.
std::vector<bool> results_kept_on_chip(const Trace& t);

}  // namespace tpusim
