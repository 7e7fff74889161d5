// One row per HLO opcode: its spelling, how the import treats it (OpClass), how it is costed
// (hlo_cost.cpp, hlo_matrix.cpp, hlo_collective.cpp) and what the costing and the fusion pass
// need to know of it. docs/hlo.md, "How each opcode is costed", describes the rows.
#include <unordered_map>

#include "hlo_import.h"

namespace tpusim::hlo_detail {

namespace {

using Op = HloOpcode;

// Columns: opcode, spelling, class, cost (nullptr: no trace op of its own), then for
// elementwise ops the VPU op with one stream in and with two (std::nullopt: scale, add), and
// whether XLA counts it as expensive (HloInstruction::IsOpElementwise ops that instruction
// fusion does not duplicate: divide, exp, log, tanh, sqrt, ...); for collectives the trace kind.
// clang-format off
constexpr OpcodeInfo kOpcodes[] = {
    {Op::Parameter, "parameter", OpClass::Free, nullptr},
    {Op::Constant, "constant", OpClass::Free, nullptr},
    {Op::Tuple, "tuple", OpClass::Free, nullptr},
    {Op::GetTupleElement, "get-tuple-element", OpClass::Free, nullptr},
    {Op::Bitcast, "bitcast", OpClass::Free, nullptr},
    {Op::Reshape, "reshape", OpClass::Free, nullptr},
    {Op::AfterAll, "after-all", OpClass::Free, nullptr},
    {Op::PartitionId, "partition-id", OpClass::Free, nullptr},
    {Op::ReplicaId, "replica-id", OpClass::Free, nullptr},
    {Op::OptBarrier, "opt-barrier", OpClass::Free, nullptr},
    {Op::AddDependency, "add-dependency", OpClass::Free, nullptr},
    {Op::Domain, "domain", OpClass::Free, nullptr},
    {Op::GetDimensionSize, "get-dimension-size", OpClass::Free, nullptr},
    {Op::SetDimensionSize, "set-dimension-size", OpClass::Free, nullptr},
    {Op::RngGetAndUpdateState, "rng-get-and-update-state", OpClass::Free, nullptr},
    {Op::CopyStart, "copy-start", OpClass::Free, nullptr},
    {Op::SendDone, "send-done", OpClass::Free, nullptr},
    {Op::RecvDone, "recv-done", OpClass::Free, nullptr},
    {Op::InfeedDone, "infeed-done", OpClass::Free, nullptr},
    {Op::OutfeedDone, "outfeed-done", OpClass::Free, nullptr},
    {Op::Broadcast, "broadcast", OpClass::Generated, cost_movement},
    {Op::Iota, "iota", OpClass::Generated, cost_movement},
    {Op::Add, "add", OpClass::Elementwise, cost_elementwise, std::nullopt, VectorOp::Add, false},
    {Op::Subtract, "subtract", OpClass::Elementwise, cost_elementwise, std::nullopt, VectorOp::Sub, false},
    {Op::Multiply, "multiply", OpClass::Elementwise, cost_elementwise, std::nullopt, VectorOp::Mul, false},
    {Op::Divide, "divide", OpClass::Elementwise, cost_elementwise, std::nullopt, VectorOp::Div, true},
    {Op::Maximum, "maximum", OpClass::Elementwise, cost_elementwise, std::nullopt, VectorOp::Max, false},
    {Op::Minimum, "minimum", OpClass::Elementwise, cost_elementwise, std::nullopt, VectorOp::Min, false},
    {Op::Remainder, "remainder", OpClass::Elementwise, cost_elementwise, std::nullopt, VectorOp::Div, true},
    {Op::Power, "power", OpClass::Elementwise, cost_elementwise, VectorOp::Exp, std::nullopt, true},
    {Op::Atan2, "atan2", OpClass::Elementwise, cost_elementwise, std::nullopt, VectorOp::Div, true},
    {Op::And, "and", OpClass::Elementwise, cost_elementwise, std::nullopt, std::nullopt, false},
    {Op::Or, "or", OpClass::Elementwise, cost_elementwise, std::nullopt, std::nullopt, false},
    {Op::Xor, "xor", OpClass::Elementwise, cost_elementwise, std::nullopt, std::nullopt, false},
    {Op::ShiftLeft, "shift-left", OpClass::Elementwise, cost_elementwise, std::nullopt, std::nullopt, false},
    {Op::ShiftRightLogical, "shift-right-logical", OpClass::Elementwise, cost_elementwise, std::nullopt, std::nullopt, false},
    {Op::ShiftRightArithmetic, "shift-right-arithmetic", OpClass::Elementwise, cost_elementwise, std::nullopt, std::nullopt, false},
    {Op::Compare, "compare", OpClass::Elementwise, cost_elementwise, std::nullopt, std::nullopt, false},
    {Op::Complex, "complex", OpClass::Elementwise, cost_elementwise, std::nullopt, std::nullopt, false},
    {Op::Select, "select", OpClass::Elementwise, cost_elementwise, std::nullopt, VectorOp::Max, false},
    {Op::Clamp, "clamp", OpClass::Elementwise, cost_elementwise, std::nullopt, VectorOp::Max, false},
    {Op::Negate, "negate", OpClass::Elementwise, cost_elementwise, VectorOp::Neg, std::nullopt, false},
    {Op::Abs, "abs", OpClass::Elementwise, cost_elementwise, VectorOp::Abs, std::nullopt, false},
    {Op::Exponential, "exponential", OpClass::Elementwise, cost_elementwise, VectorOp::Exp, std::nullopt, true},
    {Op::ExponentialMinusOne, "exponential-minus-one", OpClass::Elementwise, cost_elementwise, VectorOp::Exp, std::nullopt, true},
    {Op::Log, "log", OpClass::Elementwise, cost_elementwise, VectorOp::Log, std::nullopt, true},
    {Op::LogPlusOne, "log-plus-one", OpClass::Elementwise, cost_elementwise, VectorOp::Log, std::nullopt, true},
    {Op::Tanh, "tanh", OpClass::Elementwise, cost_elementwise, VectorOp::Tanh, std::nullopt, true},
    {Op::Logistic, "logistic", OpClass::Elementwise, cost_elementwise, VectorOp::Sigmoid, std::nullopt, true},
    {Op::Sqrt, "sqrt", OpClass::Elementwise, cost_elementwise, VectorOp::Sqrt, std::nullopt, true},
    {Op::Cbrt, "cbrt", OpClass::Elementwise, cost_elementwise, VectorOp::Sqrt, std::nullopt, true},
    {Op::Rsqrt, "rsqrt", OpClass::Elementwise, cost_elementwise, VectorOp::Rsqrt, std::nullopt, true},
    {Op::Sine, "sine", OpClass::Elementwise, cost_elementwise, VectorOp::Tanh, std::nullopt, true},
    {Op::Cosine, "cosine", OpClass::Elementwise, cost_elementwise, VectorOp::Tanh, std::nullopt, true},
    {Op::Tan, "tan", OpClass::Elementwise, cost_elementwise, VectorOp::Tanh, std::nullopt, true},
    {Op::Acos, "acos", OpClass::Elementwise, cost_elementwise, VectorOp::Tanh, std::nullopt, false},
    {Op::Asin, "asin", OpClass::Elementwise, cost_elementwise, VectorOp::Tanh, std::nullopt, false},
    {Op::Atan, "atan", OpClass::Elementwise, cost_elementwise, VectorOp::Tanh, std::nullopt, false},
    {Op::Acosh, "acosh", OpClass::Elementwise, cost_elementwise, VectorOp::Tanh, std::nullopt, false},
    {Op::Asinh, "asinh", OpClass::Elementwise, cost_elementwise, VectorOp::Tanh, std::nullopt, false},
    {Op::Atanh, "atanh", OpClass::Elementwise, cost_elementwise, VectorOp::Tanh, std::nullopt, false},
    {Op::Cosh, "cosh", OpClass::Elementwise, cost_elementwise, VectorOp::Tanh, std::nullopt, false},
    {Op::Sinh, "sinh", OpClass::Elementwise, cost_elementwise, VectorOp::Tanh, std::nullopt, false},
    {Op::Erf, "erf", OpClass::Elementwise, cost_elementwise, VectorOp::Tanh, std::nullopt, true},
    {Op::Floor, "floor", OpClass::Elementwise, cost_elementwise, std::nullopt, std::nullopt, false},
    {Op::Ceil, "ceil", OpClass::Elementwise, cost_elementwise, std::nullopt, std::nullopt, false},
    {Op::RoundNearestAfz, "round-nearest-afz", OpClass::Elementwise, cost_elementwise, std::nullopt, std::nullopt, false},
    {Op::RoundNearestEven, "round-nearest-even", OpClass::Elementwise, cost_elementwise, std::nullopt, std::nullopt, false},
    {Op::Sign, "sign", OpClass::Elementwise, cost_elementwise, std::nullopt, std::nullopt, false},
    {Op::Not, "not", OpClass::Elementwise, cost_elementwise, std::nullopt, std::nullopt, false},
    {Op::Popcnt, "popcnt", OpClass::Elementwise, cost_elementwise, std::nullopt, std::nullopt, false},
    {Op::CountLeadingZeros, "count-leading-zeros", OpClass::Elementwise, cost_elementwise, std::nullopt, std::nullopt, false},
    {Op::IsFinite, "is-finite", OpClass::Elementwise, cost_elementwise, std::nullopt, std::nullopt, false},
    {Op::Real, "real", OpClass::Elementwise, cost_elementwise, std::nullopt, std::nullopt, false},
    {Op::Imag, "imag", OpClass::Elementwise, cost_elementwise, std::nullopt, std::nullopt, false},
    {Op::ReducePrecision, "reduce-precision", OpClass::Elementwise, cost_elementwise, std::nullopt, std::nullopt, false},
    {Op::StochasticConvert, "stochastic-convert", OpClass::Elementwise, cost_elementwise, VectorOp::Dropout, std::nullopt, false},
    {Op::Convert, "convert", OpClass::Elementwise, cost_elementwise, VectorOp::Convert, std::nullopt, false},
    {Op::BitcastConvert, "bitcast-convert", OpClass::Elementwise, cost_elementwise, VectorOp::Convert, std::nullopt, false},
    {Op::Map, "map", OpClass::Elementwise, cost_elementwise, std::nullopt, std::nullopt, true},
    {Op::Rng, "rng", OpClass::Elementwise, cost_elementwise, VectorOp::Dropout, std::nullopt, true},
    {Op::RngBitGenerator, "rng-bit-generator", OpClass::Elementwise, cost_elementwise, VectorOp::Dropout, std::nullopt, true},
    {Op::Copy, "copy", OpClass::Movement, cost_movement},
    {Op::Transpose, "transpose", OpClass::Movement, cost_movement},
    {Op::Slice, "slice", OpClass::Movement, cost_movement},
    {Op::DynamicSlice, "dynamic-slice", OpClass::Movement, cost_movement},
    {Op::DynamicUpdateSlice, "dynamic-update-slice", OpClass::Movement, cost_update_slice},
    {Op::Concatenate, "concatenate", OpClass::Movement, cost_movement},
    {Op::Pad, "pad", OpClass::Movement, cost_movement},
    {Op::Reverse, "reverse", OpClass::Movement, cost_movement},
    {Op::Gather, "gather", OpClass::Movement, cost_movement},
    {Op::Scatter, "scatter", OpClass::Movement, cost_scatter},
    {Op::Dot, "dot", OpClass::Heavy, cost_dot},
    {Op::Convolution, "convolution", OpClass::Heavy, cost_convolution},
    {Op::TriangularSolve, "triangular-solve", OpClass::Heavy, cost_solve},
    {Op::Cholesky, "cholesky", OpClass::Heavy, cost_solve},
    {Op::Fft, "fft", OpClass::Heavy, cost_fft},
    {Op::Reduce, "reduce", OpClass::Reduction, cost_reduce},
    {Op::ReduceWindow, "reduce-window", OpClass::Reduction, cost_reduce_window},
    {Op::SelectAndScatter, "select-and-scatter", OpClass::Reduction, cost_select_and_scatter},
    {Op::BatchNormTraining, "batch-norm-training", OpClass::Reduction, cost_batch_norm},
    {Op::BatchNormInference, "batch-norm-inference", OpClass::Reduction, cost_batch_norm},
    {Op::BatchNormGrad, "batch-norm-grad", OpClass::Reduction, cost_batch_norm},
    {Op::Sort, "sort", OpClass::Reduction, cost_sort},
    {Op::Topk, "topk", OpClass::Reduction, cost_sort},
    {Op::Scan, "scan", OpClass::Reduction, cost_scan},
    {Op::AllReduce, "all-reduce", OpClass::Collective, cost_collective, std::nullopt, std::nullopt, false, OpKind::AllReduce},
    {Op::AllReduceStart, "all-reduce-start", OpClass::Collective, cost_collective, std::nullopt, std::nullopt, false, OpKind::AllReduce},
    {Op::AllGather, "all-gather", OpClass::Collective, cost_collective, std::nullopt, std::nullopt, false, OpKind::AllGather},
    {Op::AllGatherStart, "all-gather-start", OpClass::Collective, cost_collective, std::nullopt, std::nullopt, false, OpKind::AllGather},
    {Op::ReduceScatter, "reduce-scatter", OpClass::Collective, cost_collective, std::nullopt, std::nullopt, false, OpKind::ReduceScatter},
    {Op::AllToAll, "all-to-all", OpClass::Collective, cost_collective, std::nullopt, std::nullopt, false, OpKind::AllToAll},
    {Op::RaggedAllToAll, "ragged-all-to-all", OpClass::Collective, cost_collective, std::nullopt, std::nullopt, false, OpKind::AllToAll},
    {Op::CollectivePermute, "collective-permute", OpClass::Collective, cost_collective, std::nullopt, std::nullopt, false, OpKind::CollectivePermute},
    {Op::CollectivePermuteStart, "collective-permute-start", OpClass::Collective, cost_collective, std::nullopt, std::nullopt, false, OpKind::CollectivePermute},
    {Op::CollectiveBroadcast, "collective-broadcast", OpClass::Collective, cost_collective, std::nullopt, std::nullopt, false, OpKind::AllReduce},
    {Op::Infeed, "infeed", OpClass::Host, cost_infeed},
    {Op::Outfeed, "outfeed", OpClass::Host, cost_outfeed},
    {Op::Send, "send", OpClass::Host, cost_outfeed},
    {Op::Recv, "recv", OpClass::Host, cost_infeed},
    {Op::Call, "call", OpClass::Control, nullptr},
    {Op::While, "while", OpClass::Control, nullptr},
    {Op::Conditional, "conditional", OpClass::Control, nullptr},
    {Op::Fusion, "fusion", OpClass::Control, nullptr},
    {Op::AsyncStart, "async-start", OpClass::Control, nullptr},
    {Op::AllReduceDone, "all-reduce-done", OpClass::PassThrough, nullptr},
    {Op::AllGatherDone, "all-gather-done", OpClass::PassThrough, nullptr},
    {Op::CollectivePermuteDone, "collective-permute-done", OpClass::PassThrough, nullptr},
    {Op::AsyncDone, "async-done", OpClass::PassThrough, nullptr},
    {Op::AsyncUpdate, "async-update", OpClass::PassThrough, nullptr},
    {Op::CopyDone, "copy-done", OpClass::PassThrough, nullptr},
    {Op::CustomCall, "custom-call", OpClass::CustomCall, nullptr},
    {Op::Unknown, "", OpClass::Elementwise, cost_elementwise},
};
// clang-format on

constexpr bool rows_in_enum_order() {
    std::size_t i = 0;
    for (const OpcodeInfo& r : kOpcodes)
        if (static_cast<std::size_t>(r.op) != i++) return false;
    return i == static_cast<std::size_t>(Op::Unknown) + 1;
}
static_assert(rows_in_enum_order(), "one row per HloOpcode, in the enum's order");

}  // namespace

const OpcodeInfo& opcode_info(HloOpcode op) { return kOpcodes[static_cast<std::size_t>(op)]; }

HloOpcode hlo_opcode(std::string_view name) {
    static const std::unordered_map<std::string_view, HloOpcode> by_name = [] {
        std::unordered_map<std::string_view, HloOpcode> m;
        for (const OpcodeInfo& r : kOpcodes)
            if (r.op != Op::Unknown) m.emplace(r.name, r.op);
        return m;
    }();
    const auto it = by_name.find(name);
    return it == by_name.end() ? Op::Unknown : it->second;
}

}  // namespace tpusim::hlo_detail
