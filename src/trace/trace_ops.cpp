// Names, element sizes and the FLOP / byte figures of trace ops (docs/trace-format.md,
// "Sizes and FLOPs").
#include <algorithm>
#include <array>

#include "trace_internal.h"

namespace tpusim {

using trace_detail::Wide;

namespace {

constexpr std::array<const char*, 13> kKindNames = {"matmul",
                                                    "conv2d",
                                                    "vector",
                                                    "copy",
                                                    "infeed",
                                                    "outfeed",
                                                    "all_reduce",
                                                    "reduce_scatter",
                                                    "all_gather",
                                                    "all_to_all",
                                                    "collective_permute",
                                                    "send",
                                                    "recv"};

constexpr std::array<const char*, 7> kDtypeNames = {"bf16", "f16", "f32", "s32",
                                                    "s8",   "u8",  "pred"};
constexpr std::array<std::int64_t, 7> kDtypeBytes = {2, 2, 4, 4, 1, 1, 1};

// Per-element work: inputs, outputs, flops, transcendentals, row_wise, reduces. FLOP counts
// are the usual textbook expansions (gelu: tanh approximation, 8 operations; adam: moment
// updates, bias-free step with sqrt and divide, 12; lamb: adam's 12, the weight decay term
// and the two squared norms, 18) so that totals are comparable with
// profilers that count the same way; the VPU model times them from these counts.
const std::array<VectorOpInfo, 41> kVectorOps = {{
    {"add", 2, 1, 1, 0, false, false},
    {"sub", 2, 1, 1, 0, false, false},
    {"mul", 2, 1, 1, 0, false, false},
    {"div", 2, 1, 1, 0, false, false},
    {"max", 2, 1, 1, 0, false, false},
    {"min", 2, 1, 1, 0, false, false},
    {"neg", 1, 1, 1, 0, false, false},
    {"abs", 1, 1, 1, 0, false, false},
    {"relu", 1, 1, 1, 0, false, false},
    {"gelu", 1, 1, 8, 1, false, false},
    {"tanh", 1, 1, 1, 1, false, false},
    {"sigmoid", 1, 1, 3, 1, false, false},
    {"exp", 1, 1, 1, 1, false, false},
    {"log", 1, 1, 1, 1, false, false},
    {"sqrt", 1, 1, 1, 1, false, false},
    {"rsqrt", 1, 1, 1, 1, false, false},
    {"scale", 1, 1, 1, 0, false, false},
    {"convert", 1, 1, 0, 0, false, false},
    {"dropout", 1, 1, 3, 0, false, false},
    {"transpose", 1, 1, 0, 0, false, false},
    {"relu_grad", 2, 1, 2, 0, false, false},
    {"gelu_grad", 2, 1, 14, 1, false, false},
    {"tanh_grad", 2, 1, 3, 0, false, false},
    {"sigmoid_grad", 2, 1, 3, 0, false, false},
    {"dropout_grad", 1, 1, 3, 0, false, false},
    {"bias_add", 1, 1, 1, 0, true, false},
    {"softmax", 1, 1, 5, 1, true, false},
    {"softmax_grad", 2, 1, 4, 0, true, false},
    {"layernorm", 1, 1, 8, 0, true, false},
    {"layernorm_grad", 2, 1, 12, 0, true, false},
    {"rmsnorm", 1, 1, 5, 0, true, false},
    {"reduce_sum", 1, 1, 1, 0, true, true},
    {"reduce_max", 1, 1, 1, 0, true, true},
    {"batchnorm", 1, 1, 6, 0, true, false},
    {"batchnorm_grad", 2, 1, 10, 0, true, false},
    {"gather", 1, 1, 0, 0, true, false},
    {"scatter_add", 1, 1, 1, 0, true, false},
    {"sgd", 2, 1, 2, 0, false, false},
    {"sgd_momentum", 3, 2, 4, 0, false, false},
    {"adam", 4, 3, 12, 1, false, false},
    {"lamb", 4, 3, 18, 1, false, false},
}};

static_assert(static_cast<std::size_t>(VectorOp::Lamb) + 1 == kVectorOps.size(),
              "one kVectorOps row per VectorOp, in enum order");
static_assert(static_cast<std::size_t>(OpKind::Recv) + 1 == kKindNames.size());
static_assert(static_cast<std::size_t>(DType::Pred) + 1 == kDtypeNames.size());

template <typename Array>
std::string join(const Array& names) {
    std::string s;
    for (const char* n : names) {
        if (*n == '\0') continue;
        if (!s.empty()) s += ", ";
        s += n;
    }
    return s;
}

template <typename Array, typename E>
bool lookup(const Array& names, const std::string& s, E& out) {
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (*names[i] != '\0' && s == names[i]) {
            out = static_cast<E>(i);
            return true;
        }
    }
    return false;
}

// Figures saturate at 2^64, which the reader rejects as "does not fit in 63 bits": a product
// of four sizes of up to 2^40 each would otherwise wrap 128 bits and look small.
constexpr Wide kTooBig = static_cast<Wide>(1) << 64;

struct Sat {
    Wide v;
};
Sat operator*(Sat a, Sat b) {
    const Wide p = std::min(a.v, kTooBig - 1) * std::min(b.v, kTooBig - 1);  // < 2^128
    return {std::min(p, kTooBig)};
}
Sat operator+(Sat a, Sat b) { return {std::min(a.v + b.v, kTooBig)}; }

Sat w(std::int64_t v) { return {static_cast<Wide>(v)}; }

// Bytes of `elements` elements of `d`.
Sat elems(Sat elements, DType d) { return elements * w(dtype_bytes(d)); }

constexpr std::int64_t kIndexBytes = 4;  // gather/scatter indices are s32

}  // namespace

