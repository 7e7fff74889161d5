// Ops whose loop iterates over 8 x 128 tiles but whose data is organised by column or by
// row address: batch norm (statistics per column), embedding gather / scatter_add, and the
// optimizer updates with several state streams. docs/vpu.md tabulates them.
#include "vector_lower_ctx.h"

namespace tpusim {

// Batch norm: statistics per column (channel) over the rows (batch x pixels). A column's sum
// runs down the rows, i.e. across row groups: each tile adds its 8 (16) rows elementwise into
// per-column-tile partial-sum vregs on the VALU (no cross-lane work; the lanes are the
// channels). The accumulators are loop-carried; the compiler keeps several partials per column
// tile so that the add latency is hidden, which the model assumes by not chaining them
// (`acc` is a shared register that is read, never overwritten). Once per column tile (not per
// row group, so left out) the partials fold over the 8 sublanes and mean / rstd, and from them
// scale = gamma rstd and shift = beta - mean scale, are formed and kept as f32 rows in VMEM.
// Two passes over x: statistics, then y = x scale + shift.
void lower_batchnorm(Ctx& c) {
    VVal acc_sum = c.b.konst(), acc_sq = c.b.konst();
    const std::vector<VVal> x1 = c.load_in();
    for (int h = 0; h < c.k; ++h) {
        c.b.op(VOp::Add, acc_sum, x1[h]);
        c.b.op(VOp::Add, acc_sq, c.b.op(VOp::Mul, x1[h], x1[h]));
    }
    VVal scale = c.load_row(), shift = c.load_row();
    const std::vector<VVal> x2 = c.load_in();
    std::vector<VVal> ys;
    for (int h = 0; h < c.k; ++h) ys.push_back(c.fma(x2[h], scale, shift));
    c.store_out(ys);
}

// Batch norm backward with the per-column mean and rstd saved by the forward pass:
// dbeta = sum dy, dgamma = sum dy xhat (per column, accumulated as in lower_batchnorm), then
// dx = a dy - a dbeta / n - xhat a dgamma / n with a = gamma rstd, folded per column into
// dx = a dy + (x c1 + c0): c1 = -rstd a dgamma / n, c0 = mean rstd a dgamma / n - a dbeta / n
// (rows formed once per column tile). Two passes over dy and x.
void lower_batchnorm_grad(Ctx& c) {
    VVal acc_dbeta = c.b.konst(), acc_dgamma = c.b.konst();
    VVal mean = c.load_row(), rstd = c.load_row();
    const std::vector<VVal> dy1 = c.load_in(), x1 = c.load_in();
    for (int h = 0; h < c.k; ++h) {
        VVal xh = c.b.op(VOp::Mul, c.b.op(VOp::Sub, x1[h], mean), rstd);
        c.b.op(VOp::Add, acc_dbeta, dy1[h]);
        c.b.op(VOp::Add, acc_dgamma, c.b.op(VOp::Mul, dy1[h], xh));
    }
    VVal a = c.load_row(), c1 = c.load_row(), c0 = c.load_row();
    const std::vector<VVal> dy2 = c.load_in(), x2 = c.load_in();
    std::vector<VVal> dx;
    for (int h = 0; h < c.k; ++h) dx.push_back(c.fma(dy2[h], a, c.fma(x2[h], c1, c0)));
    c.store_out(dx);
}

namespace {

// The rows of one tile column in the layout of `bytes`-sized elements, each fetched by its own
// row-addressed vector load (a sublane-masked vld at the row's VMEM address: the rows come
// from arbitrary table rows), merged into the tile's vregs: f32, k vregs of `sublanes` rows;
// bf16, one packed vreg of 2 x sublanes rows. Returned as f32 halves when `as_f32`, else in
// the memory layout.
std::vector<VVal> load_rows(Ctx& c, std::int64_t bytes, bool as_f32) {
    const auto row_bytes = static_cast<std::uint32_t>(c.vpu.lanes * bytes);
    const std::int64_t vregs = bytes == 4 ? c.k : 1;
    const std::int64_t rows_per_vreg = c.vpu.sublanes * (4 / bytes);
    std::vector<VVal> vs;
    for (std::int64_t v = 0; v < vregs; ++v) {
        VVal r = c.b.load(row_bytes);
        for (std::int64_t i = 1; i < rows_per_vreg; ++i) r = c.b.load_into(row_bytes, r);
        vs.push_back(r);
    }
    if (!as_f32 || bytes == 4) return vs;
    return {c.b.op(VOp::Cvt, vs[0]), c.b.op(VOp::Cvt, vs[0])};
}

// The inverse: k f32 halves packed if `bytes` is 2, then one row-addressed store per row.
void store_rows(Ctx& c, std::vector<VVal> ys, std::int64_t bytes) {
    const auto row_bytes = static_cast<std::uint32_t>(c.vpu.lanes * bytes);
    if (bytes == 2) ys = {c.b.op(VOp::Cvt, ys[0], ys[1])};
    const std::int64_t rows_per_vreg = c.vpu.sublanes * (4 / bytes);
    for (VVal y : ys) {
        for (std::int64_t i = 0; i < rows_per_vreg; ++i) c.b.store(y, row_bytes);
    }
}

}  // namespace

// Embedding rows. gather: the tile's rows are read from the table one row at a time (the
// indices are scalars read by the scalar unit, not modelled here) and stored as one dense
// tile, converted if the dtypes differ. scatter_add: the updates tile is loaded densely, the
// addressed table rows (dtype out_bytes) are read row by row, added, and written back row by
// row; duplicate indices within a tile are assumed combined beforehand (XLA sorts them).
void lower_gather(Ctx& c) {
    if (c.in_bytes == c.out_bytes) {
        for (VVal v : load_rows(c, c.in_bytes, false)) c.b.store(v, c.vreg_bytes);
    } else {
        c.store_out(load_rows(c, c.in_bytes, true));
    }
}

void lower_scatter_add(Ctx& c) {
    const std::vector<VVal> u = c.load_in();
    const std::vector<VVal> t = load_rows(c, c.out_bytes, true);
    std::vector<VVal> ys;
    for (int h = 0; h < c.k; ++h) ys.push_back(c.b.op(VOp::Add, t[h], u[h]));
    store_rows(c, ys, c.out_bytes);
}

namespace {

// Adam's moments on f32 state, shared by adam and lamb: m' = b1 m + (1-b1) g;
// v' = b2 v + (1-b2) g^2; and the step direction m' / (sqrt(v') + eps), with sqrt(v) computed
// as v * rsqrt(v). The constants are splatted once, in the loop's prologue.
struct AdamMoments {
    VVal b1, omb1, b2, omb2, eps;
    explicit AdamMoments(Ctx& c)
        : b1(c.b.konst()),
          omb1(c.b.konst()),
          b2(c.b.konst()),
          omb2(c.b.konst()),
          eps(c.b.konst()) {}
    struct Half {
        VVal m, v, step;
    };
    Half operator()(Ctx& c, VVal g, VVal m, VVal v) const {
        VVal m1 = c.fma(g, omb1, c.b.op(VOp::Mul, m, b1));
        VVal g2 = c.b.op(VOp::Mul, g, g);
        VVal v1 = c.fma(g2, omb2, c.b.op(VOp::Mul, v, b2));
        VVal sq = c.b.op(VOp::Mul, v1, c.b.op(VOp::Rsqrt, v1));
        VVal r = c.b.op(VOp::Recip, c.b.op(VOp::Add, sq, eps));
        return {m1, v1, c.b.op(VOp::Mul, m1, r)};
    }
};

}  // namespace

// Adam on f32 state: the moments above, then p' = p - lr * m' / (sqrt(v') + eps), bias
// corrections folded into lr (a scalar).
void lower_adam(Ctx& c) {
    const AdamMoments moments(c);
    VVal neg_lr = c.b.konst();
    const std::vector<VVal> p = c.load_in(), g = c.load_in(), m = c.load_in(), v = c.load_in();
    std::vector<VVal> po, mo, vo;
    for (int h = 0; h < c.k; ++h) {
        const AdamMoments::Half a = moments(c, g[h], m[h], v[h]);
        po.push_back(c.fma(a.step, neg_lr, p[h]));
        mo.push_back(a.m);
        vo.push_back(a.v);
    }
    c.store_out(mo);
    c.store_out(vo);
    c.store_out(po);
}

// LAMB (You et al., "Large Batch Optimization for Deep Learning", 2019; the optimizer of the
// MLPerf BERT submissions), its first kernel. On f32 state: Adam's moments above, the update
// u = m' / (sqrt(v') + eps) + wd p, and the tensor's two squared norms sum p^2 and sum u^2
// accumulated lane-wise in vregs (one cross-lane reduction per op, not per tile). Outputs
// m', v', u. The parameter step p' = p - (lr ||p|| / ||u||) u needs both norms of the whole
// tensor, so it cannot join this pass: it is a second kernel over (p, u), the `sgd` op.
void lower_lamb(Ctx& c) {
    const AdamMoments moments(c);
    VVal wd = c.b.konst(), acc_p = c.b.konst(), acc_u = c.b.konst();
    const std::vector<VVal> p = c.load_in(), g = c.load_in(), m = c.load_in(), v = c.load_in();
    std::vector<VVal> mo, vo, uo;
    for (int h = 0; h < c.k; ++h) {
        const AdamMoments::Half a = moments(c, g[h], m[h], v[h]);
        VVal u = c.fma(p[h], wd, a.step);
        c.fma(p[h], p[h], acc_p);
        c.fma(u, u, acc_u);
        mo.push_back(a.m);
        vo.push_back(a.v);
        uo.push_back(u);
    }
    c.store_out(mo);
    c.store_out(vo);
    c.store_out(uo);
}

// SGD with momentum (PyTorch / optax form): m' = mu m + g; p' = p - lr m'. Inputs p, g, m;
// outputs p', m'.
void lower_sgd_momentum(Ctx& c) {
    VVal mu = c.b.konst(), neg_lr = c.b.konst();
    lower_elementwise(c, 3, 2, [=](Ctx& x, Args a) {
        VVal m1 = x.fma(a[2], mu, a[1]);
        return Args{x.fma(m1, neg_lr, a[0]), m1};
    });
}

}  // namespace tpusim
