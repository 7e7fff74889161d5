// Instruction mix of every vector trace op, per loop iteration. docs/vpu.md tabulates it.
#include "tpusim/program/vector_lowering.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <stdexcept>

#include "tpusim/common/error.h"
#include "vector_body_builder.h"

namespace tpusim {

namespace {

// Lowering context for one iteration. `k` f32 vregs make one tile column of the iteration:
// k = 2 when bf16 is involved, because bf16 sits in VMEM packed as (16, 128) tiles (two rows
// per 32-bit sublane word, the layout Mosaic/XLA use on TPUs): one 4 KiB vld brings 16 rows,
// two cvt ops unpack them into two f32 vregs, and one cvt packs two f32 vregs for a vst.
struct Ctx {
    BodyBuilder b;
    const VpuConfig& vpu;
    int k;
    std::int64_t in_bytes, out_bytes;
    std::uint32_t vreg_bytes;

    Ctx(const VpuConfig& v, const VectorOpDesc& d)
        : vpu(v),
          k(d.in_bytes == 2 || d.out_bytes == 2 ? 2 : 1),
          in_bytes(d.in_bytes),
          out_bytes(d.out_bytes),
          vreg_bytes(static_cast<std::uint32_t>(v.sublanes * v.lanes * 4)) {}

    std::vector<VVal> load_in() {
        std::vector<VVal> xs;
        if (in_bytes == 4) {
            for (int h = 0; h < k; ++h) xs.push_back(b.load(vreg_bytes));
        } else {
            VVal p = b.load(vreg_bytes);
            xs.push_back(b.op(VOp::Cvt, p));
            xs.push_back(b.op(VOp::Cvt, p));
        }
        return xs;
    }
    void store_out(const std::vector<VVal>& ys) {
        if (out_bytes == 4) {
            for (VVal y : ys) b.store(y, vreg_bytes);
        } else {
            b.store(b.op(VOp::Cvt, ys[0], ys[1]), vreg_bytes);
        }
    }
    // a * b + c: one fma where the VALU has one, else a multiply and an add.
    VVal fma(VVal a, VVal x, VVal c) {
        if (vpu.has_fma) return b.op(VOp::Fma, a, x, c);
        return b.op(VOp::Add, b.op(VOp::Mul, a, x), c);
    }
    // A row vector (bias, gamma, beta: f32) loaded with sublane broadcast: one lane row.
    VVal load_row() { return b.load(static_cast<std::uint32_t>(vpu.lanes * 4)); }
};

using ElementFn = std::function<VVal(Ctx&, VVal)>;

// Independent partial accumulators per reduction, so that a chain of dependent adds does not
// bound the loop: enough to cover the accumulate op's latency at its issue interval.
int partial_accumulators(const VpuOpTiming& t, std::int64_t tiles) {
    const std::int64_t a = std::max<std::int64_t>(1, t.latency_cycles / t.issue_interval_cycles);
    return static_cast<int>(std::min<std::int64_t>({a, tiles, 8}));
}

// One reduction along cols: `step(x, half)` maps a loaded f32 vreg to the value accumulated
// with `op` (the first values seed the accumulators).
struct Reduction {
    VOp op;
    const VpuOpTiming& timing;
    std::function<VVal(VVal, int)> step;
};

// One pass over the tile columns of a row group computing every reduction in `rs`, for each
// of the k halves: partial accumulators, a pairwise tree over them, then the cross-lane unit
// reduces the 128 lanes and broadcasts each row's result across its sublane.
// Result: [reduction][half].
std::vector<std::vector<VVal>> row_reduce(Ctx& c, std::int64_t tiles,
                                          const std::vector<Reduction>& rs) {
    std::vector<std::vector<std::vector<VVal>>> acc(
        rs.size(), std::vector<std::vector<VVal>>(static_cast<std::size_t>(c.k)));
    for (std::int64_t j = 0; j < tiles; ++j) {
        const std::vector<VVal> xs = c.load_in();
        for (int h = 0; h < c.k; ++h) {
            for (std::size_t r = 0; r < rs.size(); ++r) {
                VVal v = rs[r].step(xs[h], h);
                const auto slot =
                    static_cast<std::size_t>(j % partial_accumulators(rs[r].timing, tiles));
                auto& a = acc[r][h];
                if (a.size() <= slot) {
                    a.push_back(v);
                } else {
                    a[slot] = c.b.op(rs[r].op, a[slot], v);
                }
            }
        }
    }
    std::vector<std::vector<VVal>> out(rs.size());
    for (std::size_t r = 0; r < rs.size(); ++r) {
        for (int h = 0; h < c.k; ++h) {
            std::vector<VVal> p = acc[r][h];
            while (p.size() > 1) {
                std::vector<VVal> n;
                for (std::size_t i = 0; i + 1 < p.size(); i += 2) {
                    n.push_back(c.b.op(rs[r].op, p[i], p[i + 1]));
                }
                if (p.size() % 2) n.push_back(p.back());
                p = n;
            }
            out[r].push_back(c.b.op(VOp::Broadcast, c.b.op(VOp::Reduce, p[0])));
        }
    }
    return out;
}

VVal identity(VVal x, int) { return x; }

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

// Elementwise ops with `n_in` operands of the input dtype.
void lower_elementwise(Ctx& c, int n_in, const std::function<VVal(Ctx&, std::vector<VVal>)>& f) {
    std::vector<std::vector<VVal>> ins;
    for (int i = 0; i < n_in; ++i) ins.push_back(c.load_in());
    std::vector<VVal> ys;
    for (int h = 0; h < c.k; ++h) {
        std::vector<VVal> args;
        for (const auto& in : ins) args.push_back(in[h]);
        ys.push_back(f(c, args));
    }
    c.store_out(ys);
}

void lower_norm(Ctx& c, std::int64_t tiles, bool rms) {
    const VpuOpTable& t = c.vpu.ops;
    VVal inv_n = c.b.konst(), eps = c.b.konst();
    std::vector<VVal> mean(c.k), rstd(c.k);
    auto square = [&](VVal x, int) { return c.b.op(VOp::Mul, x, x); };
    if (rms) {
        const std::vector<VVal> q = row_reduce(c, tiles, {{VOp::Add, t.add, square}})[0];
        for (int h = 0; h < c.k; ++h) {
            VVal ms = c.b.op(VOp::Mul, q[h], inv_n);
            rstd[h] = c.b.op(VOp::Rsqrt, c.b.op(VOp::Add, ms, eps));
        }
    } else {
        // Both moments in one pass (var = E[x^2] - E[x]^2, as Flax's LayerNorm computes it).
        const auto sq =
            row_reduce(c, tiles, {{VOp::Add, t.add, identity}, {VOp::Add, t.add, square}});
        for (int h = 0; h < c.k; ++h) {
            mean[h] = c.b.op(VOp::Mul, sq[0][h], inv_n);
            VVal ex2 = c.b.op(VOp::Mul, sq[1][h], inv_n);
            VVal var = c.b.op(VOp::Sub, ex2, c.b.op(VOp::Mul, mean[h], mean[h]));
            rstd[h] = c.b.op(VOp::Rsqrt, c.b.op(VOp::Add, var, eps));
        }
    }
    for (std::int64_t j = 0; j < tiles; ++j) {
        VVal gamma = c.load_row();
        VVal beta = rms ? VVal{} : c.load_row();
        const std::vector<VVal> xs = c.load_in();
        std::vector<VVal> ys;
        for (int h = 0; h < c.k; ++h) {
            VVal d = rms ? xs[h] : c.b.op(VOp::Sub, xs[h], mean[h]);
            VVal n = c.b.op(VOp::Mul, d, rstd[h]);
            ys.push_back(rms ? c.b.op(VOp::Mul, n, gamma) : c.fma(n, gamma, beta));
        }
        c.store_out(ys);
    }
}

void lower_softmax(Ctx& c, std::int64_t tiles) {
    const VpuOpTable& t = c.vpu.ops;
    const std::vector<VVal> m = row_reduce(c, tiles, {{VOp::Max, t.max, identity}})[0];
    // exp(x - max), kept in a VMEM scratch buffer (f32) while its row sum accumulates.
    auto exp_shifted = [&](VVal x, int h) {
        VVal e = c.b.op(VOp::Exp, c.b.op(VOp::Sub, x, m[h]));
        c.b.store(e, c.vreg_bytes);
        return e;
    };
    const std::vector<VVal> s = row_reduce(c, tiles, {{VOp::Add, t.add, exp_shifted}})[0];
    std::vector<VVal> r(c.k);
    for (int h = 0; h < c.k; ++h) r[h] = c.b.op(VOp::Recip, s[h]);
    for (std::int64_t j = 0; j < tiles; ++j) {
        std::vector<VVal> ys;
        for (int h = 0; h < c.k; ++h) ys.push_back(c.b.op(VOp::Mul, c.b.load(c.vreg_bytes), r[h]));
        c.store_out(ys);
    }
}

void lower_reduce(Ctx& c, std::int64_t tiles, bool is_max) {
    const VpuOpTable& t = c.vpu.ops;
    const std::vector<VVal> red =
        row_reduce(c, tiles, {{is_max ? VOp::Max : VOp::Add, is_max ? t.max : t.add, identity}})[0];
    // One value per row: a masked store of one lane per sublane.
    for (VVal v : red) {
        if (c.out_bytes == 2) v = c.b.op(VOp::Cvt, v);
        c.b.store(v, static_cast<std::uint32_t>(c.vpu.sublanes * c.out_bytes));
    }
}

// Adam on f32 state: m' = b1 m + (1-b1) g; v' = b2 v + (1-b2) g^2;
// p' = p - lr * m' / (sqrt(v') + eps), bias corrections folded into lr (a scalar), and
// sqrt(v) computed as v * rsqrt(v).
void lower_adam(Ctx& c) {
    VVal b1 = c.b.konst(), omb1 = c.b.konst(), b2 = c.b.konst(), omb2 = c.b.konst(),
         eps = c.b.konst(), neg_lr = c.b.konst();
    const std::vector<VVal> p = c.load_in(), g = c.load_in(), m = c.load_in(), v = c.load_in();
    std::vector<VVal> po, mo, vo;
    for (int h = 0; h < c.k; ++h) {
        VVal m1 = c.fma(g[h], omb1, c.b.op(VOp::Mul, m[h], b1));
        VVal g2 = c.b.op(VOp::Mul, g[h], g[h]);
        VVal v1 = c.fma(g2, omb2, c.b.op(VOp::Mul, v[h], b2));
        VVal sq = c.b.op(VOp::Mul, v1, c.b.op(VOp::Rsqrt, v1));
        VVal r = c.b.op(VOp::Recip, c.b.op(VOp::Add, sq, eps));
        po.push_back(c.fma(c.b.op(VOp::Mul, m1, r), neg_lr, p[h]));
        mo.push_back(m1);
        vo.push_back(v1);
    }
    c.store_out(mo);
    c.store_out(vo);
    c.store_out(po);
}

}  // namespace

const std::vector<std::string>& vector_op_names() {
    static const std::vector<std::string> names = {
        "add",        "sub",       "mul",     "max",     "relu",      "bias_add", "gelu",
        "tanh",       "exp",       "sigmoid", "softmax", "layernorm", "rmsnorm",  "reduce_sum",
        "reduce_max", "transpose", "convert", "dropout", "adam",      "sgd"};
    return names;
}

bool is_row_vector_op(const std::string& op) {
    return op == "softmax" || op == "layernorm" || op == "rmsnorm" || op == "reduce_sum" ||
           op == "reduce_max";
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

VectorLoop lower_vector_loop(const VectorOpDesc& d, const VpuConfig& vpu, const VmemConfig& vmem) {
    const std::int64_t iterations = vector_loop_iterations(d, vpu);
    Ctx c(vpu, d);
    const std::int64_t tiles = static_cast<std::int64_t>(ceil_div(d.cols, vpu.lanes));
    const std::string& op = d.op;
    using Args = std::vector<VVal>;

    if (op == "softmax") {
        lower_softmax(c, tiles);
    } else if (op == "layernorm" || op == "rmsnorm") {
        lower_norm(c, tiles, op == "rmsnorm");
    } else if (op == "reduce_sum" || op == "reduce_max") {
        lower_reduce(c, tiles, op == "reduce_max");
    }
    if (is_row_vector_op(op)) {
        VectorLoop loop = c.b.finish(iterations, vpu.vregs, true);
        schedule_loop(loop, vpu, vmem);
        return loop;
    }

    static const std::map<std::string, VOp> binary = {
        {"add", VOp::Add}, {"sub", VOp::Sub}, {"mul", VOp::Mul}, {"max", VOp::Max}};
    static const std::map<std::string, VOp> unary = {{"tanh", VOp::Tanh}, {"exp", VOp::Exp}};
    if (auto it = binary.find(op); it != binary.end()) {
        lower_elementwise(c, 2, [o = it->second](Ctx& x, Args a) { return x.b.op(o, a[0], a[1]); });
    } else if (auto u = unary.find(op); u != unary.end()) {
        lower_elementwise(c, 1, [o = u->second](Ctx& x, Args a) { return x.b.op(o, a[0]); });
    } else if (op == "relu") {
        VVal zero = c.b.konst();
        lower_elementwise(c, 1, [&](Ctx& x, Args a) { return x.b.op(VOp::Max, a[0], zero); });
    } else if (op == "bias_add") {
        VVal bias = c.load_row();  // one 128-lane slice of the bias, shared by the k halves
        lower_elementwise(c, 1, [&](Ctx& x, Args a) { return x.b.op(VOp::Add, a[0], bias); });
    } else if (op == "gelu") {
        VVal c0 = c.b.konst(), c1 = c.b.konst(), half = c.b.konst();
        lower_elementwise(c, 1, [&](Ctx& x, Args a) { return gelu(x, a[0], c0, c1, half); });
    } else if (op == "sigmoid") {
        // XLA expands logistic(x) as 0.5 * tanh(0.5 x) + 0.5.
        VVal half = c.b.konst();
        lower_elementwise(c, 1, [&](Ctx& x, Args a) {
            return x.fma(x.b.op(VOp::Tanh, x.b.op(VOp::Mul, a[0], half)), half, half);
        });
    } else if (op == "convert") {
        if (d.in_bytes == d.out_bytes) {  // same type: a copy of the packed tile
            for (int h = 0; h < (d.in_bytes == 2 ? 1 : c.k); ++h)
                c.b.store(c.b.load(c.vreg_bytes), c.vreg_bytes);
        } else {
            lower_elementwise(c, 1, [](Ctx&, Args a) { return a[0]; });
        }
    } else if (op == "dropout") {
        // Random bits from a counter-based hash on the VALU (iota + key, then two xorshift
        // rounds of shift and xor), compared with the keep threshold; kept values scaled.
        VVal iota = c.b.konst(), key = c.b.konst(), thresh = c.b.konst(), scale = c.b.konst(),
             zero = c.b.konst();
        lower_elementwise(c, 1, [=](Ctx& x, Args a) {
            VVal r = x.b.op(VOp::Add, iota, key);
            for (int i = 0; i < 2; ++i) r = x.b.op(VOp::Logic, r, x.b.op(VOp::Logic, r));
            VVal keep = x.b.op(VOp::Cmp, r, thresh);
            return x.b.op(VOp::Select, keep, x.b.op(VOp::Mul, a[0], scale), zero);
        });
    } else if (op == "sgd") {
        VVal neg_lr = c.b.konst();
        lower_elementwise(c, 2, [=](Ctx& x, Args a) { return x.fma(a[1], neg_lr, a[0]); });
    } else if (op == "adam") {
        lower_adam(c);
    } else if (op == "transpose") {
        lower_elementwise(c, 1, [](Ctx& x, Args a) { return x.b.op(VOp::Transpose, a[0]); });
    } else {
        throw std::logic_error("vector lowering: no lowering for listed op " + op);
    }
    VectorLoop loop = c.b.finish(iterations, vpu.vregs, false);
    schedule_loop(loop, vpu, vmem);
    return loop;
}

}  // namespace tpusim
