// The lowering context and the row reduction helper shared by the per-op lowerings.
#include "vector_lower_ctx.h"

#include <algorithm>

namespace tpusim {

Ctx::Ctx(const VpuConfig& v, const VectorOpDesc& d)
    : vpu(v),
      k(d.in_bytes == 2 || d.out_bytes == 2 ? 2 : 1),
      in_bytes(d.in_bytes),
      out_bytes(d.out_bytes),
      vreg_bytes(static_cast<std::uint32_t>(v.sublanes * v.lanes * 4)),
      tiles(static_cast<std::int64_t>(ceil_div(d.cols, v.lanes))),
      saved_mask(d.saved_mask) {}

std::vector<VVal> Ctx::load(std::int64_t bytes) {
    std::vector<VVal> xs;
    if (bytes == 4) {
        for (int h = 0; h < k; ++h) xs.push_back(b.load(vreg_bytes));
    } else {
        VVal p = b.load(vreg_bytes);
        xs.push_back(b.op(VOp::Cvt, p));
        xs.push_back(b.op(VOp::Cvt, p));
    }
    return xs;
}

void Ctx::store(const std::vector<VVal>& ys, std::int64_t bytes) {
    if (bytes == 4) {
        for (VVal y : ys) b.store(y, vreg_bytes);
    } else {
        b.store(b.op(VOp::Cvt, ys[0], ys[1]), vreg_bytes);
    }
}

VVal Ctx::fma(VVal a, VVal x, VVal c) {
    if (vpu.has_fma) return b.op(VOp::Fma, a, x, c);
    return b.op(VOp::Add, b.op(VOp::Mul, a, x), c);
}

VVal Ctx::load_row() { return b.load(static_cast<std::uint32_t>(vpu.lanes * 4)); }

VVal Ctx::load_row_scalar() {
    return b.op(VOp::Broadcast, b.load(static_cast<std::uint32_t>(vpu.sublanes * 4)));
}

void lower_elementwise(Ctx& c, int n_in, int n_out, const std::function<Args(Ctx&, Args)>& f) {
    std::vector<std::vector<VVal>> ins;
    for (int i = 0; i < n_in; ++i) ins.push_back(c.load_in());
    std::vector<std::vector<VVal>> ys(static_cast<std::size_t>(n_out));
    for (int h = 0; h < c.k; ++h) {
        Args args;
        for (const auto& in : ins) args.push_back(in[h]);
        const Args r = f(c, args);
        for (std::size_t o = 0; o < ys.size(); ++o) ys[o].push_back(r.at(o));
    }
    for (const auto& y : ys) c.store_out(y);
}

namespace {
// Enough independent partial accumulators to cover the accumulate op's latency at its issue
// interval (at most 8, at most one per tile column).
std::size_t partial_accumulators(const VpuOpTiming& t, std::int64_t tiles) {
    const std::int64_t a = std::max<std::int64_t>(1, t.latency_cycles / t.issue_interval_cycles);
    return static_cast<std::size_t>(std::min<std::int64_t>({a, tiles, 8}));
}
}  // namespace

RowReducer::RowReducer(Ctx& c, std::int64_t tiles, std::vector<Red> reds)
    : c_(c),
      tiles_(tiles),
      reds_(std::move(reds)),
      acc_(reds_.size(), std::vector<std::vector<VVal>>(static_cast<std::size_t>(c.k))) {}

void RowReducer::add(std::size_t r, int h, std::int64_t j, VVal v) {
    const auto slot = static_cast<std::size_t>(j) % partial_accumulators(*reds_[r].timing, tiles_);
    auto& a = acc_[r][static_cast<std::size_t>(h)];
    if (a.size() <= slot) {
        a.push_back(v);  // the first values seed the accumulators
    } else {
        a[slot] = c_.b.op(reds_[r].op, a[slot], v);
    }
}

std::vector<std::vector<VVal>> RowReducer::finish() {
    std::vector<std::vector<VVal>> out(reds_.size());
    for (std::size_t r = 0; r < reds_.size(); ++r) {
        for (std::vector<VVal> p : acc_[r]) {
            while (p.size() > 1) {
                std::vector<VVal> n;
                for (std::size_t i = 0; i + 1 < p.size(); i += 2) {
                    n.push_back(c_.b.op(reds_[r].op, p[i], p[i + 1]));
                }
                if (p.size() % 2) n.push_back(p.back());
                p = n;
            }
            out[r].push_back(c_.b.op(VOp::Broadcast, c_.b.op(VOp::Reduce, p[0])));
        }
    }
    return out;
}

}  // namespace tpusim
