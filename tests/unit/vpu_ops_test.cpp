// Coverage of the trace format's vector ops by the VPU lowering: every op the trace reader
// accepts is lowered, with the input and output streams the trace table declares.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>

#include "tpusim/arch/vpu/vector_cost.h"
#include "tpusim/program/vector_lowering.h"
#include "tpusim/trace/trace.h"

using namespace tpusim;

namespace {

std::vector<VectorOp> all_trace_vector_ops() {
    std::vector<VectorOp> ops;
    for (int i = 0; i <= static_cast<int>(VectorOp::Lamb); ++i) ops.push_back(VectorOp(i));
    return ops;
}

// Loads and stores of one iteration's body by size class.
struct Streams {
    int tile_loads = 0, tile_stores = 0;  // whole f32 vregs (4 KiB)
    int row_loads = 0, row_stores = 0;    // one 128-lane f32 row (512 B)
    int other = 0;                        // anything else (per-row scalars)
};

Streams count_streams(const VectorLoop& l, const VpuConfig& vpu) {
    const auto tile = static_cast<std::uint32_t>(vpu.elements_per_vreg() * 4);
    const auto row = static_cast<std::uint32_t>(vpu.lanes * 4);
    Streams s;
    for (const VInstr& in : l.body) {
        if (in.op != VOp::Load && in.op != VOp::Store) continue;
        const bool ld = in.op == VOp::Load;
        if (in.bytes == tile) {
            ++(ld ? s.tile_loads : s.tile_stores);
        } else if (in.bytes == row) {
            ++(ld ? s.row_loads : s.row_stores);
        } else {
            ++s.other;
        }
    }
    return s;
}

}  // namespace

TEST_CASE("every vector op of the trace format is lowered", "[vpu][lowering]") {
    const VpuConfig vpu;
    const VmemConfig vmem;
    const auto ops = all_trace_vector_ops();
    // Same set both ways: nothing lowered that a trace cannot name (the saved-mask forms of
    // dropout and dropout_grad are those ops with "mask": "saved").
    CHECK(ops.size() + 2 == vector_op_forms().size());
    for (VectorOp op : ops) {
        const VectorOpInfo& info = vector_op_info(op);
        INFO(info.name);
        CHECK(vector_op_forms()[static_cast<std::size_t>(op)].op == op);
        CHECK(vector_op_name(op, false) == info.name);
        // Ops whose lowered body depends on cols are row-wise in the trace's sense too.
        if (is_row_vector_op(op)) CHECK(info.row_wise);
        for (std::int64_t bytes : {4, 2}) {
            const VectorOpDesc d{op, false, 64, 256, bytes, bytes};
            VectorOpCost c;
            REQUIRE_NOTHROW(c = vector_op_cost(d, vpu, vmem));
            CHECK(c.cycles > 0);
            CHECK(c.vmem_bytes_loaded > 0);
            CHECK(c.vmem_bytes_stored > 0);
        }
    }
}

TEST_CASE("lowered ops read and write the streams of the trace table", "[vpu][lowering]") {
    const VpuConfig vpu;
    // 64 x 256 f32: row ops see T = 2 tile columns per row group.
    const int T = 2;
    const int rows_per_tile = static_cast<int>(vpu.sublanes);
    for (VectorOp op : all_trace_vector_ops()) {
        const VectorOpInfo& info = vector_op_info(op);
        INFO(info.name);
        const Streams s = count_streams(lower_vector_loop({op, false, 64, 256, 4, 4}, vpu), vpu);
        const int in = info.inputs, out = info.outputs;
        switch (op) {
            case VectorOp::BiasAdd:  // plus the bias's 128-lane row
                CHECK((s.tile_loads == in && s.row_loads == 1 && s.tile_stores == out));
                break;
            case VectorOp::Batchnorm:  // two passes over x; scale and shift rows
                CHECK((s.tile_loads == 2 * in && s.row_loads == 2 && s.tile_stores == out));
                break;
            case VectorOp::BatchnormGrad:  // two passes over dy, x; mean, rstd, a, c1, c0
                CHECK((s.tile_loads == 2 * in && s.row_loads == 5 && s.tile_stores == out));
                break;
            case VectorOp::Gather:  // the tile's rows, one table row each
                CHECK((s.tile_loads == 0 && s.row_loads == in * rows_per_tile &&
                       s.tile_stores == out));
                break;
            case VectorOp::ScatterAdd:  // updates; table rows read and written row by row
                CHECK((s.tile_loads == in && s.row_loads == rows_per_tile &&
                       s.row_stores == out * rows_per_tile && s.tile_stores == 0));
                break;
            case VectorOp::Softmax:
                // XLA's three kernels: x twice (max; exp-sum, which stores e = exp(x - max)),
                // then e once (quotient)
                CHECK((s.tile_loads == 3 * in * T && s.tile_stores == 2 * out * T));
                break;
            case VectorOp::SoftmaxGrad:  // dy and y twice (dot pass, elementwise pass)
                CHECK((s.tile_loads == 2 * in * T && s.tile_stores == out * T));
                break;
            case VectorOp::Layernorm:  // x twice; gamma, beta rows in the second pass
                CHECK((s.tile_loads == 2 * in * T && s.row_loads == 2 * T &&
                       s.tile_stores == out * T));
                break;
            case VectorOp::LayernormGrad:
                // dy, x twice; gamma row in both passes; dgamma, dbeta partial-sum tiles
                // read and written once per tile column; per-row mean and rstd.
                CHECK((s.tile_loads == (2 * in + 2) * T && s.row_loads == 2 * T &&
                       s.tile_stores == (out + 2) * T && s.other == 2));
                break;
            case VectorOp::Rmsnorm:
                CHECK((s.tile_loads == 2 * in * T && s.row_loads == T && s.tile_stores == out * T));
                break;
            case VectorOp::ReduceSum:
            case VectorOp::ReduceMax:  // one value per row: a masked store
                CHECK((s.tile_loads == in * T && s.tile_stores == 0 && s.other == out));
                break;
            default:  // elementwise: one full tile per stream
                CHECK((s.tile_loads == in && s.tile_stores == out && s.row_loads == 0 &&
                       s.row_stores == 0 && s.other == 0));
        }
    }
}

