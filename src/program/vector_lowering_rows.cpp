// Row ops: one loop iteration is a row group (8 rows, 16 with bf16) across all columns, with
// reductions along the row on the cross-lane unit (RowReducer). docs/vpu.md tabulates them.
#include <algorithm>

#include "vector_lower_ctx.h"

namespace tpusim {

namespace {

void lower_norm(Ctx& c, bool rms) {
    const std::int64_t tiles = c.tiles;
    const VpuOpTable& t = c.vpu.ops;
    VVal inv_n = c.b.konst(), eps = c.b.konst();
    std::vector<VVal> mean(c.k), rstd(c.k);
    if (rms) {
        RowReducer red(c, tiles, {{VOp::Add, &t.add}});
        for (std::int64_t j = 0; j < tiles; ++j) {
            const std::vector<VVal> xs = c.load_in();
            for (int h = 0; h < c.k; ++h) red.add(0, h, j, c.b.op(VOp::Mul, xs[h], xs[h]));
        }
        const std::vector<VVal> q = red.finish()[0];
        for (int h = 0; h < c.k; ++h) {
            VVal ms = c.b.op(VOp::Mul, q[h], inv_n);
            rstd[h] = c.b.op(VOp::Rsqrt, c.b.op(VOp::Add, ms, eps));
        }
    } else {
        // Both moments in one pass (var = E[x^2] - E[x]^2, as Flax's LayerNorm computes it).
        RowReducer red(c, tiles, {{VOp::Add, &t.add}, {VOp::Add, &t.add}});
        for (std::int64_t j = 0; j < tiles; ++j) {
            const std::vector<VVal> xs = c.load_in();
            for (int h = 0; h < c.k; ++h) {
                red.add(0, h, j, xs[h]);
                red.add(1, h, j, c.b.op(VOp::Mul, xs[h], xs[h]));
            }
        }
        const auto sq = red.finish();
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

}  // namespace

void lower_layernorm(Ctx& c) { lower_norm(c, false); }
void lower_rmsnorm(Ctx& c) { lower_norm(c, true); }

// dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy gamma, xhat = (x - mean) rstd, with
// the per-row mean and rstd saved by the forward pass (one f32 per row each; JAX and PyTorch
// keep them as residuals). Pass 1 computes the two row reductions and, per column,
// dgamma += dy xhat and dbeta += dy into f32 partial-sum tiles in VMEM (read-modify-write
// per row group; their final fold over the 8 sublanes happens once per op and is left out).
// Pass 2 re-reads dy and x (cheaper than keeping g and xhat in VMEM: 2 loads against 2 loads
// and 2 stores).
void lower_layernorm_grad(Ctx& c) {
    const std::int64_t tiles = c.tiles;
    const VpuOpTable& t = c.vpu.ops;
    VVal inv_n = c.b.konst();
    std::vector<VVal> mean(c.k), rstd(c.k);
    for (int h = 0; h < c.k; ++h) {
        mean[h] = c.load_row_scalar();
        rstd[h] = c.load_row_scalar();
    }
    auto xhat = [&](VVal x, int h) {
        return c.b.op(VOp::Mul, c.b.op(VOp::Sub, x, mean[h]), rstd[h]);
    };
    RowReducer red(c, tiles, {{VOp::Add, &t.add}, {VOp::Add, &t.add}});
    for (std::int64_t j = 0; j < tiles; ++j) {
        VVal gamma = c.load_row();
        const std::vector<VVal> dy = c.load_in(), x = c.load_in();
        VVal dgamma = c.b.load(c.vreg_bytes), dbeta = c.b.load(c.vreg_bytes);
        for (int h = 0; h < c.k; ++h) {
            VVal xh = xhat(x[h], h);
            VVal g = c.b.op(VOp::Mul, dy[h], gamma);
            red.add(0, h, j, g);
            red.add(1, h, j, c.b.op(VOp::Mul, g, xh));
            dgamma = c.fma(dy[h], xh, dgamma);
            dbeta = c.b.op(VOp::Add, dbeta, dy[h]);
        }
        c.b.store(dgamma, c.vreg_bytes);
        c.b.store(dbeta, c.vreg_bytes);
    }
    const auto s = red.finish();
    std::vector<VVal> mg(c.k), mgx(c.k);
    for (int h = 0; h < c.k; ++h) {
        mg[h] = c.b.op(VOp::Mul, s[0][h], inv_n);
        mgx[h] = c.b.op(VOp::Mul, s[1][h], inv_n);
    }
    for (std::int64_t j = 0; j < tiles; ++j) {
        VVal gamma = c.load_row();
        const std::vector<VVal> dy = c.load_in(), x = c.load_in();
        std::vector<VVal> dx;
        for (int h = 0; h < c.k; ++h) {
            VVal g = c.b.op(VOp::Sub, c.b.op(VOp::Mul, dy[h], gamma), mg[h]);
            VVal d = c.b.op(VOp::Sub, g, c.b.op(VOp::Mul, xhat(x[h], h), mgx[h]));
            dx.push_back(c.b.op(VOp::Mul, d, rstd[h]));
        }
        c.store_out(dx);
    }
}

// Softmax as XLA emits jax.nn.softmax: three kernels over the row. The first reduces the
// max; the second computes e = exp(x - max), stores it and sums it along the row (XLA does not
// recompute e in its two users, the sum and the quotient: exp is one of instruction fusion's
// expensive ops, never duplicated, xla/service/instruction_fusion.cc; the sum is a
// producer-consumer multi-output fusion of e's kernel, as the HLO path's producer-fusion pass
// forms it); the third reads e back and divides it by the broadcast row sum (HLO:
// divide(e, broadcast(sum))), which XLA expands to the EUP's approximate reciprocal refined by
// one Newton-Raphson step, r (2 - s r), times the dividend (as lower_div). e is stored in the
// wider of the input's and the result's types (bf16 scores with an f32 result: XLA converts x
// and computes e in f32). The program layer charges the kernels' HBM passes (statistics_pass, which
// also writes e); their VPU work is all in this body.
void lower_softmax(Ctx& c) {
    const std::int64_t tiles = c.tiles;
    const VpuOpTable& t = c.vpu.ops;
    VVal two = c.b.konst();
    RowReducer maxes(c, tiles, {{VOp::Max, &t.max}});
    for (std::int64_t j = 0; j < tiles; ++j) {
        const std::vector<VVal> xs = c.load_in();
        for (int h = 0; h < c.k; ++h) maxes.add(0, h, j, xs[h]);
    }
    const std::vector<VVal> m = maxes.finish()[0];
    const std::int64_t e_bytes = std::max(c.in_bytes, c.out_bytes);
    RowReducer sums(c, tiles, {{VOp::Add, &t.add}});
    for (std::int64_t j = 0; j < tiles; ++j) {
        const std::vector<VVal> xs = c.load_in();
        std::vector<VVal> es;
        for (int h = 0; h < c.k; ++h) {
            es.push_back(c.b.op(VOp::Exp, c.b.op(VOp::Sub, xs[h], m[h])));
            sums.add(0, h, j, es.back());
        }
        c.store(es, e_bytes);
    }
    const std::vector<VVal> s = sums.finish()[0];
    for (std::int64_t j = 0; j < tiles; ++j) {
        const std::vector<VVal> es = c.load(e_bytes);
        std::vector<VVal> ys;
        for (int h = 0; h < c.k; ++h) {
            VVal r = c.b.op(VOp::Recip, s[h]);
            VVal n = c.b.op(VOp::Sub, two, c.b.op(VOp::Mul, s[h], r));
            ys.push_back(c.b.op(VOp::Mul, es[h], c.b.op(VOp::Mul, r, n)));
        }
        c.store_out(ys);
    }
}

// dx = y (dy - sum(dy y)) along the row: one pass for the dot product, one that re-reads dy
// and y for the elementwise term.
void lower_softmax_grad(Ctx& c) {
    const std::int64_t tiles = c.tiles;
    RowReducer dots(c, tiles, {{VOp::Add, &c.vpu.ops.add}});
    for (std::int64_t j = 0; j < tiles; ++j) {
        const std::vector<VVal> dy = c.load_in(), y = c.load_in();
        for (int h = 0; h < c.k; ++h) dots.add(0, h, j, c.b.op(VOp::Mul, dy[h], y[h]));
    }
    const std::vector<VVal> dot = dots.finish()[0];
    for (std::int64_t j = 0; j < tiles; ++j) {
        const std::vector<VVal> dy = c.load_in(), y = c.load_in();
        std::vector<VVal> dx;
        for (int h = 0; h < c.k; ++h) {
            dx.push_back(c.b.op(VOp::Mul, y[h], c.b.op(VOp::Sub, dy[h], dot[h])));
        }
        c.store_out(dx);
    }
}

namespace {

void lower_reduce(Ctx& c, bool is_max) {
    const std::int64_t tiles = c.tiles;
    const VpuOpTable& t = c.vpu.ops;
    RowReducer red(c, tiles, {{is_max ? VOp::Max : VOp::Add, is_max ? &t.max : &t.add}});
    for (std::int64_t j = 0; j < tiles; ++j) {
        const std::vector<VVal> xs = c.load_in();
        for (int h = 0; h < c.k; ++h) red.add(0, h, j, xs[h]);
    }
    // One value per row: a masked store of one lane per sublane.
    const std::vector<VVal> sums = red.finish()[0];
    for (VVal v : sums) {
        if (c.out_bytes == 2) v = c.b.op(VOp::Cvt, v);
        c.b.store(v, static_cast<std::uint32_t>(c.vpu.sublanes * c.out_bytes));
    }
}

}  // namespace

void lower_reduce_sum(Ctx& c) { lower_reduce(c, false); }
void lower_reduce_max(Ctx& c) { lower_reduce(c, true); }

}  // namespace tpusim
