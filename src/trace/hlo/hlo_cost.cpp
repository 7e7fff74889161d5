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

// Operand k's shape, through %name#i for an element of a tuple-shaped operand.
const HloShape& operand_shape(const HloInstr& in, const HloComputation& comp, std::size_t k) {
    const HloOperand& o = in.operands[k];
    const HloShape& s = comp.instrs[static_cast<std::size_t>(o.instr)].shape;
    if (o.tuple_index >= 0 && s.tuple &&
        static_cast<std::size_t>(o.tuple_index) < s.elements.size())
        return s.elements[static_cast<std::size_t>(o.tuple_index)];
    return s;
}

std::int64_t product(const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& at) {
    std::int64_t p = 1;
    for (std::int64_t i : at) p *= dims[static_cast<std::size_t>(i)];
    return p;
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
    const HloAttr* w = in.attr("window");
    if (!w) return 1;
    const std::size_t p = w->value.find("size=");
    if (p == std::string_view::npos) return 1;
    std::int64_t n = 1, cur = 0;
    for (std::size_t i = p + 5; i <= w->value.size(); ++i) {
        const char c = i < w->value.size() ? w->value[i] : ' ';
        if (std::isdigit(static_cast<unsigned char>(c)) != 0) {
            cur = cur * 10 + (c - '0');
            if (cur > kMaxDim) m.fail(w->offset, "window size is absurdly large");
        } else {
            n *= std::max<std::int64_t>(cur, 1);
            cur = 0;
            if (c != 'x') break;
        }
    }
    return n;
}

std::optional<TraceOp> dot_op(const HloInstr& in, const HloComputation& comp,
                              const CostContext& ctx) {
    if (in.operands.size() < 2) ctx.m.fail(in.offset, "dot needs two operands");
    const HloShape& lhs = operand_shape(in, comp, 0);
    const HloShape& rhs = operand_shape(in, comp, 1);
    auto dims = [&](const char* name, const HloShape& s) {
        const HloAttr* a = in.attr(name);
        std::vector<std::int64_t> v =
            a ? int_list(a->value, ctx.m, a->offset) : std::vector<std::int64_t>{};
        for (std::int64_t d : v)
            if (d >= static_cast<std::int64_t>(s.dims.size()))
                ctx.m.fail(a->offset, fmt::format("{}: dimension {} is outside the operand's {} "
                                                  "dimensions",
                                                  name, d, s.dims.size()));
        return v;
    };
    if (lhs.tuple || rhs.tuple) ctx.m.fail(in.offset, "dot operands must be arrays");
    const auto lc = dims("lhs_contracting_dims", lhs), rc = dims("rhs_contracting_dims", rhs);
    const auto lb = dims("lhs_batch_dims", lhs), rb = dims("rhs_batch_dims", rhs);
    TraceOp t;
    t.kind = OpKind::Matmul;
    t.matmul.batch = product(lhs.dims, lb);
    t.matmul.k = product(lhs.dims, lc);
    if (t.matmul.k != product(rhs.dims, rc) || t.matmul.batch != product(rhs.dims, rb))
        ctx.m.fail(in.offset, "dot: the contracting or batch dimensions of lhs and rhs differ");
    if (t.matmul.batch == 0 || t.matmul.k == 0) return std::nullopt;
    t.matmul.m = lhs.elements_count() / (t.matmul.batch * t.matmul.k);
    t.matmul.n = rhs.elements_count() / (t.matmul.batch * t.matmul.k);
    if (t.matmul.m == 0 || t.matmul.n == 0) return std::nullopt;
    // Stored transposed when the contracting dimension is not where a plain GEMM has it
    // (last of lhs, first non-batch of rhs).
    t.matmul.transpose_lhs =
        !lc.empty() && lc.back() != static_cast<std::int64_t>(lhs.dims.size()) - 1;
    t.matmul.transpose_rhs = !rc.empty() && rc.front() != static_cast<std::int64_t>(rb.size());
    t.dtype = trace_dtype(lhs.type).first;
    t.rhs_dtype = trace_dtype(rhs.type).first;
    t.out_dtype = trace_dtype(first_array(in.shape).type).first;
    return t;
}