TEST_CASE("new ops: fast path equals the full simulation under another config", "[vpu][lowering]") {
    VpuConfig vpu;
    vpu.valu_slots = 1;
    vpu.has_fma = true;
    vpu.ops.reciprocal = {3, 11};
    VmemConfig vmem;
    vmem.load_bytes_per_cycle = 1024;
    for (VectorOp op :
         {VectorOp::Div, VectorOp::Sqrt, VectorOp::GeluGrad, VectorOp::SoftmaxGrad,
          VectorOp::LayernormGrad, VectorOp::Batchnorm, VectorOp::BatchnormGrad, VectorOp::Gather,
          VectorOp::ScatterAdd, VectorOp::SgdMomentum, VectorOp::DropoutGrad, VectorOp::Lamb}) {
        for (auto [in, out] : {std::pair<int, int>{4, 4}, {2, 4}, {4, 2}}) {
            const VectorOpDesc d{op, false, 520, 384, in, out};
            INFO(vector_op_info(op).name << " " << in << "->" << out);
            const VectorOpCost a = simulate_vector_op(d, vpu, vmem);
            const VectorOpCost b = vector_op_cost(d, vpu, vmem);
            CHECK(a.cycles == b.cycles);
            CHECK(a.instructions == b.instructions);
            CHECK(a.busy_cycles == b.busy_cycles);
            CHECK(a.vmem_bytes_loaded == b.vmem_bytes_loaded);
            CHECK(a.vmem_bytes_stored == b.vmem_bytes_stored);
        }
    }
}

TEST_CASE("gather is bound by its row-addressed loads", "[vpu][lowering]") {
    const VpuConfig vpu;
    const VmemConfig vmem;
    const std::int64_t tiles = 4096;
    const VectorOpCost c =
        vector_op_cost({VectorOp::Gather, false, 8 * tiles, 128, 4, 4}, vpu, vmem);
    // Per 8 x 128 f32 tile: one load per row (sublane), each holding the vld port for
    // ceil(512 B / port width) cycles; everything else (one 4 KiB store) fits beside them.
    const std::int64_t port = ceil_div(vpu.lanes * 4, vmem.load_bytes_per_cycle);
    const double bound = double(vpu.sublanes * port) / double(vpu.vld_slots);
    const double per_tile = double(c.cycles) / double(tiles);
    CHECK(per_tile >= bound);
    CHECK(per_tile <= bound * 1.02);
    CHECK(c.vmem_bytes_loaded == Bytes(tiles * vpu.elements_per_vreg() * 4));
    CHECK(c.busy_cycles[static_cast<std::size_t>(VUnit::Valu)] == 0);
}

