// The import's kernels as XLA's TPU pipeline forms them (docs/hlo.md, "Passes"): a fused
// kernel is a graph (a second chain's value stays in registers), a kernel takes its operand
// from the tiles of the kernel that stores it (producer-consumer multi-output fusion), and a
// 2-D convolution reads its input once (conv2d) instead of streaming its im2col matrix.
#include <catch2/catch.hpp>

#include "hlo_test_util.h"

using namespace tpusim;
using namespace tpusim::test;

namespace {

std::size_t index_of(const Trace& t, const std::string& id) {
    for (std::size_t i = 0; i < t.ops.size(); ++i)
        if (t.ops[i].id == id) return i;
    FAIL("no op " << id);
    return 0;
}

// Bytes written to HBM by the trace: every result that is not kept on chip.
std::int64_t written(const Trace& t) {
    const auto kept = results_kept_on_chip(t);
    std::int64_t b = 0;
    for (std::size_t i = 0; i < t.ops.size(); ++i)
        if (!kept[i]) b += op_bytes_out(t.ops[i]);
    return b;
}

}  // namespace

TEST_CASE("HLO fusion pass: a kernel's second chain stays in registers", "[hlo]") {
    // m = exp(x) * -y is one kernel (both producers have m as their only user). m runs on
    // the tiles of one producer (-y); exp(x) is the kernel's other chain: in XLA's kernel its
    // value never leaves the registers, so only m's result (2 MiB) is written.
    const std::string text = R"(HloModule m
ENTRY e {
  x = f32[1024,512]{1,0} parameter(0)
  y = f32[1024,512]{1,0} parameter(1)
  a = f32[1024,512]{1,0} exponential(x)
  b = f32[1024,512]{1,0} negate(y)
  ROOT m = f32[1024,512]{1,0} multiply(a, b)
})";
    const std::int64_t array = 1024 * 512 * 4;
    const Trace t = import(text);
    const TraceOp& m = op_named(t, "m");
    CHECK(m.fused);
    REQUIRE(m.deps.size() == 1);
    CHECK(t.ops[m.deps[0]].id == "b");
    CHECK(op_named(t, "a").result_in_vmem);
    CHECK(written(t) == array);

    // Without the pass the second chain goes through HBM: exp(x) is written and m waits for it.
    HloImportOptions chains;
    chains.kernel_graphs = false;
    const Trace u = import(text, 8, chains);
    const TraceOp& um = op_named(u, "m");
    CHECK_FALSE(op_named(u, "a").result_in_vmem);
    // (a is one of m's HBM operands, deps[1]: the lowering writes it and m reads it back.)
    const auto a_dep = std::find(um.deps.begin(), um.deps.end(), index_of(u, "a"));
    REQUIRE(a_dep != um.deps.end());
    CHECK(a_dep != um.deps.begin());
}

TEST_CASE("HLO fusion pass: a kernel takes its operand from the kernel that stores it", "[hlo]") {
    // d feeds two kernels (sum(exp(d)) and -d), so it is stored. The first of them runs on
    // d's tiles (XLA's multi-output fusion of a producer with one of its users: the reduction
    // reads nothing from HBM); the second reads d back. d is written once either way.
    const std::string text = R"(HloModule m
add {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT s = f32[] add(p, q)
}
ENTRY e {
  x = f32[1024,512]{1,0} parameter(0)
  w = f32[512,512]{1,0} parameter(1)
  z = f32[] constant(0)
  d = f32[1024,512]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e1 = f32[1024,512]{1,0} exponential(d)
  r = f32[1024]{0} reduce(e1, z), dimensions={1}, to_apply=add
  n = f32[1024,512]{1,0} negate(d)
  ROOT t = (f32[1024]{0}, f32[1024,512]{1,0}) tuple(r, n)
})";
    HloImportStats st;
    const Trace t = hlo_to_trace(parse_hlo(text, "t.hlo"), HloImportOptions{}, 8, &st);
    const std::size_t d = index_of(t, "d");
    const TraceOp& e1 = op_named(t, "e1");
    CHECK(e1.fused);
    REQUIRE_FALSE(e1.deps.empty());
    CHECK(e1.deps[0] == d);
    const TraceOp& n = op_named(t, "n");
    CHECK_FALSE(n.fused);  // d's tiles go to one fused consumer
    CHECK(std::find(n.deps.begin(), n.deps.end(), d) != n.deps.end());
    CHECK_FALSE(results_kept_on_chip(t)[d]);  // still stored for n
    CHECK(st.producer_fusions == 1);

    HloImportOptions off;
    off.producer_fusion = false;
    HloImportStats st_off;
    const Trace u = hlo_to_trace(parse_hlo(text, "t.hlo"), off, 8, &st_off);
    CHECK_FALSE(op_named(u, "e1").fused);
    CHECK(st_off.producer_fusions == 0);
    // The HBM bytes the fused kernel no longer reads: d, once.
    CHECK(op_hbm_bytes_in(op_named(u, "e1")) - op_hbm_bytes_in(e1) == 1024 * 512 * 4);
}

TEST_CASE("HLO convolution: dilated or disabled, a convolution stays its implicit GEMM", "[hlo]") {
    // The input gradient of a stride-2 convolution dilates its input (lhs_dilate): its taps
    // do not slide over the array in HBM, so it stays the implicit GEMM, as does any
    // convolution with --hlo-passes without direct-convolutions.
    const std::string text = R"(HloModule m
ENTRY e {
  x = bf16[8,56,56,64]{3,2,1,0} parameter(0)
  w = bf16[3,3,64,128]{3,2,1,0} parameter(1)
  c = bf16[8,28,28,128]{3,2,1,0} convolution(x, w), window={size=3x3 stride=2x2 pad=0_1x0_1}, dim_labels=b01f_01io->b01f
  g = bf16[8,28,28,128]{3,2,1,0} parameter(2)
  wt = bf16[3,3,128,64]{3,2,1,0} parameter(3)
  ROOT dx = bf16[8,56,56,64]{3,2,1,0} convolution(g, wt), window={size=3x3 pad=1_2x1_2 lhs_dilate=2x2}, dim_labels=b01f_01io->b01f
})";
    const Trace t = import(text);
    CHECK(op_named(t, "c").kind == OpKind::Conv2d);
    const TraceOp& dx = op_named(t, "dx");
    REQUIRE(dx.kind == OpKind::Matmul);
    CHECK(dx.matmul.m == 8 * 56 * 56);
    CHECK(dx.matmul.k == 3 * 3 * 128);

    HloImportOptions gemm;
    gemm.direct_convolutions = false;
    const Trace u = import(text, 8, gemm);
    const TraceOp& c = op_named(u, "c");
    REQUIRE(c.kind == OpKind::Matmul);
    CHECK(c.matmul.m == 8 * 28 * 28);
    CHECK(c.matmul.k == 3 * 3 * 64);
    CHECK(c.matmul.n == 128);
    CHECK(op_flops(c) == op_flops(op_named(t, "c")));
    // The conv2d reads its input once; the implicit GEMM streams its 3x3 / 4 (stride 2)
    // windows of it.
    CHECK(op_hbm_bytes_in(op_named(t, "c")) < op_hbm_bytes_in(c));
}