const VectorOpInfo& vector_op_info(VectorOp op) {
    return kVectorOps.at(static_cast<std::size_t>(op));
}

int vector_inputs(const VectorShape& v) {
    return vector_op_info(v.op).inputs + (v.saved_mask && v.op == VectorOp::DropoutGrad ? 1 : 0);
}

int vector_outputs(const VectorShape& v) {
    return vector_op_info(v.op).outputs + (v.saved_mask && v.op == VectorOp::Dropout ? 1 : 0);
}

const char* op_kind_name(OpKind k) { return kKindNames.at(static_cast<std::size_t>(k)); }
const char* dtype_name(DType d) { return kDtypeNames.at(static_cast<std::size_t>(d)); }
std::int64_t dtype_bytes(DType d) { return kDtypeBytes.at(static_cast<std::size_t>(d)); }

bool is_collective(OpKind k) { return static_cast<int>(k) >= static_cast<int>(OpKind::AllReduce); }

const char* precision_name(MatmulPrecision p) {
    switch (p) {
        case MatmulPrecision::High:
            return "high";
        case MatmulPrecision::Highest:
            return "highest";
        case MatmulPrecision::Default:
            break;
    }
    return "default";
}

bool parse_precision(std::string_view s, MatmulPrecision& out) {
    for (MatmulPrecision p :
         {MatmulPrecision::Default, MatmulPrecision::High, MatmulPrecision::Highest}) {
        if (s == precision_name(p)) {
            out = p;
            return true;
        }
    }
    return false;
}

int precision_passes(const TraceOp& op) {
    if (op.kind != OpKind::Matmul && op.kind != OpKind::Conv2d) return 1;
    if (op.lhs_type() != DType::F32 && op.rhs_type() != DType::F32) return 1;
    // XLA's TPU dot of f32 operands: DEFAULT rounds each to bf16 (one pass); HIGH splits each
    // into a bf16 high and low part and adds three products (hi*hi, hi*lo, lo*hi: bf16_3x);
    // HIGHEST three parts each, six products.
    switch (op.precision) {
        case MatmulPrecision::High:
            return 3;
        case MatmulPrecision::Highest:
            return 6;
        case MatmulPrecision::Default:
            break;
    }
    return 1;
}

std::int64_t Conv2dShape::out_h() const {
    return padding == Padding::Same ? (h + stride_h - 1) / stride_h : (h - kh) / stride_h + 1;
}
std::int64_t Conv2dShape::out_w() const {
    return padding == Padding::Same ? (w + stride_w - 1) / stride_w : (w - kw) / stride_w + 1;
}

MatmulShape conv_as_matmul(const Conv2dShape& c) {
    MatmulShape mm;
    mm.batch = 1;
    mm.m = c.batch * c.out_h() * c.out_w();
    mm.k = c.kh * c.kw * c.c_in;
    mm.n = c.c_out;
    return mm;
}