TEST_CASE("batchnorm reduces down the rows on the VALU, not the cross-lane unit",
          "[vpu][lowering]") {
    const VpuConfig vpu;
    const VmemConfig vmem;
    REQUIRE_FALSE(vpu.has_fma);
    const std::int64_t rows = 8 * 1024, cols = 512;  // 4096 f32 tiles
    const std::int64_t tiles = rows / vpu.sublanes * cols / vpu.lanes;
    const VectorOpCost c =
        vector_op_cost({VectorOp::Batchnorm, false, rows, cols, 4, 4}, vpu, vmem);
    CHECK(c.busy_cycles[static_cast<std::size_t>(VUnit::Xlu)] == 0);
    // Per tile: sum += x, x * x, sumsq += x^2; then x * scale + shift (mul, add); plus the
    // two accumulator splats in the prologue.
    const auto& o = vpu.ops;
    const std::int64_t valu = 3 * o.add.issue_interval_cycles + 2 * o.mul.issue_interval_cycles;
    CHECK(c.busy_cycles[static_cast<std::size_t>(VUnit::Valu)] ==
          std::uint64_t(tiles * valu + 2 * o.cmp_select.issue_interval_cycles));
    // Loads per tile: x twice and the scale and shift rows, one port cycle each.
    const double vld = 4.0 / double(vpu.vld_slots);
    const double bound = std::max(vld, double(valu) / double(vpu.valu_slots));
    const double per_tile = double(c.cycles) / double(tiles);
    CHECK(per_tile >= bound);
    CHECK(per_tile <= bound * 1.05);
}

TEST_CASE("div takes one EUP reciprocal per vreg", "[vpu][lowering]") {
    const VpuConfig vpu;
    const VmemConfig vmem;
    for (std::int64_t bytes : {4, 2}) {
        const std::int64_t rows = 4096, cols = 1024;
        const VectorOpCost c =
            vector_op_cost({VectorOp::Div, false, rows, cols, bytes, bytes}, vpu, vmem);
        const std::int64_t vregs = rows * cols / vpu.elements_per_vreg();
        CHECK(c.busy_cycles[static_cast<std::size_t>(VUnit::Eup)] ==
              std::uint64_t(vregs * vpu.ops.reciprocal.issue_interval_cycles));
    }
}

TEST_CASE("softmax_grad does one cross-lane reduction per row group", "[vpu][lowering]") {
    const VpuConfig vpu;
    const VmemConfig vmem;
    const std::int64_t rows = 512, cols = 1024;
    const VectorOpCost c =
        vector_op_cost({VectorOp::SoftmaxGrad, false, rows, cols, 4, 4}, vpu, vmem);
    // Per 8-row group: one reduce and one broadcast of dot(dy, y).
    const std::int64_t groups = rows / vpu.sublanes;
    CHECK(c.busy_cycles[static_cast<std::size_t>(VUnit::Xlu)] ==
          std::uint64_t(groups * (vpu.xlu.reduce.issue_interval_cycles +
                                  vpu.xlu.broadcast.issue_interval_cycles)));
    // dy and y are read twice, dx written once.
    CHECK(c.vmem_bytes_loaded == Bytes(2 * 2 * rows * cols * 4));
    CHECK(c.vmem_bytes_stored == Bytes(rows * cols * 4));
}

TEST_CASE("softmax is XLA's three kernels: one exp, stored, and a divide per element",
          "[vpu][lowering]") {
    const VpuConfig vpu;
    const VmemConfig vmem;
    const std::int64_t rows = 512, cols = 1024;
    const VectorOpCost c = vector_op_cost({VectorOp::Softmax, false, rows, cols, 4, 4}, vpu, vmem);
    const auto& o = vpu.ops;
    const std::int64_t vregs = rows * cols / vpu.elements_per_vreg();
    const std::int64_t groups = rows / vpu.sublanes;
    // exp(x - max) once, in the sum kernel (XLA does not duplicate an expensive op into its
    // two users); the quotient's f32 divide takes one EUP reciprocal per vreg.
    CHECK(
        c.busy_cycles[static_cast<std::size_t>(VUnit::Eup)] ==
        std::uint64_t(vregs * (o.exp.issue_interval_cycles + o.reciprocal.issue_interval_cycles)));
    // Per 8-row group: a 128-lane reduction of each sublane and a lane broadcast, for the max
    // and for the sum.
    CHECK(c.busy_cycles[static_cast<std::size_t>(VUnit::Xlu)] ==
          std::uint64_t(
              groups * 2 *
              (vpu.xlu.reduce.issue_interval_cycles + vpu.xlu.broadcast.issue_interval_cycles)));
    // x read by the max and the exp-sum kernels, e = exp(x - max) stored by the second and
    // read by the quotient kernel, y written once.
    CHECK(c.vmem_bytes_loaded == Bytes(3 * rows * cols * 4));
    CHECK(c.vmem_bytes_stored == Bytes(2 * rows * cols * 4));
}