// A 2-D convolution as the TPU runs it (`conv2d`, the kind the hand-written traces use): the
// input is read from HBM once and the kernel's taps are applied to its tiles in VMEM, not an
// im2col matrix of kernel-size times the input streamed from HBM. For one group, batch and
// features in the input's and the output's labels, no dilation and an output of the size that
// "same" (ceil(in / stride)) or "valid" padding gives; anything else stays the implicit GEMM.
std::optional<TraceOp> direct_conv(const HloInstr& in, const HloShape& lhs, const HloShape& ker,
                                   const std::string& il, const std::string& kl,
                                   const std::string& ol) {
    // (labels are only b, f and the spatial digits here: "0" and "1")
    if (il.size() != 4 || il != ol || kl.size() != 4) return std::nullopt;
    std::array<std::int64_t, 2> size{1, 1}, stride{1, 1};
    if (const HloAttr* w = in.attr("window")) {
        // size=3x3 stride=2x2 pad=1_1x1_1; any dilation (lhs_dilate, rhs_dilate) is left to
        // the implicit GEMM.
        const std::string_view v = w->value;
        if (v.find("dilate") != std::string_view::npos) return std::nullopt;
        auto dims = [&](std::string_view key, std::array<std::int64_t, 2>& out) {
            const std::size_t p = v.find(key);
            if (p == std::string_view::npos) return true;
            std::size_t i = p + key.size();
            for (std::size_t d = 0; d < 2; ++d) {
                std::int64_t x = 0;
                std::size_t start = i;
                while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i])) != 0 &&
                       x < kMaxDim)
                    x = x * 10 + (v[i++] - '0');
                if (i == start || x < 1) return false;
                out[d] = x;
                if (d == 0 && (i >= v.size() || v[i++] != 'x')) return false;
            }
            return true;
        };
        if (!dims("size=", size) || !dims("stride=", stride)) return std::nullopt;
    }
    TraceOp t;
    t.kind = OpKind::Conv2d;
    Conv2dShape& c = t.conv;
    std::array<std::int64_t, 2> ih{0, 0}, oh{0, 0}, kh{0, 0};
    std::size_t sp = 0;
    for (std::size_t i = 0; i < il.size(); ++i) {
        const char l = il[i];
        if (l == 'b') {
            c.batch = lhs.dims[i];
        } else if (l == 'f') {
            c.c_in = lhs.dims[i];
        } else if (l >= '0' && l <= '1') {
            ih[static_cast<std::size_t>(l - '0')] = lhs.dims[i];
            oh[static_cast<std::size_t>(l - '0')] = in.shape.dims[ol.find(l)];
            ++sp;
        }
    }
    for (std::size_t i = 0; i < kl.size(); ++i) {
        if (kl[i] == 'o') c.c_out = ker.dims[i];
        if (kl[i] == '0' || kl[i] == '1') kh[static_cast<std::size_t>(kl[i] - '0')] = ker.dims[i];
    }
    if (sp != 2 || kh[0] != size[0] || kh[1] != size[1] ||
        in.shape.dims[ol.find('b')] != c.batch || in.shape.dims[ol.find('f')] != c.c_out)
        return std::nullopt;
    c.h = ih[0];
    c.w = ih[1];
    c.kh = kh[0];
    c.kw = kh[1];
    c.stride_h = stride[0];
    c.stride_w = stride[1];
    for (Padding p : {Padding::Same, Padding::Valid}) {
        c.padding = p;
        if (c.h >= c.kh && c.w >= c.kw && c.out_h() == oh[0] && c.out_w() == oh[1]) {
            if (c.batch < 1 || c.c_in < 1 || c.c_out < 1) return std::nullopt;
            t.dtype = trace_dtype(lhs.type).first;
            t.rhs_dtype = trace_dtype(ker.type).first;
            t.out_dtype = trace_dtype(first_array(in.shape).type).first;
            return t;
        }
    }
    return std::nullopt;
}

