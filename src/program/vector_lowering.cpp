// The vector op registry (one entry per VectorOp: its expansion and its class), iteration
// counts and the dispatch through the registry (the one-line elementwise expansions are
// here; the rest in vector_lowering_{rows,cols,grad}.cpp). docs/vpu.md
// tabulates the instruction mix of every op.
#include "tpusim/program/vector_lowering.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <stdexcept>

#include "tpusim/common/error.h"
#include "vector_lower_ctx.h"

namespace tpusim {

namespace {

VVal gelu(Ctx& c, VVal x, VVal c0, VVal c1, VVal half) {
    // XLA's tanh approximation: x * 0.5 * (1 + tanh(0.79788456 * (x + 0.044715 x^3))),
    // as x * (0.5 + 0.5 tanh(x * (c0 + c1 x^2))).
    VVal x2 = c.b.op(VOp::Mul, x, x);
    VVal t = c.fma(x2, c1, c0);
    VVal u = c.b.op(VOp::Mul, x, t);
    VVal th = c.b.op(VOp::Tanh, u);
    VVal h = c.fma(th, half, half);
    return c.b.op(VOp::Mul, x, h);
}

// One result per element from the f32 values of the op's `n_in` operands.
void one(Ctx& c, int n_in, const std::function<VVal(Ctx&, Args)>& f) {
    lower_elementwise(c, n_in, 1, [&](Ctx& x, Args a) { return Args{f(x, a)}; });
}

template <VOp O>
void lower_binary(Ctx& c) {
    one(c, 2, [](Ctx& x, Args a) { return x.b.op(O, a[0], a[1]); });
}

template <VOp O>
void lower_unary(Ctx& c) {
    one(c, 1, [](Ctx& x, Args a) { return x.b.op(O, a[0]); });
}

void lower_relu(Ctx& c) {
    VVal zero = c.b.konst();
    one(c, 1, [&](Ctx& x, Args a) { return x.b.op(VOp::Max, a[0], zero); });
}

void lower_bias_add(Ctx& c) {
    VVal bias = c.load_row();  // one 128-lane slice of the bias, shared by the k halves
    one(c, 1, [&](Ctx& x, Args a) { return x.b.op(VOp::Add, a[0], bias); });
}

void lower_gelu(Ctx& c) {
    VVal c0 = c.b.konst(), c1 = c.b.konst(), half = c.b.konst();
    one(c, 1, [&](Ctx& x, Args a) { return gelu(x, a[0], c0, c1, half); });
}

void lower_sigmoid(Ctx& c) {
    // XLA expands logistic(x) as 0.5 * tanh(0.5 x) + 0.5.
    VVal half = c.b.konst();
    one(c, 1, [&](Ctx& x, Args a) {
        return x.fma(x.b.op(VOp::Tanh, x.b.op(VOp::Mul, a[0], half)), half, half);
    });
}

void lower_convert(Ctx& c) {
    if (c.in_bytes == c.out_bytes) {  // same type: a copy of the packed tile
        for (int h = 0; h < (c.in_bytes == 2 ? 1 : c.k); ++h)
            c.b.store(c.b.load(c.vreg_bytes), c.vreg_bytes);
    } else {
        one(c, 1, [](Ctx&, Args a) { return a[0]; });
    }
}

void lower_sgd(Ctx& c) {
    VVal neg_lr = c.b.konst();
    one(c, 2, [=](Ctx& x, Args a) { return x.fma(a[1], neg_lr, a[0]); });
}

// The registry: one entry per VectorOp, in the enum's order (checked below), so that adding
// an op is adding its entry here and its row to the trace layer's table.
struct Entry {
    VectorOp op;
    VectorOpLowering lowering;
};
// clang-format off
constexpr Entry kVectorOpLowerings[] = {
    // op                       expand                        row    stats  max1st  colsums  keeps
    {VectorOp::Add,           {lower_binary<VOp::Add>,      false, 0,     false,  false,   false}},
    {VectorOp::Sub,           {lower_binary<VOp::Sub>,      false, 0,     false,  false,   false}},
    {VectorOp::Mul,           {lower_binary<VOp::Mul>,      false, 0,     false,  false,   false}},
    {VectorOp::Div,           {lower_div,                   false, 0,     false,  false,   false}},
    {VectorOp::Max,           {lower_binary<VOp::Max>,      false, 0,     false,  false,   false}},
    {VectorOp::Min,           {lower_binary<VOp::Min>,      false, 0,     false,  false,   false}},
    {VectorOp::Neg,           {lower_sign_bit,              false, 0,     false,  false,   false}},
    {VectorOp::Abs,           {lower_sign_bit,              false, 0,     false,  false,   false}},
    {VectorOp::Relu,          {lower_relu,                  false, 0,     false,  false,   false}},
    {VectorOp::Gelu,          {lower_gelu,                  false, 0,     false,  false,   false}},
    {VectorOp::Tanh,          {lower_unary<VOp::Tanh>,      false, 0,     false,  false,   false}},
    {VectorOp::Sigmoid,       {lower_sigmoid,               false, 0,     false,  false,   false}},
    {VectorOp::Exp,           {lower_unary<VOp::Exp>,       false, 0,     false,  false,   false}},
    {VectorOp::Log,           {lower_unary<VOp::Log>,       false, 0,     false,  false,   false}},
    {VectorOp::Sqrt,          {lower_sqrt,                  false, 0,     false,  false,   false}},
    {VectorOp::Rsqrt,         {lower_unary<VOp::Rsqrt>,     false, 0,     false,  false,   false}},
    {VectorOp::Scale,         {lower_scale,                 false, 0,     false,  false,   false}},
    {VectorOp::Convert,       {lower_convert,               false, 0,     false,  false,   false}},
    {VectorOp::Dropout,       {lower_dropout,               false, 0,     false,  false,   false}},
    {VectorOp::Transpose,     {lower_unary<VOp::Transpose>, false, 0,     false,  false,   false}},
    {VectorOp::ReluGrad,      {lower_relu_grad,             false, 0,     false,  false,   false}},
    {VectorOp::GeluGrad,      {lower_gelu_grad,             false, 0,     false,  false,   false}},
    {VectorOp::TanhGrad,      {lower_tanh_grad,             false, 0,     false,  false,   false}},
    {VectorOp::SigmoidGrad,   {lower_sigmoid_grad,          false, 0,     false,  false,   false}},
    {VectorOp::DropoutGrad,   {lower_dropout_grad,          false, 0,     false,  false,   false}},
    {VectorOp::BiasAdd,       {lower_bias_add,              false, 0,     false,  false,   false}},
    {VectorOp::Softmax,       {lower_softmax,               true,  2,     true,   false,   true}},
    {VectorOp::SoftmaxGrad,   {lower_softmax_grad,          true,  0,     false,  false,   false}},
    {VectorOp::Layernorm,     {lower_layernorm,             true,  2,     false,  false,   false}},
    {VectorOp::LayernormGrad, {lower_layernorm_grad,        true,  0,     false,  true,    false}},
    {VectorOp::Rmsnorm,       {lower_rmsnorm,               true,  1,     false,  false,   false}},
    {VectorOp::ReduceSum,     {lower_reduce_sum,            true,  0,     false,  false,   false}},
    {VectorOp::ReduceMax,     {lower_reduce_max,            true,  0,     false,  false,   false}},
    {VectorOp::Batchnorm,     {lower_batchnorm,             false, 0,     false,  false,   false}},
    {VectorOp::BatchnormGrad, {lower_batchnorm_grad,        false, 0,     false,  true,    false}},
    {VectorOp::Gather,        {lower_gather,                false, 0,     false,  false,   false}},
    {VectorOp::ScatterAdd,    {lower_scatter_add,           false, 0,     false,  false,   false}},
    {VectorOp::Sgd,           {lower_sgd,                   false, 0,     false,  false,   false}},
    {VectorOp::SgdMomentum,   {lower_sgd_momentum,          false, 0,     false,  false,   false}},
    {VectorOp::Adam,          {lower_adam,                  false, 0,     false,  false,   false}},
    {VectorOp::Lamb,          {lower_lamb,                  false, 0,     false,  false,   false}},
};
// clang-format on
constexpr std::size_t kVectorOpCount = static_cast<std::size_t>(VectorOp::Lamb) + 1;
static_assert(std::size(kVectorOpLowerings) == kVectorOpCount, "one entry per VectorOp");
constexpr bool in_enum_order() {
    for (std::size_t i = 0; i < kVectorOpCount; ++i)
        if (static_cast<std::size_t>(kVectorOpLowerings[i].op) != i) return false;
    return true;
}
static_assert(in_enum_order(), "entries in the order of VectorOp");

bool has_mask_form(VectorOp op) { return op == VectorOp::Dropout || op == VectorOp::DropoutGrad; }

}  // namespace

const VectorOpLowering& vector_op_lowering(VectorOp op) {
    const auto i = static_cast<std::size_t>(op);
    if (i >= kVectorOpCount)
        throw std::logic_error(fmt::format("vector lowering: no entry for vector op {}", i));
    return kVectorOpLowerings[i].lowering;
}

const std::vector<VectorOpDesc>& vector_op_forms() {
    static const std::vector<VectorOpDesc> forms = [] {
        std::vector<VectorOpDesc> v;
        for (std::size_t i = 0; i < kVectorOpCount; ++i) v.push_back({static_cast<VectorOp>(i)});
        for (std::size_t i = 0; i < kVectorOpCount; ++i) {
            if (has_mask_form(static_cast<VectorOp>(i)))
                v.push_back({static_cast<VectorOp>(i), true});
        }
        return v;
    }();
    return forms;
}

std::string vector_op_name(VectorOp op, bool saved_mask) {
    if (static_cast<std::size_t>(op) >= kVectorOpCount) return std::to_string(static_cast<int>(op));
    std::string name = vector_op_info(op).name;
    // The program layer's own names for the saved-mask forms: their bodies differ.
    if (saved_mask && has_mask_form(op)) name += "_saved_mask";
    return name;
}

int VectorLoop::stages() const {
    return stage.empty() ? 1 : 1 + *std::max_element(stage.begin(), stage.end());
}

std::int64_t vector_loop_iterations(const VectorOpDesc& d, const VpuConfig& vpu) {
    auto bad = [&](const std::string& what) {
        throw InputError("vector op", vector_op_name(d.op, d.saved_mask), what);
    };
    if (static_cast<std::size_t>(d.op) >= kVectorOpCount) {
        std::vector<std::string> names;
        for (const VectorOpDesc& f : vector_op_forms())
            names.push_back(vector_op_name(f.op, f.saved_mask));
        bad("unknown vector op; expected one of: " + fmt::format("{}", fmt::join(names, ", ")));
    }
    if (d.rows < 1 || d.cols < 1) {
        bad(fmt::format("expected rows and cols >= 1, got {} x {}", d.rows, d.cols));
    }
    if ((d.in_bytes != 2 && d.in_bytes != 4) || (d.out_bytes != 2 && d.out_bytes != 4)) {
        bad(fmt::format("expected element sizes of 2 (bf16) or 4 (f32) bytes, got {} -> {}",
                        d.in_bytes, d.out_bytes));
    }
    const std::int64_t k = d.in_bytes == 2 || d.out_bytes == 2 ? 2 : 1;
    const auto row_groups = static_cast<std::int64_t>(ceil_div(d.rows, vpu.sublanes * k));
    const auto tiles = static_cast<std::int64_t>(ceil_div(d.cols, vpu.lanes));
    return vector_op_lowering(d.op).row_op ? row_groups : row_groups * tiles;
}

VectorLoop lower_vector_loop(const VectorOpDesc& d, const VpuConfig& vpu) {
    const std::int64_t iterations = vector_loop_iterations(d, vpu);
    const VectorOpLowering& l = vector_op_lowering(d.op);
    Ctx c(vpu, d);
    l.expand(c);
    return c.b.finish(iterations, vpu.vregs, l.row_op);
}

}  // namespace tpusim
