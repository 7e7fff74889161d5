// The MXU's instructions: dot and convolution as (batched) GEMMs, a 2-D convolution as the
// conv2d op the hand-written traces use (docs/hlo.md, "How each opcode is costed" and
// "Passes": direct-convolutions).
#include <fmt/format.h>

#include <array>
#include <string>

#include "hlo_import.h"

namespace tpusim::hlo_detail {

namespace {

std::int64_t product(const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& at) {
    std::int64_t p = 1;
    for (std::int64_t i : at) p *= dims[static_cast<std::size_t>(i)];
    return p;
}

// A 2-D convolution as the TPU runs it (`conv2d`, the kind the hand-written traces use): the
// input is read from HBM once and the kernel's taps are applied to its tiles in VMEM, not an
// im2col matrix of kernel-size times the input streamed from HBM. For one group, batch and
// features in the input's and the output's labels, no dilation and an output of the size that
// "same" (ceil(in / stride)) or "valid" padding gives; anything else stays the implicit GEMM.
std::optional<TraceOp> direct_conv(const HloInstr& in, const HloModule& m, const HloShape& lhs,
                                   const HloShape& ker, const std::string& il,
                                   const std::string& kl, const std::string& ol) {
    // (labels are only b, f and the spatial digits here: "0" and "1")
    if (il.size() != 4 || il != ol || kl.size() != 4) return std::nullopt;
    // size=3x3 stride=2x2 pad=1_1x1_1; any dilation (lhs_dilate, rhs_dilate) is left to the
    // implicit GEMM.
    if (const HloAttr* w = in.attr("window");
        w && w->value.find("dilate") != std::string_view::npos)
        return std::nullopt;
    std::vector<std::int64_t> size = window_field(in, m, "size");
    std::vector<std::int64_t> stride = window_field(in, m, "stride");
    if (size.empty()) size = {1, 1};
    if (stride.empty()) stride = {1, 1};
    if (size.size() != 2 || stride.size() != 2 || stride[0] < 1 || stride[1] < 1)
        return std::nullopt;
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
    if (sp != 2 || kh[0] != size[0] || kh[1] != size[1] || in.shape.dims[ol.find('b')] != c.batch ||
        in.shape.dims[ol.find('f')] != c.c_out)
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

}  // namespace

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
        if (auto c = direct_conv(in, ctx.m, lhs, ker, il, kl, ol)) return c;
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

}  // namespace tpusim::hlo_detail