namespace trace_detail {

bool parse_kind(const std::string& s, OpKind& out) { return lookup(kKindNames, s, out); }
bool parse_dtype(const std::string& s, DType& out) { return lookup(kDtypeNames, s, out); }
bool parse_vector_op(const std::string& s, VectorOp& out) {
    std::array<const char*, kVectorOps.size()> names{};
    for (std::size_t i = 0; i < names.size(); ++i) names[i] = kVectorOps[i].name;
    return lookup(names, s, out);
}
std::string kind_names() { return join(kKindNames); }
std::string dtype_names() { return join(kDtypeNames); }
std::string vector_op_names() {
    std::array<const char*, kVectorOps.size()> names{};
    for (std::size_t i = 0; i < names.size(); ++i) names[i] = kVectorOps[i].name;
    return join(names);
}

std::int64_t group_size(const TraceOp& op) {
    return op.replica_groups.empty() ? 1 : static_cast<std::int64_t>(op.replica_groups[0].size());
}

Wide wide_flops(const TraceOp& op) {
    switch (op.kind) {
        case OpKind::Matmul: {
            const auto& s = op.matmul;
            return (w(2) * w(s.batch) * w(s.m) * w(s.k) * w(s.n)).v;
        }
        case OpKind::Conv2d: {
            const auto s = conv_as_matmul(op.conv);
            return (w(2) * w(s.m) * w(s.k) * w(s.n)).v;
        }
        case OpKind::Vector: {
            const auto& v = op.vector;
            // A saved mask makes the gradient dy * mask * scale: 2, not the 3 of regenerating.
            const int per = v.saved_mask && v.op == VectorOp::DropoutGrad
                                ? 2
                                : vector_op_info(v.op).flops_per_element;
            return (w(v.rows) * w(v.cols) * w(per)).v;
        }
        default:
            return 0;
    }
}

namespace {

std::vector<Sat> operand_bytes(const TraceOp& op) {
    const DType d = op.dtype;
    switch (op.kind) {
        case OpKind::Matmul: {
            const auto& s = op.matmul;
            return {elems(w(s.batch) * w(s.m) * w(s.k), op.lhs_type()),
                    elems(w(s.batch) * w(s.k) * w(s.n), op.rhs_type())};
        }
        case OpKind::Conv2d: {
            const auto& c = op.conv;
            return {elems(w(c.batch) * w(c.h) * w(c.w) * w(c.c_in), op.lhs_type()),
                    elems(w(c.kh) * w(c.kw) * w(c.c_in) * w(c.c_out), op.rhs_type())};
        }
        case OpKind::Vector: {
            const auto& v = op.vector;
            const Sat full = elems(w(v.rows) * w(v.cols), d);
            const Sat row = elems(w(v.cols), d);
            const Sat indices = w(v.rows) * w(kIndexBytes);
            switch (v.op) {
                case VectorOp::BiasAdd:
                case VectorOp::Rmsnorm:
                    return {full, row};  // bias or gamma
                case VectorOp::Layernorm:
                case VectorOp::Batchnorm:
                    return {full, w(2) * row};  // gamma, beta
                case VectorOp::LayernormGrad:
                case VectorOp::BatchnormGrad:
                    return {full, full, row};  // dy, x, gamma
                // The gathered rows of the table, and the indices.
                case VectorOp::Gather:
                    return {full, indices};
                // Updates, indices, and the table rows read for the read-modify-write.
                case VectorOp::ScatterAdd:
                    return {full, indices, full};
                // dy and a saved mask: pred, one byte per element.
                case VectorOp::DropoutGrad:
                    if (v.saved_mask) return {full, elems(w(v.rows) * w(v.cols), DType::Pred)};
                    return {full};
                default:
                    return std::vector<Sat>(static_cast<std::size_t>(vector_inputs(v)), full);
            }
        }
        case OpKind::Infeed:
        case OpKind::Recv:
            return {};
        default:
            return {w(op.bytes)};
    }
}

Sat bytes_out(const TraceOp& op) {
    const DType d = op.out_dtype;
    switch (op.kind) {
        case OpKind::Matmul: {
            const auto& s = op.matmul;
            return elems(w(s.batch) * w(s.m) * w(s.n), d);
        }
        case OpKind::Conv2d: {
            const auto& c = op.conv;
            return elems(w(c.batch) * w(c.out_h()) * w(c.out_w()) * w(c.c_out), d);
        }
        case OpKind::Vector: {
            const auto& v = op.vector;
            const auto& info = vector_op_info(v.op);
            if (info.reduces) return elems(w(v.rows), d);
            Sat out = elems(w(v.rows) * w(v.cols), d) * w(info.outputs);
            if (v.op == VectorOp::Dropout && v.saved_mask)
                out = out + elems(w(v.rows) * w(v.cols), DType::Pred);  // the keep mask
            if (v.op == VectorOp::LayernormGrad || v.op == VectorOp::BatchnormGrad) {
                out = out + w(2) * elems(w(v.cols), d);  // dgamma, dbeta
            }
            return out;
        }
        case OpKind::Outfeed:
        case OpKind::Send:
            return {0};
        case OpKind::ReduceScatter:
            return {static_cast<Wide>(op.bytes / group_size(op))};
        case OpKind::AllGather:
            return w(op.bytes) * w(group_size(op));
        default:
            return w(op.bytes);
    }
}

}  // namespace

std::vector<Wide> wide_operand_bytes(const TraceOp& op) {
    std::vector<Wide> out;
    for (Sat b : operand_bytes(op)) out.push_back(b.v);
    return out;
}

Wide wide_bytes_out(const TraceOp& op) { return bytes_out(op).v; }

}  // namespace trace_detail

