// Vector op names, iteration counts and the dispatch to the per-op lowerings (the one-line
// elementwise ops are here; the rest in vector_lowering_{rows,cols,grad}.cpp). docs/vpu.md
// tabulates the instruction mix of every op.
#include "tpusim/program/vector_lowering.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
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

}  // namespace

const std::vector<std::string>& vector_op_names() {
    // In the order of the trace format's table (docs/trace-format.md).
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v = {
            "add",       "sub",         "mul",          "div",          "max",
            "min",       "neg",         "abs",          "relu",         "gelu",
            "tanh",      "sigmoid",     "exp",          "log",          "sqrt",
            "rsqrt",     "scale",       "convert",      "dropout",      "transpose",
            "relu_grad", "gelu_grad",   "tanh_grad",    "sigmoid_grad", "dropout_grad",
            "bias_add",  "softmax",     "softmax_grad", "layernorm",    "layernorm_grad",
            "rmsnorm",   "reduce_sum",  "reduce_max",   "batchnorm",    "batchnorm_grad",
            "gather",    "scatter_add", "sgd",          "sgd_momentum", "adam",
            "lamb"};
        // a trace's dropout and dropout_grad with "mask": "saved" (OpSpec::vop)
        v.insert(v.end(), {"dropout_saved_mask", "dropout_grad_saved_mask"});
        return v;
    }();
    return names;
}

bool is_row_vector_op(const std::string& op) {
    return op == "softmax" || op == "softmax_grad" || op == "layernorm" || op == "layernorm_grad" ||
           op == "rmsnorm" || op == "reduce_sum" || op == "reduce_max";
}

int VectorLoop::stages() const {
    return stage.empty() ? 1 : 1 + *std::max_element(stage.begin(), stage.end());
}

std::int64_t vector_loop_iterations(const VectorOpDesc& d, const VpuConfig& vpu) {
    auto bad = [&](const std::string& what) { throw InputError("vector op", d.op, what); };
    if (std::find(vector_op_names().begin(), vector_op_names().end(), d.op) ==
        vector_op_names().end()) {
        bad("unknown vector op; expected one of: " +
            fmt::format("{}", fmt::join(vector_op_names(), ", ")));
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
    return is_row_vector_op(d.op) ? row_groups : row_groups * tiles;
}

VectorLoop lower_vector_loop(const VectorOpDesc& d, const VpuConfig& vpu) {
    const std::int64_t iterations = vector_loop_iterations(d, vpu);
    Ctx c(vpu, d);
    const std::int64_t tiles = static_cast<std::int64_t>(ceil_div(d.cols, vpu.lanes));
    const std::string& op = d.op;
    if (op == "softmax") {
        lower_softmax(c, tiles);
    } else if (op == "softmax_grad") {
        lower_softmax_grad(c, tiles);
    } else if (op == "layernorm_grad") {
        lower_layernorm_grad(c, tiles);
    } else if (op == "layernorm" || op == "rmsnorm") {
        lower_norm(c, tiles, op == "rmsnorm");
    } else if (op == "reduce_sum" || op == "reduce_max") {
        lower_reduce(c, tiles, op == "reduce_max");
    }
    if (is_row_vector_op(op)) {
        return c.b.finish(iterations, vpu.vregs, true);
    }

    static const std::map<std::string, VOp> binary = {{"add", VOp::Add},
                                                      {"sub", VOp::Sub},
                                                      {"mul", VOp::Mul},
                                                      {"max", VOp::Max},
                                                      {"min", VOp::Min}};
    static const std::map<std::string, VOp> unary = {
        {"tanh", VOp::Tanh}, {"exp", VOp::Exp}, {"log", VOp::Log}, {"rsqrt", VOp::Rsqrt}};
    auto one = [&](int n_in, const std::function<VVal(Ctx&, Args)>& f) {
        lower_elementwise(c, n_in, 1, [&](Ctx& x, Args a) { return Args{f(x, a)}; });
    };
    if (auto it = binary.find(op); it != binary.end()) {
        one(2, [o = it->second](Ctx& x, Args a) { return x.b.op(o, a[0], a[1]); });
    } else if (auto u = unary.find(op); u != unary.end()) {
        one(1, [o = u->second](Ctx& x, Args a) { return x.b.op(o, a[0]); });
    } else if (lower_elementwise_more(c, op)) {
        // div, neg, abs, scale, sqrt, dropout and the activation gradients
    } else if (op == "relu") {
        VVal zero = c.b.konst();
        one(1, [&](Ctx& x, Args a) { return x.b.op(VOp::Max, a[0], zero); });
    } else if (op == "bias_add") {
        VVal bias = c.load_row();  // one 128-lane slice of the bias, shared by the k halves
        one(1, [&](Ctx& x, Args a) { return x.b.op(VOp::Add, a[0], bias); });
    } else if (op == "gelu") {
        VVal c0 = c.b.konst(), c1 = c.b.konst(), half = c.b.konst();
        one(1, [&](Ctx& x, Args a) { return gelu(x, a[0], c0, c1, half); });
    } else if (op == "sigmoid") {
        // XLA expands logistic(x) as 0.5 * tanh(0.5 x) + 0.5.
        VVal half = c.b.konst();
        one(1, [&](Ctx& x, Args a) {
            return x.fma(x.b.op(VOp::Tanh, x.b.op(VOp::Mul, a[0], half)), half, half);
        });
    } else if (op == "convert") {
        if (d.in_bytes == d.out_bytes) {  // same type: a copy of the packed tile
            for (int h = 0; h < (d.in_bytes == 2 ? 1 : c.k); ++h)
                c.b.store(c.b.load(c.vreg_bytes), c.vreg_bytes);
        } else {
            one(1, [](Ctx&, Args a) { return a[0]; });
        }
    } else if (op == "sgd") {
        VVal neg_lr = c.b.konst();
        one(2, [=](Ctx& x, Args a) { return x.fma(a[1], neg_lr, a[0]); });
    } else if (op == "sgd_momentum") {
        lower_sgd_momentum(c);
    } else if (op == "adam") {
        lower_adam(c);
    } else if (op == "lamb") {
        lower_lamb(c);
    } else if (op == "batchnorm" || op == "batchnorm_grad") {
        op == "batchnorm" ? lower_batchnorm(c) : lower_batchnorm_grad(c);
    } else if (op == "gather" || op == "scatter_add") {
        lower_gather(c, op == "scatter_add");
    } else if (op == "transpose") {
        one(1, [](Ctx& x, Args a) { return x.b.op(VOp::Transpose, a[0]); });
    } else {
        throw std::logic_error("vector lowering: no lowering for listed op " + op);
    }
    return c.b.finish(iterations, vpu.vregs, false);
}

}  // namespace tpusim
