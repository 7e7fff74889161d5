#pragma once
// Shared pieces of the per-op lowerings (vector_lowering*.cpp): the lowering context that
// loads and stores tiles in the right layout, and the row reduction helper.
#include <cstdint>
#include <functional>
#include <vector>

#include "tpusim/program/vector_lowering.h"
#include "vector_body_builder.h"

namespace tpusim {

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
    std::int64_t tiles;  // tile columns of a row: ceil(cols / lanes)
    bool saved_mask;     // VectorOpDesc::saved_mask

    Ctx(const VpuConfig& v, const VectorOpDesc& d);

    // One full-size input stream's tile: k f32 vregs.
    std::vector<VVal> load_in() { return load(in_bytes); }
    // The same for a tile of `bytes`-byte elements (an intermediate of the op's own).
    std::vector<VVal> load(std::int64_t bytes);
    // One full-size output stream's tile from k f32 vregs.
    void store_out(const std::vector<VVal>& ys) { store(ys, out_bytes); }
    // The same for a tile of `bytes`-byte elements (an intermediate in the input's type).
    void store(const std::vector<VVal>& ys, std::int64_t bytes);
    // a * b + c: one fma where the VALU has one, else a multiply and an add.
    VVal fma(VVal a, VVal x, VVal c);
    // A row vector (bias, gamma, beta, per-column statistics: f32) loaded with sublane
    // broadcast: one lane row.
    VVal load_row();
    // One f32 value per row of half h (a saved per-row statistic): a load of one lane per
    // sublane, broadcast across the lanes on the XLU.
    VVal load_row_scalar();
};

using Args = std::vector<VVal>;

// Elementwise ops with `n_in` full-size operands of the input dtype; f maps the f32 values
// of one half to its results, one per output stream (`n_out` of them).
void lower_elementwise(Ctx& c, int n_in, int n_out, const std::function<Args(Ctx&, Args)>& f);

// Reductions along cols over the tile columns of one row group. Values are added per
// reduction r and half h; each reduction keeps `latency / interval` independent partial
// accumulators (so that a chain of dependent adds does not bound the loop), combines them
// pairwise in finish(), then the cross-lane unit reduces the 128 lanes and broadcasts each
// row's result across its sublane.
class RowReducer {
 public:
    struct Red {
        VOp op;
        const VpuOpTiming* timing;
    };
    RowReducer(Ctx& c, std::int64_t tiles, std::vector<Red> reds);
    // Accumulates v (tile column j, half h) into reduction r.
    void add(std::size_t r, int h, std::int64_t j, VVal v);
    // Result per [reduction][half]: every lane of a row holds that row's result.
    std::vector<std::vector<VVal>> finish();

 private:
    Ctx& c_;
    std::int64_t tiles_;
    std::vector<Red> reds_;
    std::vector<std::vector<std::vector<VVal>>> acc_;  // [r][h][partial]
};

// The expansions of the vector ops (VectorOpLowering::expand), by file. Row ops
// (vector_lowering_rows.cpp) iterate over c.tiles tile columns.
void lower_softmax(Ctx& c);
void lower_softmax_grad(Ctx& c);
void lower_layernorm(Ctx& c);
void lower_rmsnorm(Ctx& c);
void lower_layernorm_grad(Ctx& c);
void lower_reduce_sum(Ctx& c);
void lower_reduce_max(Ctx& c);

// Per-column statistics, embedding rows and optimizers (vector_lowering_cols.cpp).
void lower_batchnorm(Ctx& c);
void lower_batchnorm_grad(Ctx& c);
void lower_gather(Ctx& c);
void lower_scatter_add(Ctx& c);
void lower_adam(Ctx& c);
void lower_lamb(Ctx& c);
void lower_sgd_momentum(Ctx& c);

// Elementwise ops of more than one instruction: div, neg, abs, sqrt, scale, dropout and the
// activation gradients (vector_lowering_grad.cpp).
void lower_div(Ctx& c);
void lower_sign_bit(Ctx& c);  // neg, abs: one logic op with a sign mask
void lower_scale(Ctx& c);
void lower_sqrt(Ctx& c);
void lower_relu_grad(Ctx& c);
void lower_gelu_grad(Ctx& c);
void lower_tanh_grad(Ctx& c);
void lower_sigmoid_grad(Ctx& c);
void lower_dropout(Ctx& c);
void lower_dropout_grad(Ctx& c);

}  // namespace tpusim
