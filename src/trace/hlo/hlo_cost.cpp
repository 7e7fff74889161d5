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
    const HloOpcode op = c.instrs[static_cast<std::size_t>(c.root)].op;
    return op == HloOpcode::Maximum || op == HloOpcode::Minimum || op == HloOpcode::Select;
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
    if (t.bits == 16) return {t.name == "f16" ? DType::F16 : DType::Bf16, 1};
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

bool is_noop_copy(const HloComputation& comp, const HloInstr& in) {
    if (in.op != HloOpcode::Copy || in.operands.size() != 1 || in.shape.tuple) return false;
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

const HloInstr& viewed(const HloComputation& comp, const HloOperand& o, bool copies) {
    const HloInstr* x = &comp.instrs[static_cast<std::size_t>(o.instr)];
    while (is_view(comp, *x, copies))
        x = &comp.instrs[static_cast<std::size_t>(x->operands[0].instr)];
    return *x;
}

std::int64_t hbm_bytes(const HloShape& s) {
    if (!s.tuple) return s.memory_space == 0 ? s.bytes() : 0;
    std::int64_t b = 0;
    for (const auto& e : s.elements) b += hbm_bytes(e);
    return b;
}

bool is_view(const HloComputation& comp, const HloInstr& in, bool copies) {
    if (in.operands.empty()) return false;
    return in.op == HloOpcode::Bitcast || in.op == HloOpcode::Reshape ||
           (copies && is_noop_copy(comp, in));
}

bool free_custom_call(std::string_view t) {
    for (const char* f : {"AllocateBuffer", "Sharding", "SPMDFullToShardShape",
                          "SPMDShardToFullShape", "MoveToHost", "MoveToDevice", "LayoutConstraint",
                          "SetBound", "annotate_device_placement", "X64Combine", "X64SplitLow",
                          "X64SplitHigh", "GetRngSeed", "PadToStatic", "SliceToDynamic"})
        if (t == f) return true;
    return t.substr(0, 4) == "xla." || t.substr(0, 4) == "sdy.";
}

const HloShape& CostArgs::operand(std::size_t k) const {
    if (k >= in.operands.size())
        ctx.m.fail(in.offset, fmt::format("{} needs at least {} operands", in.opcode, k + 1));
    return operand_shape(in, comp, k);
}

std::int64_t CostArgs::pad_bytes(const HloShape& s) const {
    const std::int64_t n = padded_elements(first_array(s), ctx.opts.tile_padding);
    const HloType& t = first_array(s).type;
    return t.bits >= 8 ? n * (t.bits / 8) : (n * t.bits + 7) / 8;
}

std::optional<TraceOp> CostArgs::vec(VectorOp op, const HloType& in_t, std::int64_t rows,
                                     std::int64_t cols) const {
    if (rows <= 0 || cols <= 0) return std::nullopt;
    return vector_op(op, in_t, out.type, rows, cols);
}

std::optional<TraceOp> cost_instruction(const HloInstr& in, const HloComputation& comp,
                                        const std::vector<OperandPlace>& places,
                                        const CostContext& ctx) {
    const OpcodeInfo& info = opcode_info(in.op);
    if (!info.cost) return std::nullopt;
    const HloShape& out = largest_array(in.shape);
    const HloType& in_type =
        in.operands.empty() ? out.type : first_array(operand_shape(in, comp, 0)).type;
    return info.cost(CostArgs{in, comp, places, ctx, out, in_type});
}

namespace {

// `operand_precision={highest,default}`: XLA's PrecisionConfig of a dot or convolution, the
// higher of its operands' (absent: default).
MatmulPrecision operand_precision(const HloInstr& in) {
    MatmulPrecision p = MatmulPrecision::Default;
    const HloAttr* a = in.attr("operand_precision");
    if (!a) return p;
    std::string_view v = a->value;
    std::size_t i = 0;
    while (i < v.size()) {
        while (i < v.size() && (v[i] == '{' || v[i] == '}' || v[i] == ',' || v[i] == ' ')) ++i;
        std::size_t j = i;
        while (j < v.size() && v[j] != ',' && v[j] != '}') ++j;
        std::string word(v.substr(i, j - i));
        for (char& ch : word) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        MatmulPrecision q{};
        if (!word.empty() && parse_precision(word, q) && q > p) p = q;
        i = j;
    }
    return p;
}

}  // namespace

std::optional<TraceOp> cost_dot(const CostArgs& a) {
    std::optional<TraceOp> t = dot_op(a.in, a.comp, a.ctx);
    if (t) t->precision = operand_precision(a.in);
    return t;
}

std::optional<TraceOp> cost_convolution(const CostArgs& a) {
    std::optional<TraceOp> t = conv_op(a.in, a.comp, a.ctx);
    if (t) t->precision = operand_precision(a.in);
    return t;
}

// fft: log2(n) butterfly stages over every element, on the VPU.
std::optional<TraceOp> cost_fft(const CostArgs& a) {
    const HloShape& x = first_array(a.operand(0));
    const std::int64_t nn = x.dims.empty() ? 1 : x.dims.back();
    std::int64_t stages = 1;
    while ((std::int64_t{1} << stages) < nn) ++stages;
    return a.vec(VectorOp::Mul, x.type, 1, x.elements_count() * stages);
}

// triangular-solve, cholesky: n x n matrices (batched) on the MXU.
std::optional<TraceOp> cost_solve(const CostArgs& a) {
    const HloShape& x = first_array(a.operand(0));
    const std::int64_t nn = x.dims.empty() ? 1 : x.dims.back();
    if (x.dims.size() < 2) a.ctx.m.fail(a.in.offset, fmt::format("{} needs a matrix", a.in.opcode));
    if (nn == 0) return std::nullopt;
    TraceOp t;
    t.kind = OpKind::Matmul;
    t.matmul.batch = std::max<std::int64_t>(1, x.elements_count() / (nn * nn));
    t.matmul.m = nn;
    t.matmul.k = nn;
    t.matmul.n = a.in.op == HloOpcode::Cholesky
                     ? std::max<std::int64_t>(1, nn / 3)
                     : first_array(a.operand(1)).elements_count() / (t.matmul.batch * nn);
    if (t.matmul.n < 1 || nn < 1) return std::nullopt;
    t.dtype = t.out_dtype = trace_dtype(x.type).first;
    return t;
}

// One VPU op per element: the row's op for one stream in from HBM, or for two or more.
std::optional<TraceOp> cost_elementwise(const CostArgs& a) {
    std::vector<std::int32_t> hbm;
    for (std::size_t k = 0; k < a.in.operands.size(); ++k)
        if (k < a.places.size() && !a.places[k].on_chip &&
            std::find(hbm.begin(), hbm.end(), a.in.operands[k].instr) == hbm.end())
            hbm.push_back(a.in.operands[k].instr);
    const bool two = a.ctx.fused ? !hbm.empty() : hbm.size() >= 2;
    const OpcodeInfo& info = opcode_info(a.in.op);
    const VectorOp op = info.unary ? *info.unary
                        : !two     ? VectorOp::Scale  // one stream in, one ALU op per element
                                   : info.binary.value_or(VectorOp::Add);
    return a.vec(op, a.in_type, 1, padded_elements(a.out, a.ctx.opts.tile_padding));
}

namespace {

// Data movement of `bytes`: a copy through HBM, or a VPU transpose/shuffle inside a fusion.
std::optional<TraceOp> movement(const CostArgs& a, std::int64_t bytes) {
    if (a.ctx.chained) {
        if (op_class(a.in.op) == OpClass::Generated) return std::nullopt;
        const std::int64_t eb = std::max(1, a.out.type.bits / 8);
        return a.vec(VectorOp::Transpose, a.out.type, 1, bytes / eb);
    }
    if (a.out.memory_space == 1 &&
        std::all_of(a.places.begin(), a.places.end(), [](auto p) { return p.on_chip; }))
        return std::nullopt;  // VMEM to VMEM
    if (bytes <= 0) return std::nullopt;
    return bytes_op(OpKind::Copy, bytes);
}

}  // namespace

std::optional<TraceOp> cost_movement(const CostArgs& a) {
    return movement(a, a.pad_bytes(a.in.shape));
}

// dynamic-update-slice moves the update (operand 1), not the whole buffer.
std::optional<TraceOp> cost_update_slice(const CostArgs& a) {
    return movement(a, a.pad_bytes(a.operand(1)));
}

// scatter moves its updates (the last operand).
std::optional<TraceOp> cost_scatter(const CostArgs& a) {
    return movement(a, a.pad_bytes(a.operand(a.in.operands.size() - 1)));
}

// Rows of at most kMaxReduceCols: a long reduction is tiled into partial sums (one per tile,
// as XLA's TPU reductions do), so a row fits VMEM.
std::optional<TraceOp> cost_reduce(const CostArgs& a) {
    const HloShape& x = first_array(a.operand(0));
    std::int64_t rows = std::max<std::int64_t>(1, a.out.elements_count());
    std::int64_t cols = x.elements_count() / rows;
    if (cols > kMaxReduceCols) {
        rows *= (cols + kMaxReduceCols - 1) / kMaxReduceCols;
        cols = kMaxReduceCols;
    }
    return a.vec(max_reducer(a.ctx.m, a.in) ? VectorOp::ReduceMax : VectorOp::ReduceSum, x.type,
                 rows, cols);
}

std::optional<TraceOp> cost_reduce_window(const CostArgs& a) {
    const HloShape& x = first_array(a.operand(0));
    return a.vec(max_reducer(a.ctx.m, a.in) ? VectorOp::ReduceMax : VectorOp::ReduceSum, x.type,
                 a.out.elements_count(), window_size(a.in, a.ctx.m));
}

std::optional<TraceOp> cost_select_and_scatter(const CostArgs& a) {
    const HloShape& x = first_array(a.operand(0));
    return a.vec(VectorOp::ReduceMax, x.type, first_array(a.operand(1)).elements_count(),
                 window_size(a.in, a.ctx.m));
}

// Statistics per feature (feature_index) over the other dimensions.
std::optional<TraceOp> cost_batch_norm(const CostArgs& a) {
    const HloShape& x = first_array(a.operand(0));
    const HloAttr* f = a.in.attr("feature_index");
    const auto fi = f ? int_list(f->value, a.ctx.m, f->offset) : std::vector<std::int64_t>{};
    if (fi.size() != 1 || fi[0] >= static_cast<std::int64_t>(x.dims.size()))
        a.ctx.m.fail(a.in.offset, "batch-norm needs a feature_index inside the operand");
    const std::int64_t c = x.dims[static_cast<std::size_t>(fi[0])];
    if (c == 0) return std::nullopt;
    return a.vec(
        a.in.op == HloOpcode::BatchNormGrad ? VectorOp::BatchnormGrad : VectorOp::Batchnorm, x.type,
        x.elements_count() / c, c);
}

// sort, topk: a bitonic network of s(s+1)/2 compare-exchange stages, s = log2 n, per operand.
std::optional<TraceOp> cost_sort(const CostArgs& a) {
    const HloShape& x = first_array(a.operand(0));
    std::int64_t s = 1;
    const std::int64_t len = x.dims.empty() ? 1 : x.dims.back();
    while ((std::int64_t{1} << s) < len) ++s;
    return a.vec(
        VectorOp::Max, x.type, 1,
        x.elements_count() * s * (s + 1) / 2 * static_cast<std::int64_t>(a.in.operands.size()));
}

std::optional<TraceOp> cost_scan(const CostArgs& a) {
    const HloShape& x = first_array(a.operand(0));
    return a.vec(VectorOp::Add, x.type, 1, x.elements_count());
}

std::optional<TraceOp> cost_collective(const CostArgs& a) {
    std::vector<const HloShape*> shapes;
    for (std::size_t k = 0; k < a.in.operands.size(); ++k) shapes.push_back(&a.operand(k));
    return collective_op(a.in, a.ctx, shapes);
}

std::optional<TraceOp> cost_infeed(const CostArgs& a) {
    return bytes_op(OpKind::Infeed, std::max<std::int64_t>(1, first_array(a.in.shape).bytes()));
}

std::optional<TraceOp> cost_outfeed(const CostArgs& a) {
    return bytes_op(OpKind::Outfeed, std::max<std::int64_t>(1, a.operand(0).bytes()));
}

}  // namespace tpusim::hlo_detail
