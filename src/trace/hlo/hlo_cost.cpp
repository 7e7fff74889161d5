// How each HLO opcode becomes a trace op (docs/hlo.md, "How each opcode is costed"): dot and
// convolution as (batched) GEMMs on the MXU, elementwise and reduction work as VPU ops sized
// by their shapes and element types, data movement as bytes, collectives with their replica
// groups mapped to cores.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <unordered_map>

#include "hlo_import.h"

namespace tpusim::hlo_detail {

namespace {

constexpr std::int64_t kMaxReduceCols = 32768;

// clang-format off
const std::unordered_map<std::string_view, OpClass>& class_table() {
    static const std::unordered_map<std::string_view, OpClass> t = [] {
        std::unordered_map<std::string_view, OpClass> m;
        for (const char* o : {"parameter", "constant", "tuple", "get-tuple-element", "bitcast",
                              "reshape", "after-all", "partition-id", "replica-id",
                              "opt-barrier", "add-dependency", "domain", "get-dimension-size",
                              "set-dimension-size", "rng-get-and-update-state", "copy-start",
                              "send-done", "recv-done", "infeed-done", "outfeed-done"})
            m[o] = OpClass::Free;
        for (const char* o : {"broadcast", "iota"}) m[o] = OpClass::Generated;
        for (const char* o : {"add", "subtract", "multiply", "divide", "maximum", "minimum",
                              "remainder", "power", "atan2", "and", "or", "xor", "shift-left",
                              "shift-right-logical", "shift-right-arithmetic", "compare",
                              "complex", "select", "clamp", "negate", "abs", "exponential",
                              "exponential-minus-one", "log", "log-plus-one", "tanh",
                              "logistic", "sqrt", "cbrt", "rsqrt", "sine", "cosine", "tan",
                              "acos", "asin", "atan", "acosh", "asinh", "atanh", "cosh", "sinh",
                              "erf", "floor", "ceil", "round-nearest-afz", "round-nearest-even",
                              "sign", "not", "popcnt", "count-leading-zeros", "is-finite",
                              "real", "imag", "reduce-precision", "stochastic-convert",
                              "convert", "bitcast-convert", "map", "rng", "rng-bit-generator"})
            m[o] = OpClass::Elementwise;
        for (const char* o : {"copy", "transpose", "slice", "dynamic-slice",
                              "dynamic-update-slice", "concatenate", "pad", "reverse", "gather",
                              "scatter"})
            m[o] = OpClass::Movement;
        for (const char* o : {"dot", "convolution", "triangular-solve", "cholesky", "fft"})
            m[o] = OpClass::Heavy;
        for (const char* o : {"reduce", "reduce-window", "select-and-scatter",
                              "batch-norm-training", "batch-norm-inference", "batch-norm-grad",
                              "sort", "topk", "scan"})
            m[o] = OpClass::Reduction;
        for (const char* o : {"all-reduce", "all-reduce-start", "all-gather", "all-gather-start",
                              "reduce-scatter", "all-to-all", "ragged-all-to-all",
                              "collective-permute", "collective-permute-start",
                              "collective-broadcast"})
            m[o] = OpClass::Collective;
        for (const char* o : {"infeed", "outfeed", "send", "recv"}) m[o] = OpClass::Host;
        for (const char* o : {"call", "while", "conditional", "fusion", "async-start"})
            m[o] = OpClass::Control;
        for (const char* o : {"all-reduce-done", "all-gather-done", "collective-permute-done",
                              "async-done", "async-update", "copy-done"})
            m[o] = OpClass::PassThrough;
        m["custom-call"] = OpClass::CustomCall;
        return m;
    }();
    return t;
}
// clang-format on

// The largest array of a (tuple) result: the data of rng-bit-generator's (state, data), the
// output of batch-norm-training's (output, mean, variance).
const HloShape& largest_array(const HloShape& s) {
    if (!s.tuple) return s;
    const HloShape* best = &first_array(s);
    for (const auto& e : s.elements) {
        const HloShape& x = largest_array(e);
        if (!x.tuple && x.bytes() > best->bytes()) best = &x;
    }
    return *best;
}

// Elements of `s` padded to the TPU's (8, 128) tile when asked: the most minor dimension to
// a multiple of 128, the second most minor to a multiple of 8. A layout with a written tiling
// (T(..): the TPU compiler chose it) is taken as written. Any other layout is XLA's default,
// not the one the TPU compiler would choose: it lays tensors out to minimise the padding
// (Cloud TPU performance guide, "Tensor dimensions": the runtime "lays out tensors in memory
// to maximize computational efficiency and minimize padding"; with the batch a multiple of 8
// and the features of 128, or the batch of 128 and the features of 8, nothing is padded), so
// the two tiled dimensions are those of the placement that pads least. Dimensions of size 1
// are never tiled: XLA's layout normalization drops them with a free bitcast
// (bf16[16,8,1,2048,2048] with the 1 most minor would otherwise grow 128 times).
std::int64_t padded_elements(const HloShape& s, bool pad) {
    if (!pad || s.dims.empty()) return s.elements_count();
    const std::size_t r = s.dims.size();
    for (std::int64_t d : s.dims)
        if (d == 0) return 0;
    // Elements with dimension `minor` padded to 128 and `second` to 8 (r: none).
    auto with = [&](std::size_t minor, std::size_t second) {
        std::int64_t n = 1;
        for (std::size_t i = 0; i < r; ++i) {
            std::int64_t d = s.dims[i];
            if (i == minor) d = (d + 127) / 128 * 128;
            if (i == second) d = (d + 7) / 8 * 8;
            n *= d;
        }
        return n;
    };
    if (!s.tiled) {
        std::int64_t best = -1;
        for (std::size_t i = 0; i < r; ++i) {
            if (s.dims[i] == 1) continue;
            bool other = false;
            for (std::size_t j = 0; j < r; ++j) {
                if (j == i || s.dims[j] == 1) continue;
                other = true;
                const std::int64_t n = with(i, j);
                if (best < 0 || n < best) best = n;
            }
            if (!other) best = with(i, r);  // the only dimension of size > 1
        }
        return best < 0 ? s.elements_count() : best;
    }
    // The layout's two most minor dimensions of size > 1 (the last two without a layout).
    std::size_t minor = r, second = r;
    for (std::size_t k = 0; k < r; ++k) {
        const std::size_t i = s.minor_to_major.size() == r
                                  ? static_cast<std::size_t>(s.minor_to_major[k])
                                  : r - 1 - k;
        if (s.dims[i] == 1) continue;
        if (minor == r) {
            minor = i;
        } else {
            second = i;
            break;
        }
    }
    return with(minor, second);
}

VectorOp elementwise_op(std::string_view o, bool two_streams) {
    static const std::unordered_map<std::string_view, VectorOp> unary = {
        {"negate", VectorOp::Neg},
        {"abs", VectorOp::Abs},
        {"exponential", VectorOp::Exp},
        {"exponential-minus-one", VectorOp::Exp},
        {"log", VectorOp::Log},
        {"log-plus-one", VectorOp::Log},
        {"tanh", VectorOp::Tanh},
        {"logistic", VectorOp::Sigmoid},
        {"sqrt", VectorOp::Sqrt},
        {"cbrt", VectorOp::Sqrt},
        {"rsqrt", VectorOp::Rsqrt},
        {"sine", VectorOp::Tanh},
        {"cosine", VectorOp::Tanh},
        {"tan", VectorOp::Tanh},
        {"acos", VectorOp::Tanh},
        {"asin", VectorOp::Tanh},
        {"atan", VectorOp::Tanh},
        {"acosh", VectorOp::Tanh},
        {"asinh", VectorOp::Tanh},
        {"atanh", VectorOp::Tanh},
        {"cosh", VectorOp::Tanh},
        {"sinh", VectorOp::Tanh},
        {"erf", VectorOp::Tanh},
        {"power", VectorOp::Exp},
        {"convert", VectorOp::Convert},
        {"bitcast-convert", VectorOp::Convert},
        {"rng", VectorOp::Dropout},
        {"rng-bit-generator", VectorOp::Dropout},
        {"stochastic-convert", VectorOp::Dropout}};
    static const std::unordered_map<std::string_view, VectorOp> binary = {
        {"add", VectorOp::Add},     {"subtract", VectorOp::Sub},  {"multiply", VectorOp::Mul},
        {"divide", VectorOp::Div},  {"remainder", VectorOp::Div}, {"atan2", VectorOp::Div},
        {"maximum", VectorOp::Max}, {"minimum", VectorOp::Min},   {"select", VectorOp::Max},
        {"clamp", VectorOp::Max}};
    if (const auto it = unary.find(o); it != unary.end()) return it->second;
    if (!two_streams) return VectorOp::Scale;  // one stream in, one ALU operation per element
    if (const auto it = binary.find(o); it != binary.end()) return it->second;
    return VectorOp::Add;  // logic, shifts, compare, complex: one ALU operation, two streams
}

TraceOp vector_op(VectorOp op, const HloType& in_t, const HloType& out_t, std::int64_t rows,
                  std::int64_t cols) {
    TraceOp t;
    t.kind = OpKind::Vector;
    const auto [din, win] = trace_dtype(in_t);
    const auto dout = trace_dtype(out_t).first;
    t.dtype = din;
    t.out_dtype = dout;
    t.vector.op = op;
    t.vector.rows = rows;
    t.vector.cols = cols * win;
    return t;
}

TraceOp bytes_op(OpKind k, std::int64_t bytes) {
    TraceOp t;
    t.kind = k;
    t.bytes = bytes;
    return t;
}

bool max_reducer(const HloModule& m, const HloInstr& in) {
    if (in.callees.empty()) return false;
    const auto& c = m.computations[static_cast<std::size_t>(in.callees.front())];
    const std::string_view op = c.instrs[static_cast<std::size_t>(c.root)].opcode;
    return op == "maximum" || op == "minimum" || op == "select";
}

std::int64_t window_size(const HloInstr& in, const HloModule& m) {
    std::int64_t n = 1;
    for (std::int64_t d : window_field(in, m, "size")) n *= std::max<std::int64_t>(d, 1);
    return n;
}

}  // namespace

// The trace dtype that stores `t`, and how many trace elements one HLO element takes (64-bit
// types are pairs of 32-bit words on the TPU's 32-bit VPU).
std::pair<DType, std::int64_t> trace_dtype(const HloType& t) {
    if (t.bits > 32) return {t.is_float ? DType::F32 : DType::S32, t.bits / 32};
    if (t.bits == 32) return {t.is_float ? DType::F32 : DType::S32, 1};
    if (t.bits == 16) return {t.name == "f16" ? DType::F16 : DType::BF16, 1};
    if (t.name == "pred") return {DType::Pred, 1};
    return {t.is_float ? DType::U8 : DType::S8, 1};  // 8 bits and sub-byte types (rounded up)
}

const HloShape& first_array(const HloShape& s) {
    const HloShape* p = &s;
    while (p->tuple && !p->elements.empty()) p = &p->elements.front();
    return *p;
}

const HloShape& value_shape(const HloComputation& comp, const HloOperand& o) {
    const HloShape& s = comp.instrs[static_cast<std::size_t>(o.instr)].shape;
    if (o.tuple_index >= 0 && s.tuple &&
        static_cast<std::size_t>(o.tuple_index) < s.elements.size())
        return s.elements[static_cast<std::size_t>(o.tuple_index)];
    return s;
}

// Operand k's shape, through %name#i for an element of a tuple-shaped operand.
const HloShape& operand_shape(const HloInstr& in, const HloComputation& comp, std::size_t k) {
    return value_shape(comp, in.operands[k]);
}

std::vector<std::int64_t> window_field(const HloInstr& in, const HloModule& m,
                                       std::string_view key) {
    std::vector<std::int64_t> out;
    const HloAttr* w = in.attr("window");
    if (!w) return out;
    const std::string k = std::string(key) + "=";
    std::size_t p = w->value.find(k);
    // "size=" must not match the tail of another field's name.
    while (p != std::string_view::npos && p > 0 && w->value[p - 1] != ' ' && w->value[p - 1] != '{')
        p = w->value.find(k, p + 1);
    if (p == std::string_view::npos) return out;
    std::int64_t cur = 0;
    for (std::size_t i = p + k.size(); i <= w->value.size(); ++i) {
        const char c = i < w->value.size() ? w->value[i] : ' ';
        if (std::isdigit(static_cast<unsigned char>(c)) != 0) {
            cur = cur * 10 + (c - '0');
            if (cur > kMaxDim) m.fail(w->offset, fmt::format("window {} is absurdly large", key));
        } else {
            out.push_back(cur);
            cur = 0;
            if (c != 'x') break;
        }
    }
    return out;
}

OpClass op_class(std::string_view opcode) {
    const auto& t = class_table();
    const auto it = t.find(opcode);
    return it == t.end() ? OpClass::Elementwise : it->second;
}

bool is_known_opcode(std::string_view opcode) { return class_table().count(opcode) != 0; }

bool is_noop_copy(const HloComputation& comp, const HloInstr& in) {
    if (in.opcode != "copy" || in.operands.size() != 1 || in.shape.tuple) return false;
    const HloShape& a = operand_shape(in, comp, 0);
    const HloShape& b = in.shape;
    if (a.tuple || a.tiled || b.tiled || a.type.name != b.type.name || a.dims != b.dims ||
        a.memory_space != b.memory_space)
        return false;
    // An unwritten layout is XLA's default, major to minor: {n-1, ..., 0}.
    auto layout = [](const HloShape& s) {
        if (!s.minor_to_major.empty()) return s.minor_to_major;
        std::vector<std::int64_t> d;
        for (std::size_t i = s.dims.size(); i-- > 0;) d.push_back(static_cast<std::int64_t>(i));
        return d;
    };
    return layout(a) == layout(b);
}

bool is_view(const HloComputation& comp, const HloInstr& in, bool copies) {
    if (in.operands.empty()) return false;
    return in.opcode == "bitcast" || in.opcode == "reshape" || (copies && is_noop_copy(comp, in));
}

bool free_custom_call(std::string_view t) {
    for (const char* f : {"AllocateBuffer", "Sharding", "SPMDFullToShardShape",
                          "SPMDShardToFullShape", "MoveToHost", "MoveToDevice", "LayoutConstraint",
                          "SetBound", "annotate_device_placement", "X64Combine", "X64SplitLow",
                          "X64SplitHigh", "GetRngSeed", "PadToStatic", "SliceToDynamic"})
        if (t == f) return true;
    return t.substr(0, 4) == "xla." || t.substr(0, 4) == "sdy.";
}

std::optional<TraceOp> cost_instruction(const HloInstr& in, const HloComputation& comp,
                                        const std::vector<OperandPlace>& places,
                                        const CostContext& ctx) {
    const bool pad = ctx.opts.tile_padding;
    auto operand = [&](std::size_t k) -> const HloShape& {
        if (k >= in.operands.size())
            ctx.m.fail(in.offset, fmt::format("{} needs at least {} operands", in.opcode, k + 1));
        return operand_shape(in, comp, k);
    };
    const HloShape& out = largest_array(in.shape);
    const std::string_view o = in.opcode;
    auto pad_bytes = [&](const HloShape& s) {
        const std::int64_t n = padded_elements(first_array(s), pad);
        const HloType& t = first_array(s).type;
        return t.bits >= 8 ? n * (t.bits / 8) : (n * t.bits + 7) / 8;
    };
    auto vec = [&](VectorOp op, const HloType& in_t, std::int64_t rows,
                   std::int64_t cols) -> std::optional<TraceOp> {
        if (rows <= 0 || cols <= 0) return std::nullopt;
        return vector_op(op, in_t, out.type, rows, cols);
    };
    const HloType& in_type = in.operands.empty() ? out.type : first_array(operand(0)).type;
    switch (op_class(o)) {
        case OpClass::Heavy: {
            if (o == "dot") return dot_op(in, comp, ctx);
            if (o == "convolution") return conv_op(in, comp, ctx);
            const HloShape& a = first_array(operand(0));
            const std::int64_t nn = a.dims.empty() ? 1 : a.dims.back();
            if (o == "fft") {
                std::int64_t stages = 1;
                while ((std::int64_t{1} << stages) < nn) ++stages;
                return vec(VectorOp::Mul, a.type, 1, a.elements_count() * stages);
            }
            if (a.dims.size() < 2) ctx.m.fail(in.offset, fmt::format("{} needs a matrix", o));
            if (nn == 0) return std::nullopt;
            TraceOp t;
            t.kind = OpKind::Matmul;
            t.matmul.batch = std::max<std::int64_t>(1, a.elements_count() / (nn * nn));
            t.matmul.m = nn;
            t.matmul.k = nn;
            t.matmul.n = o == "cholesky"
                             ? std::max<std::int64_t>(1, nn / 3)
                             : first_array(operand(1)).elements_count() / (t.matmul.batch * nn);
            if (t.matmul.n < 1 || nn < 1) return std::nullopt;
            t.dtype = t.out_dtype = trace_dtype(a.type).first;
            return t;
        }
        case OpClass::Elementwise: {
            std::vector<std::int32_t> hbm;
            for (std::size_t k = 0; k < in.operands.size(); ++k)
                if (k < places.size() && !places[k].on_chip &&
                    std::find(hbm.begin(), hbm.end(), in.operands[k].instr) == hbm.end())
                    hbm.push_back(in.operands[k].instr);
            const bool two = ctx.fused ? !hbm.empty() : hbm.size() >= 2;
            return vec(elementwise_op(o, two), in_type, 1, padded_elements(out, pad));
        }
        case OpClass::Generated:
        case OpClass::Movement: {
            std::int64_t bytes = pad_bytes(in.shape);
            if (o == "dynamic-update-slice") bytes = pad_bytes(operand(1));
            if (o == "scatter") bytes = pad_bytes(operand(in.operands.size() - 1));
            if (ctx.chained) {
                if (op_class(o) == OpClass::Generated) return std::nullopt;
                const std::int64_t eb = std::max(1, out.type.bits / 8);
                return vec(VectorOp::Transpose, out.type, 1, bytes / eb);
            }
            if (out.memory_space == 1 &&
                std::all_of(places.begin(), places.end(), [](auto p) { return p.on_chip; }))
                return std::nullopt;  // VMEM to VMEM
            if (bytes <= 0) return std::nullopt;
            return bytes_op(OpKind::Copy, bytes);
        }
        case OpClass::Reduction: {
            const HloShape& a = first_array(operand(0));
            const std::int64_t n_in = a.elements_count();
            if (o == "reduce") {
                // Rows of at most kMaxReduceCols: a long reduction is tiled into partial sums
                // (one per tile, as XLA's TPU reductions do), so a row fits VMEM.
                std::int64_t rows = std::max<std::int64_t>(1, out.elements_count());
                std::int64_t cols = n_in / rows;
                if (cols > kMaxReduceCols) {
                    rows *= (cols + kMaxReduceCols - 1) / kMaxReduceCols;
                    cols = kMaxReduceCols;
                }
                return vec(max_reducer(ctx.m, in) ? VectorOp::ReduceMax : VectorOp::ReduceSum,
                           a.type, rows, cols);
            }
            if (o == "reduce-window")
                return vec(max_reducer(ctx.m, in) ? VectorOp::ReduceMax : VectorOp::ReduceSum,
                           a.type, out.elements_count(), window_size(in, ctx.m));
            if (o == "select-and-scatter")
                return vec(VectorOp::ReduceMax, a.type, first_array(operand(1)).elements_count(),
                           window_size(in, ctx.m));
            if (o.substr(0, 10) == "batch-norm") {
                const HloAttr* f = in.attr("feature_index");
                const auto fi =
                    f ? int_list(f->value, ctx.m, f->offset) : std::vector<std::int64_t>{};
                if (fi.size() != 1 || fi[0] >= static_cast<std::int64_t>(a.dims.size()))
                    ctx.m.fail(in.offset, "batch-norm needs a feature_index inside the operand");
                const std::int64_t c = a.dims[static_cast<std::size_t>(fi[0])];
                if (c == 0) return std::nullopt;
                return vec(o == "batch-norm-grad" ? VectorOp::BatchnormGrad : VectorOp::Batchnorm,
                           a.type, n_in / c, c);
            }
            // sort, topk: a bitonic network of s(s+1)/2 compare-exchange stages, s = log2 n.
            std::int64_t s = 1;
            const std::int64_t len = a.dims.empty() ? 1 : a.dims.back();
            while ((std::int64_t{1} << s) < len) ++s;
            if (o == "scan") return vec(VectorOp::Add, a.type, 1, n_in);
            return vec(VectorOp::Max, a.type, 1,
                       n_in * s * (s + 1) / 2 * static_cast<std::int64_t>(in.operands.size()));
        }
        case OpClass::Collective: {
            std::vector<const HloShape*> shapes;
            for (std::size_t k = 0; k < in.operands.size(); ++k) shapes.push_back(&operand(k));
            return collective_op(in, ctx, shapes);
        }
        case OpClass::Host: {
            if (o == "infeed" || o == "recv")
                return bytes_op(OpKind::Infeed,
                                std::max<std::int64_t>(1, first_array(in.shape).bytes()));
            return bytes_op(OpKind::Outfeed, std::max<std::int64_t>(1, operand(0).bytes()));
        }
        default:
            return std::nullopt;
    }
}

}  // namespace tpusim::hlo_detail