std::int64_t op_flops(const TraceOp& op) {
    return static_cast<std::int64_t>(trace_detail::wide_flops(op));
}

std::vector<std::int64_t> op_operand_bytes(const TraceOp& op) {
    std::vector<std::int64_t> out;
    for (Wide b : trace_detail::wide_operand_bytes(op)) out.push_back(static_cast<std::int64_t>(b));
    return out;
}

std::int64_t op_bytes_in(const TraceOp& op) {
    std::int64_t sum = 0;
    for (std::int64_t b : op_operand_bytes(op)) sum += b;
    return sum;
}

std::int64_t op_bytes_out(const TraceOp& op) {
    return static_cast<std::int64_t>(trace_detail::wide_bytes_out(op));
}

std::ptrdiff_t op_operand_dep(const TraceOp& op, std::size_t j) {
    if (op.operands.empty())
        return j < op.deps.size() ? static_cast<std::ptrdiff_t>(op.deps[j]) : -1;
    if (j >= op.operands.size() || op.operands[j] < 0) return -1;
    return static_cast<std::ptrdiff_t>(op.deps[static_cast<std::size_t>(op.operands[j])]);
}

std::int64_t op_hbm_bytes_in(const TraceOp& op) {
    const auto operands = op_operand_bytes(op);
    std::int64_t sum = 0;
    for (std::size_t j = 0; j < operands.size(); ++j) {
        const bool on_chip =
            (op.fused && j == 0) || std::find(op.vmem_operands.begin(), op.vmem_operands.end(),
                                              static_cast<int>(j)) != op.vmem_operands.end();
        if (!on_chip) sum += operands[j];
    }
    return sum;
}

std::int64_t op_core_count(const Trace& t, const TraceOp& op) {
    return op.cores.empty() ? t.cores : static_cast<std::int64_t>(op.cores.size());
}

std::vector<bool> results_kept_on_chip(const Trace& t) {
    std::vector<int> consumers(t.ops.size(), 0), fused(t.ops.size(), 0);
    for (const auto& op : t.ops) {
        for (std::size_t d : op.deps) {
            ++consumers[d];
            if (op.fused) ++fused[d];
        }
        for (std::size_t d : op.carried) ++consumers[d];  // read in the next trip, from HBM
    }
    std::vector<bool> kept(t.ops.size());
    for (std::size_t i = 0; i < t.ops.size(); ++i) {
        // A dropout that saves its mask writes it for the backward pass whatever reads y.
        const auto& v = t.ops[i].vector;
        const bool mask =
            t.ops[i].kind == OpKind::Vector && v.op == VectorOp::Dropout && v.saved_mask;
        kept[i] =
            t.ops[i].result_in_vmem || (!mask && consumers[i] > 0 && fused[i] == consumers[i]);
    }
    return kept;
}

}  // namespace tpusim