// The implicit GEMM of a convolution: per group (feature_group_count x batch_group_count),
// m = output batch x output spatial, k = kernel spatial x kernel input features, n = output
// features per group; 2*groups*m*k*n = 2 x output elements x kernel spatial x input features.
std::optional<TraceOp> conv_op(const HloInstr& in, const HloComputation& comp,
                               const CostContext& ctx) {
    if (in.operands.size() < 2) ctx.m.fail(in.offset, "convolution needs two operands");
    const HloShape& ker = operand_shape(in, comp, 1);
    const HloShape& lhs = operand_shape(in, comp, 0);
    const HloShape& out = in.shape;
    std::string labels;
    if (const HloAttr* a = in.attr("dim_labels")) {
        labels = std::string(a->value);
    } else {  // XLA's default: bf01_oi01->bf01
        std::string sp;
        for (std::size_t i = 2; i < out.dims.size(); ++i) sp += static_cast<char>('0' + i - 2);
        labels = "bf" + sp + "_oi" + sp + "->bf" + sp;
    }
    const std::size_t u = labels.find('_'), arrow = labels.find("->");
    if (u == std::string::npos || arrow == std::string::npos || arrow < u)
        ctx.m.fail(in.offset,
                   fmt::format("dim_labels {}: expected <input>_<kernel>-><output>", labels));
    const std::string il = labels.substr(0, u), kl = labels.substr(u + 1, arrow - u - 1),
                      ol = labels.substr(arrow + 2);
    if (il.size() != lhs.dims.size() || kl.size() != ker.dims.size() ||
        ol.size() != out.dims.size())
        ctx.m.fail(in.offset, fmt::format("dim_labels {} do not match the operand and result "
                                          "ranks",
                                          labels));
    std::int64_t kspatial = 1, kin = 1, kout = 1, obatch = 1, ospatial = 1;
    for (std::size_t i = 0; i < kl.size(); ++i) {
        if (kl[i] == 'i')
            kin = ker.dims[i];
        else if (kl[i] == 'o')
            kout = ker.dims[i];
        else
            kspatial *= ker.dims[i];
    }
    for (std::size_t i = 0; i < ol.size(); ++i) {
        if (ol[i] == 'b')
            obatch = out.dims[i];
        else if (ol[i] != 'f')
            ospatial *= out.dims[i];
    }
    auto count = [&](const char* name) {
        const HloAttr* a = in.attr(name);
        if (!a) return std::int64_t{1};
        const auto v = int_list(a->value, ctx.m, a->offset);
        if (v.size() != 1 || v[0] < 1) ctx.m.fail(a->offset, fmt::format("{} must be >= 1", name));
        return v[0];
    };
    const std::int64_t fgc = count("feature_group_count");
    const std::int64_t bgc = count("batch_group_count");
    const std::int64_t groups = fgc * bgc;
    if (kout % groups != 0)
        ctx.m.fail(in.offset, "convolution: output features do not split into the groups");
    // Feature groups too narrow for the array share its passes: P groups side by side in a
    // block-diagonal weight tile (P divides the groups, P x k fits the rows, P x n the
    // columns), so a depthwise convolution is G / P passes, not G. FLOPs stay the useful ones.
    std::int64_t pack = 1;
    const std::int64_t k = kspatial * kin, n = kout / groups;
    for (std::int64_t p = 2; fgc > 1 && p <= fgc; ++p)
        if (fgc % p == 0 && p * k <= ctx.opts.mxu_rows && p * n <= ctx.opts.mxu_cols) pack = p;
    // Batch groups (a depthwise weight gradient: one output feature per group) share the
    // contraction (kernel spatial x input features), not only its size: XLA's
    // ConvolutionGroupConverter expands such a convolution into one dense convolution over
    // all pairs of groups, masked to the diagonal. Kept within one pass of the array's
    // columns, Q groups side by side (Q divides the groups, Q x n fits the columns) stream
    // their Q x m rows through the same weight tiles, so a weight tile swap serves Q x m
    // rows instead of m (9 for a 3x3 filter). FLOPs stay the useful (diagonal) ones.
    std::int64_t bpack = 1;
    for (std::int64_t q = 2; fgc == 1 && q <= bgc; ++q)
        if (bgc % q == 0 && q * n <= ctx.opts.mxu_cols) bpack = q;
    if (groups == 1 && ctx.opts.direct_convolutions)
        if (auto c = direct_conv(in, lhs, ker, il, kl, ol)) return c;
    TraceOp t;
    t.kind = OpKind::Matmul;
    t.matmul.batch = groups / pack / bpack;
    t.matmul.m = obatch * ospatial * bpack;
    t.matmul.k = k;
    t.matmul.n = n * pack;
    if (t.matmul.m == 0 || t.matmul.k == 0 || t.matmul.n == 0) return std::nullopt;
    t.dtype = trace_dtype(lhs.type).first;
    t.rhs_dtype = trace_dtype(ker.type).first;
    t.out_dtype = trace_dtype(out.type).first;
    return t;
}

}  // namespace

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
