// Matmul lowering: tiles sized to VMEM, weight tiles split between the core's MXUs, operand
// DMAs issued one pipeline step ahead of the MXU work (double buffering).
#include <fmt/format.h>

#include <algorithm>

#include "op_lowerings.h"
#include "tpusim/common/error.h"

namespace tpusim {

namespace {

// One DMA of a convolution's LHS tile from its NHWC input.
struct WindowLoad {
    std::int64_t rows = 0;
    Bytes row_bytes = 0, hbm_stride = 0, hbm_offset = 0;
    Bytes bytes() const { return static_cast<Bytes>(rows) * row_bytes; }
};

// XLA's TPU convolutions never materialise im2col: the input window stays in VMEM and the MXU
// is fed one shifted view of it per filter tap. So the LHS tile of output pixels [m0, m0 + tm)
// and filter taps x channels [k0, k0 + tk) (K is ordered (dy, dx, channel)) moves the input
// rows those pixels' windows cover, once, instead of kh * kw im2col copies of them: a 3x3
// stride-1 convolution reads its input ~1x, not 9x. Whole input rows of the taps' channels;
// `batch_rows` (images x h) bounds the rows.
WindowLoad conv_window_load(const OpSpec::ConvWindow& c, std::int64_t batch_rows, std::int64_t m0,
                            std::int64_t tm, std::int64_t k0, std::int64_t tk, std::int64_t e) {
    const std::int64_t r0 = m0 / c.out_w, r1 = (m0 + tm - 1) / c.out_w;  // output rows
    const std::int64_t out_rows = r1 - r0 + 1;
    const std::int64_t t0 = k0 / c.c, t1 = (k0 + tk - 1) / c.c;  // filter taps
    const std::int64_t dy_span = t1 / c.kw - t0 / c.kw + 1;
    const bool one_tap = t0 == t1;
    const std::int64_t ch = one_tap ? tk : c.c, ch0 = one_tap ? k0 % c.c : 0;
    const std::int64_t images = r1 / c.out_h - r0 / c.out_h + 1;
    const std::int64_t rows = std::min(
        {(out_rows - 1) * c.stride_h + dy_span, out_rows * dy_span, images * c.h, batch_rows});
    const std::int64_t first = std::min(
        (r0 / c.out_h) * c.h + std::min(c.h - 1, (r0 % c.out_h) * c.stride_h), batch_rows - rows);
    const Bytes pixel = static_cast<Bytes>(c.c * e);
    WindowLoad l;
    l.hbm_offset = static_cast<Bytes>(first * c.w) * pixel + static_cast<Bytes>(ch0 * e);
    if (ch == c.c) {  // whole pixels: the rows are contiguous
        l.rows = rows;
        l.row_bytes = l.hbm_stride = static_cast<Bytes>(c.w) * pixel;
    } else {
        l.rows = rows * c.w;
        l.row_bytes = static_cast<Bytes>(ch * e);
        l.hbm_stride = pixel;
    }
    return l;
}

}  // namespace

void MatmulLowering::lower(std::size_t i) {
    const OpSpec& op = c_.op(i);
    const std::int64_t R = c_.cfg().mxu.rows, C = c_.cfg().mxu.cols, X = c_.cfg().core.mxus;
    // Element sizes of the operands in HBM and VMEM (an f32 operand of a bf16 matmul moves 4
    // bytes per element: XLA's convert fused into the dot).
    const std::int64_t ea = op.lhs_bytes, eb = op.rhs_bytes;
    const auto cap = static_cast<double>(c_.vmem().capacity());
    auto consumer = c_.inline_consumer(i);
    const bool whole_rows = consumer && c_.op(*consumer).rowwise;

    // Tile sizes: as large as two pipeline stages of A, B and the f32 accumulator (plus the
    // fused consumer's buffers) allow; K and N tiles are multiples of the array.
    std::int64_t tm = std::min<std::int64_t>(op.m, c_.cfg().lowering.matmul_max_tile_m);
    std::int64_t tk = std::min<std::int64_t>(
        static_cast<std::int64_t>(round_up(op.k, R)),
        static_cast<std::int64_t>(round_up(c_.cfg().lowering.matmul_max_tile_k, R)));
    std::int64_t tn = static_cast<std::int64_t>(round_up(op.n, C));
    if (!whole_rows) {
        tn = std::min<std::int64_t>(
            tn, static_cast<std::int64_t>(round_up(c_.cfg().lowering.matmul_max_tile_n, C)));
    }
    auto footprint = [&] {
        const double acc = static_cast<double>(tm * tn) * 4.0;
        const double cons = consumer ? static_cast<double>(tm * tn) * (4.0 + 4.0) : 0.0;
        return 2.0 * static_cast<double>(tm * tk * ea) + 2.0 * static_cast<double>(tk * tn * eb) +
               2.0 * acc + cons;
    };
    // Halved when the op's buffers did not fit beside the ones it holds (lower_ops).
    const double budget = cap * c_.cfg().lowering.matmul_vmem_fraction * 2.0 /
                          static_cast<double>(std::int64_t{1} << op.vmem_halvings);
    while (footprint() > budget) {
        if (tk > 4 * R) {
            tk = static_cast<std::int64_t>(round_up(static_cast<Bytes>(tk / 2), R));
        } else if (tm > 256) {
            tm /= 2;
        } else if (!whole_rows && tn > 2 * C) {
            tn = static_cast<std::int64_t>(round_up(static_cast<Bytes>(tn / 2), C));
        } else if (tk > R) {
            tk = static_cast<std::int64_t>(round_up(static_cast<Bytes>(tk / 2), R));
        } else if (tm > 8) {
            tm = std::max<std::int64_t>(8, tm / 2);
        } else if (!whole_rows && tn > C) {
            tn = C;
        } else {
            throw InputError(
                c_.trace_name(), fmt::format("op \"{}\"", op.id),
                fmt::format("its smallest tiles ({} x {} x {}) need {:.2f} MiB of "
                            "VMEM; the core has {} MiB",
                            tm, tk, tn, footprint() / kMiB, c_.cfg().vmem.capacity_mib));
        }
    }
    const std::int64_t nm = static_cast<std::int64_t>(ceil_div(op.m, tm));
    const std::int64_t nk = static_cast<std::int64_t>(ceil_div(op.k, tk));
    const std::int64_t nn = static_cast<std::int64_t>(ceil_div(op.n, tn));
    const bool conv = op.conv.kh > 0;
    const std::int64_t conv_rows = conv ? op.m / (op.conv.out_h * op.conv.out_w) * op.conv.h : 0;
    const HbmSrc lhs_buf =
        c_.operand(i, 0,
                   conv ? static_cast<Bytes>(conv_rows * op.conv.w * op.conv.c * ea)
                        : static_cast<Bytes>(op.batch * op.m * op.k * ea));
    const HbmSrc rhs_buf = c_.operand(i, 1, static_cast<Bytes>(op.batch * op.k * op.n * eb));
    const Addr lhs = lhs_buf.addr, rhs = rhs_buf.addr;
    const Bytes lhs_view = conv ? static_cast<Bytes>(conv_rows * op.conv.w * op.conv.c * ea)
                                : static_cast<Bytes>(op.batch * op.m * op.k * ea);
    Waits deps = c_.dep_waits(op);  // only waits: the steps drop the covered ones
    // Operands XLA placed in VMEM (S(1)) must fit there whole.
    const Bytes lhs_bytes = static_cast<Bytes>(op.batch * op.m * op.k * ea);
    const Bytes rhs_bytes = static_cast<Bytes>(op.batch * op.k * op.n * eb);
    const Bytes resident = (op.lhs_in_vmem ? lhs_bytes : 0) + (op.rhs_in_vmem ? rhs_bytes : 0);
    if (static_cast<double>(resident) > cap)
        throw InputError(
            c_.trace_name(), fmt::format("op \"{}\"", op.id),
            fmt::format("its VMEM-resident operands (vmem_operands) take {:.2f} MiB; "
                        "the core has {} MiB of VMEM",
                        static_cast<double>(resident) / kMiB, c_.cfg().vmem.capacity_mib));
    // Which operand is stationary in the array. With M no wider than the array, a weight tile
    // of B would stream only M rows per swap, and a swap costs about rows + cols + Lw cycles
    // (docs/mxu.md), so the array would idle most of the time; XLA then keeps the LHS tile
    // stationary and streams B's columns (C^T = B^T A^T). Measured on a TPU v3 core
    // (validation/measured/matmul_TPUv3_k12288.csv): M = 64 and 128 take the same time,
    // about 2.2x less than 383 cycles per 128 x 128 weight tile, while M = 256 takes
    // 381 cycles per tile, i.e. B stationary (docs/program.md).
    const bool lhs_stationary = op.m <= C && op.n > op.m;
    const auto u32 = static_cast<std::uint32_t>(i);

    // State carried between pipeline steps of one op.
    LoweringContext::Buffer acc{0, 0};
    LoweringContext::Buffer bbuf{0, 0};
    std::uint32_t b_load = 0;
    Waits acc_waits;

    // PipelineStep s is tile (b, jn, jm, jk), K innermost, then M, N and the batch.
    const auto make = [&](std::size_t s_index) {
        auto rest = static_cast<std::int64_t>(s_index);
        const std::int64_t jk = rest % nk;
        rest /= nk;
        const std::int64_t jm = rest % nm;
        rest /= nm;
        const std::int64_t jn = rest % nn;
        const std::int64_t b = rest / nn;
        const std::int64_t tm_e = std::min(tm, op.m - jm * tm);
        const std::int64_t tk_e = std::min(tk, op.k - jk * tk);
        const std::int64_t tn_e = std::min(tn, op.n - jn * tn);
        const bool reuse_b = nk == 1 && jm > 0;  // weights stay resident across M
        PipelineStep st;
        st.load = [=, &op, &deps, &bbuf, &b_load](PipelineStep& s) {
            Bytes a_bytes = static_cast<Bytes>(tm_e * tk_e * ea);
            WindowLoad win;
            if (conv) {
                win = conv_window_load(op.conv, conv_rows, jm * tm, tm_e, jk * tk, tk_e, ea);
                if (win.bytes() < a_bytes) a_bytes = win.bytes();
            }
            const bool windowed = conv && win.bytes() == a_bytes;
            c_.drop_covered(deps);
            Waits w = deps;
            LoweringContext::Buffer a = c_.alloc(a_bytes, false, w, i);
            Instr ld;
            ld.unit = Unit::Dma;
            ld.op = u32;
            ld.waits = w;
            // LHS tile (jm, jk) of batch b: rows b*m + jm*tm of the m x k matrices, or for a
            // convolution the input rows its window covers (rows of win.row_bytes bytes,
            // win.hbm_stride apart).
            ld.dma() =
                windowed
                    ? dma_block(DmaDescriptor::Dir::HbmToVmem,
                                {lhs + win.hbm_offset, static_cast<std::int64_t>(win.hbm_stride), 0,
                                 0, win.rows, static_cast<std::int64_t>(win.row_bytes), 1},
                                a.addr)
                    : dma_block(DmaDescriptor::Dir::HbmToVmem,
                                {lhs, op.k, b * op.m + jm * tm, jk * tk, tm_e, tk_e,
                                 static_cast<Bytes>(ea)},
                                a.addr);
            if (!windowed && lhs_view > lhs_buf.size) {
                // An LHS larger than the buffer that holds it is an implicit GEMM's im2col
                // matrix (a convolution imported as a matmul: k = taps x channels), which is
                // not in HBM: its tile is gathered from the input, so it is read from inside
                // the input, at its offset scaled by the input's share of the view (its first
                // pixel), as one block where its rows spread wider than the input.
                DmaDescriptor& d = ld.dma();
                const Bytes scale = (lhs_view + lhs_buf.size - 1) / lhs_buf.size;
                if (d.hbm_extent() - d.hbm_addr > lhs_buf.size) d.hbm_stride = d.row_bytes;
                const Bytes span = d.hbm_extent() - d.hbm_addr;
                const Bytes room = lhs_buf.size - std::min(lhs_buf.size, span);
                d.hbm_addr = lhs + std::min<Bytes>((d.hbm_addr - lhs) / scale, room);
            }
            if (op.lhs_in_vmem) {  // resident in VMEM (S(1)): no DMA, ready after its deps
                s.loaded.insert(s.loaded.end(), w.begin(), w.end());
            } else {
                c_.wrap_block(ld.dma(), lhs_buf);
                const std::uint32_t a_id = c_.emit(ld);
                c_.vmem().use(a.addr, a_id);
                s.loaded.push_back(a_id);
                c_.count_hbm(i, ld.dma().bytes());
            }
            if (!reuse_b) {
                const Bytes b_bytes = static_cast<Bytes>(tk_e * tn_e * eb);
                Waits wb = deps;
                bbuf = c_.alloc(b_bytes, nk == 1, wb, i);
                Instr lb = ld;
                lb.waits = wb;
                lb.dma() = dma_block(
                    DmaDescriptor::Dir::HbmToVmem,
                    {rhs, op.n, b * op.k + jk * tk, jn * tn, tk_e, tn_e, static_cast<Bytes>(eb)},
                    bbuf.addr);
                if (op.rhs_in_vmem) {
                    s.loaded.insert(s.loaded.end(), wb.begin(), wb.end());
                } else {
                    c_.wrap_block(lb.dma(), rhs_buf);
                    b_load = c_.emit(lb);
                    c_.vmem().use(bbuf.addr, b_load);
                    c_.count_hbm(i, lb.dma().bytes());
                }
            }
            if (!op.rhs_in_vmem) s.loaded.push_back(b_load);
            s.buffers = {a.addr, bbuf.addr};
            s.weights = bbuf.addr;
        };
        st.compute = [=, &op, &acc, &acc_waits](PipelineStep& s) {
            if (jk == 0) {
                acc_waits.clear();
                acc = c_.alloc(static_cast<Bytes>(tm_e * tn_e * 4), true, acc_waits, i);
            }
            if (lhs_stationary) {
                // XLA's choice for a thin LHS: its tm_e x tk_e tile is the
                // stationary operand (one array width) and the weights' tn_e
                // columns stream through, split between the MXUs; same MACs,
                // ceil(tk_e / R) passes of tn_e / X rows instead of one
                // weight-tile swap per R x C block of B.
                const std::int64_t share = (tn_e + X - 1) / X;
                for (int pass = 0; pass < op.mxu_passes; ++pass) {
                    for (std::int64_t x = 0; x < X && x * share < tn_e; ++x) {
                        Instr mm;
                        mm.unit = Unit::Mxu;
                        mm.op = u32;
                        mm.waits = s.loaded;
                        if (jk == 0) append_waits(mm.waits, acc_waits);
                        mm.mm() = {x, std::min(share, tn_e - x * share), tk_e, tm_e};
                        const std::uint32_t id = c_.emit(std::move(mm));
                        for (Addr a : s.buffers) c_.vmem().use(a, id);
                        c_.vmem().use(acc.addr, id);
                        s.computed.push_back(id);
                    }
                }
                s.acc = acc.addr;
                if (nk == 1 && jm == nm - 1) c_.vmem().unpin(s.weights);  // as below
                return;
            }
            // An f32 dot at high or highest precision runs op.mxu_passes bf16 products of the
            // operands' split parts into the same accumulator (precision_passes).
            const auto issue = [&](std::int64_t x, std::int64_t rows, std::int64_t cols) {
                for (int pass = 0; pass < op.mxu_passes; ++pass) {
                    Instr mm;
                    mm.unit = Unit::Mxu;
                    mm.op = u32;
                    mm.waits = s.loaded;
                    if (jk == 0) append_waits(mm.waits, acc_waits);
                    mm.mm() = {x, rows, tk_e, cols};
                    const std::uint32_t id = c_.emit(std::move(mm));
                    for (Addr a : s.buffers) c_.vmem().use(a, id);
                    c_.vmem().use(acc.addr, id);
                    s.computed.push_back(id);
                }
            };
            // Column groups of C go round-robin to the MXUs.
            const std::int64_t groups = static_cast<std::int64_t>(ceil_div(tn_e, C));
            if (groups < X) {
                // Fewer column groups than MXUs (N = 64 or 128 on a v3 core's two arrays):
                // each group's weight tile is loaded into X / groups MXUs, which stream
                // disjoint row ranges of the A tile, so every array works instead of one
                // idling. Same MACs; each MXU pays its own weight load (docs/program.md).
                const std::int64_t split = X / groups;
                const std::int64_t share = (tm_e + split - 1) / split;
                for (std::int64_t g = 0; g < groups; ++g) {
                    for (std::int64_t r = 0; r < split && r * share < tm_e; ++r) {
                        issue(g * split + r, std::min(share, tm_e - r * share),
                              std::min(C, tn_e - g * C));
                    }
                }
            } else {
                for (std::int64_t x = 0; x < X && x < groups; ++x) {
                    std::int64_t cols = 0;
                    for (std::int64_t g = x; g < groups; g += X) {
                        cols += std::min(C, tn_e - g * C);
                    }
                    issue(x, tm_e, cols);
                }
            }
            s.acc = acc.addr;
            // The last M tile's passes are the resident weights' last users: the tile may be
            // overwritten once they are done (the ring makes a later buffer wait for them), so
            // it is unpinned now rather than when the step finishes. Held one step longer, the
            // weights of three steps stay pinned beside two accumulators and fragment VMEM.
            if (nk == 1 && jm == nm - 1) c_.vmem().unpin(s.weights);
        };
        if (jk == nk - 1) {
            st.finish = [=, &op](PipelineStep& s) {
                c_.sink(i, TileRef{s.acc, b * op.m + jm * tm, jn * tn, tm_e, tn_e, op.n,
                                   consumer ? 4 : op.out_bytes, s.computed});
                c_.vmem().unpin(s.acc);
            };
        }
        return st;
    };
    c_.run_pipeline(static_cast<std::size_t>(op.batch * nn * nm * nk), make);
}

}  // namespace tpusim
