// XLA HLO import (docs/hlo.md): the reader's grammar and located errors, and the trace ops
// that dot, convolution, fusions, while loops and collectives become. Expected sizes are
// derived from the shapes in each module.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "../test_util.h"
#include "hlo_test_util.h"
#include "tpusim/common/error.h"
#include "tpusim/config/tpu_config.h"
#include "tpusim/program/from_trace.h"
#include "tpusim/program/hbm_footprint.h"
#include "tpusim/trace/hlo.h"

using namespace tpusim;
using test::import;
using test::op_named;

namespace {

std::string error_of(const std::string& text, std::int64_t board_cores = 8) {
    try {
        import(text, board_cores);
    } catch (const InputError& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST_CASE("HLO dot: batch, contracting and free dimensions become a batched GEMM", "[hlo]") {
    // [4, 32, 64] x [4, 64, 16] contracting 64, batch 4: batch 4, m 32, k 64, n 16.
    const Trace t = import(R"(HloModule m
ENTRY e {
  a = bf16[4,32,64]{2,1,0} parameter(0)
  b = bf16[4,64,16]{2,1,0} parameter(1)
  ROOT d = f32[4,32,16]{2,1,0} dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
})");
    REQUIRE(t.ops.size() == 1);
    const TraceOp& d = t.ops[0];
    CHECK(d.id == "d");
    CHECK(d.kind == OpKind::Matmul);
    CHECK(d.matmul.batch == 4);
    CHECK(d.matmul.m == 32);
    CHECK(d.matmul.k == 64);
    CHECK(d.matmul.n == 16);
    CHECK_FALSE(d.matmul.transpose_lhs);
    CHECK(d.dtype == DType::Bf16);
    CHECK(d.out_dtype == DType::F32);
    CHECK(op_flops(d) == 2 * 4 * 32 * 64 * 16);
}

TEST_CASE("HLO convolution: the implicit GEMM, strided and depthwise", "[hlo]") {
    // NHWC 8x56x56x64 -> 8x28x28x128 with a 3x3 stride-2 kernel: m = 8*28*28, k = 3*3*64,
    // n = 128. Depthwise (feature_group_count 64, 3x3x1x64): per group k = 9, n = 1, packed
    // min(128/9, 128/1) -> the largest divisor of 64 that fits, 8 groups a pass.
    const Trace t = import(R"(HloModule m
ENTRY e {
  x = bf16[8,56,56,64]{3,2,1,0} parameter(0)
  w = bf16[3,3,64,128]{3,2,1,0} parameter(1)
  c = bf16[8,28,28,128]{3,2,1,0} convolution(x, w), window={size=3x3 stride=2x2 pad=0_1x0_1}, dim_labels=b01f_01io->b01f
  dw = bf16[3,3,1,64]{3,2,1,0} parameter(2)
  ROOT d = bf16[8,56,56,64]{3,2,1,0} convolution(x, dw), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=64
})");
    // The dense one runs as a conv2d (its input read once); its implicit GEMM is the same
    // matrix work.
    const TraceOp& c = op_named(t, "c");
    REQUIRE(c.kind == OpKind::Conv2d);
    CHECK(c.conv.batch == 8);
    CHECK(c.conv.h == 56);
    CHECK(c.conv.c_in == 64);
    CHECK(c.conv.c_out == 128);
    CHECK(c.conv.kh == 3);
    CHECK(c.conv.stride_h == 2);
    CHECK(c.conv.out_h() == 28);
    const MatmulShape cm = conv_as_matmul(c.conv);
    CHECK(cm.m == 8 * 28 * 28);
    CHECK(cm.k == 3 * 3 * 64);
    CHECK(cm.n == 128);
    CHECK(op_flops(c) == 2 * (8 * 28 * 28 * 128) * (3 * 3 * 64));
    const TraceOp& d = op_named(t, "d");
    CHECK(d.matmul.batch * d.matmul.n == 64);  // every group computed once
    CHECK(d.matmul.batch == 64 / 8);
    CHECK(d.matmul.k == 9);
    CHECK(op_flops(d) == 2 * (8 * 56 * 56 * 64) * 9);  // 2 x output elements x taps
}

TEST_CASE("HLO convolution: a depthwise weight gradient packs its batch groups on M", "[hlo]") {
    // MobileNetV2's form (PyTorch/XLA): x and dy are [batch 8, channels 64, 28, 28] read as
    // fb01 / io01, so the batch is the contraction and the 64 channels are batch groups with
    // one output feature each; the result is the 3x3 filter per channel. Per group the GEMM
    // is m = 1 x 3*3 = 9 output taps, k = 28*28 window x 8 = 6272, n = 1. The groups share
    // the contraction, so Q = 64 groups (the largest divisor of 64 with Q x n <= 128
    // columns) stream their 9 rows each through one weight tile: batch 1, m = 576, n = 1.
    const Trace t = import(R"(HloModule m
ENTRY e {
  x = f32[8,64,28,28]{3,2,1,0} parameter(0)
  dy = f32[8,64,28,28]{3,2,1,0} parameter(1)
  ROOT g = f32[3,3,1,64]{3,2,1,0} convolution(x, dy), window={size=28x28 pad=1_1x1_1}, dim_labels=fb01_io01->01bf, batch_group_count=64
})");
    const TraceOp& g = op_named(t, "g");
    CHECK(g.matmul.batch == 1);
    CHECK(g.matmul.m == 9 * 64);
    CHECK(g.matmul.k == 28 * 28 * 8);
    CHECK(g.matmul.n == 1);
    CHECK(op_flops(g) == 2 * (3 * 3 * 64) * (28 * 28 * 8));  // useful: 2 x output x window
}

TEST_CASE("HLO fusion: one group of ops, intermediates on chip", "[hlo]") {
    const Trace t = import(R"(HloModule m
f {
  p0 = f32[1024,512]{1,0} parameter(0)
  p1 = f32[1024,512]{1,0} parameter(1)
  e = f32[1024,512]{1,0} exponential(p0)
  ROOT a = f32[1024,512]{1,0} add(e, p1)
}
ENTRY e {
  x = f32[1024,512]{1,0} parameter(0)
  y = f32[1024,512]{1,0} parameter(1)
  ROOT r = f32[1024,512]{1,0} fusion(x, y), kind=kLoop, calls=f
})");
    REQUIRE(t.ops.size() == 2);
    CHECK(t.ops[0].id == "e");
    CHECK_FALSE(t.ops[0].fused);  // reads x from HBM
    CHECK(t.ops[1].id == "a");
    CHECK(t.ops[1].fused);  // e's result stays on chip; y is the one operand read from HBM
    CHECK(t.ops[1].vector.op == VectorOp::Add);
    CHECK(results_kept_on_chip(t)[0]);
}

TEST_CASE("HLO fusion: a value used twice inside a fusion stays on chip", "[hlo]") {
    // e = exp(p0) feeds n = -e and a = n + e, all in one fusion. n takes e's tiles (fused);
    // a is fused onto n, and its use of e is on chip too (XLA's kernel computes e, n and a
    // in one loop over the tiles), so e is not a dep of a and is never written to HBM. The
    // fusion moves p0 in once and a out once: 2 x 1024 x 512 x 4 bytes.
    const Trace t = import(R"(HloModule m
f {
  p0 = f32[1024,512]{1,0} parameter(0)
  e = f32[1024,512]{1,0} exponential(p0)
  n = f32[1024,512]{1,0} negate(e)
  ROOT a = f32[1024,512]{1,0} add(n, e)
}
ENTRY e {
  x = f32[1024,512]{1,0} parameter(0)
  ROOT r = f32[1024,512]{1,0} fusion(x), kind=kLoop, calls=f
})");
    REQUIRE(t.ops.size() == 3);
    const TraceOp& a = op_named(t, "a");
    CHECK(a.fused);
    REQUIRE(a.deps.size() == 1);
    CHECK(t.ops[a.deps[0]].id == "n");
    CHECK(a.vector.op == VectorOp::Scale);  // one stream: both operands on chip
    const auto kept = results_kept_on_chip(t);
    CHECK(kept[0]);        // e
    CHECK(kept[1]);        // n
    CHECK_FALSE(kept[2]);  // a: the fusion's result
    const std::int64_t bytes = 1024 * 512 * 4;
    std::int64_t hbm = 0;
    for (std::size_t i = 0; i < t.ops.size(); ++i)
        hbm += op_hbm_bytes_in(t.ops[i]) + (kept[i] ? 0 : op_bytes_out(t.ops[i]));
    CHECK(hbm == 2 * bytes);
}

TEST_CASE("HLO while: known_trip_count and the induction variable", "[hlo]") {
    const std::string body = R"(HloModule m
cond {
  p = (s32[], f32[128,128]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[128,128]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[128,128] get-tuple-element(p), index=1
  two = s32[] constant(2)
  j = s32[] add(i, two)
  y = f32[128,128] tanh(x)
  ROOT t = (s32[], f32[128,128]) tuple(j, y)
}
ENTRY e {
  z = s32[] constant(4)
  x = f32[128,128] parameter(0)
  s = (s32[], f32[128,128]) tuple(z, x)
  ROOT w = (s32[], f32[128,128]) while(s), condition=cond, body=body)";
    auto tanhs = [](const Trace& t) {
        int n = 0;
        for (const auto& op : t.ops)
            n += op.kind == OpKind::Vector && op.vector.op == VectorOp::Tanh;
        return n;
    };
    // From 4 below 10 by 2: trips 4, 6, 8 = 3. The body is one trace loop: its tanh once, run
    // 3 times, reading the previous trip's result (carried).
    Trace t = import(body + "\n}");
    CHECK(tanhs(t) == 1);
    REQUIRE(t.loops.size() == 1);
    CHECK(t.loops[0].id == "w");
    CHECK(t.loops[0].trips == 3);
    const TraceOp& y = op_named(t, "y");
    const std::size_t yi = static_cast<std::size_t>(&y - t.ops.data());
    CHECK(yi >= t.loops[0].first);
    CHECK(yi < t.loops[0].first + t.loops[0].count);
    CHECK(y.carried == std::vector<std::size_t>{yi});
    // Written out trip by trip (the import as it was, and unroll_loops): 3 tanhs, the last "y@2".
    HloImportOptions unroll;
    unroll.unroll_loops = true;
    const Trace u = import(body + "\n}", 8, unroll);
    CHECK(u.loops.empty());
    CHECK(tanhs(u) == 3);
    CHECK(u.ops.back().id == "y@2");
    const Trace v = unroll_loops(t);
    CHECK(tanhs(v) == 3);
    CHECK(v.ops.back().id == "y@2");
    CHECK(v.ops.back().deps == std::vector<std::size_t>{v.ops.size() - 3});  // y@1 (j@2 between)
    t = import(body + R"(, backend_config={"known_trip_count":{"n":"7"}}
})");
    CHECK(tanhs(t) == 1);
    REQUIRE(t.loops.size() == 1);
    CHECK(t.loops[0].trips == 7);
    CHECK(tanhs(unroll_loops(t)) == 7);
    // The forms XLA writes: a number as well as a string; older dumps quote the JSON; proto3
    // leaves out n = 0 (no trip: no tanh). A backend_config that does not name the count is
    // ignored, JSON or not (the induction variable decides: 3 trips).
    auto trips_with = [&](const std::string& config) {
        const Trace w = import(body + ", backend_config=" + config + "\n}");
        return std::pair{w.loops.empty() ? 0 : w.loops[0].trips, tanhs(w)};
    };
    CHECK(trips_with(R"({"known_trip_count":{"n":5}})") == std::pair<std::int64_t, int>{5, 1});
    CHECK(trips_with(R"("{\"known_trip_count\":{\"n\":\"6\"}}")") ==
          std::pair<std::int64_t, int>{6, 1});
    CHECK(trips_with(R"({"known_trip_count":{}})") == std::pair<std::int64_t, int>{0, 0});
    CHECK(trips_with(R"({sizes:[16]})") == std::pair<std::int64_t, int>{3, 1});
    CHECK(trips_with(R"({"other":{"n":"9"}})") == std::pair<std::int64_t, int>{3, 1});
    // Naming it without a readable count is a located error, not a count read from its digits
    // (the long fuzzing run found {"n"5444444:...} read as 5,444,444 trips).
    CHECK_THROWS_WITH(trips_with(R"({"known_trip_count":{"n"5444444:"8"}})"),
                      Catch::Contains("backend_config of while w names known_trip_count but is "
                                      "not a JSON object"));
    CHECK_THROWS_WITH(trips_with(R"({"known_trip_count":{"n":"1e3"}})"),
                      Catch::Contains("has known_trip_count n = \"1e3\", not a non-negative"));
    CHECK_THROWS_WITH(trips_with(R"({"known_trip_count":7})"),
                      Catch::Contains("names known_trip_count but it is not an object"));
}

TEST_CASE("HLO while: a million trips import as one body", "[hlo]") {
    // known_trip_count 1,000,000: the trace holds the body once (its ops, plus one loop), and
    // the import visits the body's instructions twice (the trip and the scratch trip that
    // finds the carried deps), not a million times.
    const std::string text = R"(HloModule m
cond {
  p = (s32[], f32[8,128]) parameter(0)
  ROOT b = pred[] constant(true)
}
body {
  p = (s32[], f32[8,128]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[8,128] get-tuple-element(p), index=1
  y = f32[8,128] tanh(x)
  ROOT t = (s32[], f32[8,128]) tuple(i, y)
}
ENTRY e {
  x = (s32[], f32[8,128]) parameter(0)
  ROOT w = (s32[], f32[8,128]) while(x), condition=cond, body=body, backend_config={"known_trip_count":{"n":"1000000"}}
})";
    HloImportStats st;
    const Trace t = hlo_to_trace(parse_hlo(text, "t.hlo"), HloImportOptions{}, 8, &st);
    REQUIRE(t.loops.size() == 1);
    CHECK(t.loops[0].trips == 1000000);
    CHECK(t.loops[0].count == 1);
    CHECK(t.ops.size() == 1);
    CHECK(st.while_trips == 1000000);
    CHECK(st.instructions <= 2 + 2 * 5);  // entry (2) + the body (5) twice
    CHECK(op_trips(t) == std::vector<std::int64_t>{1000000});
}

// The trip count the import finds for a while loop over (s32[] i, s32[] k, f32[8,128] x): the
// condition's instructions after p, the body's update j of i (i, k and x read, y = tanh(x)),
// the entry's a and b that start i and k. The count comes from the analysis (no --while-trips).
std::int64_t while_trips(const std::string& cond, const std::string& update,
                         const std::string& init, const std::string& counter = "s32") {
    std::string text = R"(HloModule m
cond {
  p = (s32[], s32[], f32[8,128]) parameter(0)
)" + cond + R"(
}
body {
  p = (s32[], s32[], f32[8,128]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  k = s32[] get-tuple-element(p), index=1
  x = f32[8,128] get-tuple-element(p), index=2
  y = f32[8,128] tanh(x)
)" + update + R"(
  ROOT t = (s32[], s32[], f32[8,128]) tuple(j, k, y)
}
ENTRY e {
  x = f32[8,128] parameter(0)
)" + init + R"(
  s = (s32[], s32[], f32[8,128]) tuple(a, b, x)
  ROOT w = (s32[], s32[], f32[8,128]) while(s), condition=cond, body=body
})";
    for (auto at = text.find("s32[]"); at != std::string::npos; at = text.find("s32[]", at + 1))
        text.replace(at, 3, counter);
    HloImportStats st;
    const Trace t = hlo_to_trace(parse_hlo(text, "t.hlo"), HloImportOptions{}, 8, &st);
    std::int64_t tanhs = 0;
    for (const auto& op : t.ops)
        tanhs += op.kind == OpKind::Vector && op.vector.op == VectorOp::Tanh;
    CHECK(tanhs == std::min<std::int64_t>(st.while_trips, 1));  // the body once, as a loop
    if (st.while_trips >= 2) CHECK((t.loops.size() == 1 && t.loops[0].trips == st.while_trips));
    return st.while_trips;
}

TEST_CASE("HLO while: the TPU fori_loop form counts its trips", "[hlo]") {
    // What jax.lax.fori_loop(0, 10, ...) becomes after XLA's TPU passes: the counter starts
    // from a copy of a constant, the body adds a constant sunk into it and passes the counter
    // through copies, the condition reads it as p#0 through a bitcast.
    const std::string text = R"(HloModule fori
%cond (p: (s32[], f32[8,128])) -> pred[] {
  %p = (s32[], f32[8,128]) parameter(0)
  %c = s32[] bitcast(%p#0)
  %n = s32[] constant(10)
  ROOT %lt = pred[] compare(%c, %n), direction=LT
}
%body (p: (s32[], f32[8,128])) -> (s32[], f32[8,128]) {
  %p = (s32[], f32[8,128]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %i.1 = s32[] copy(%i)
  %one = s32[] constant(1)
  %j = s32[] add(%i.1, %one)
  %x = f32[8,128] get-tuple-element(%p), index=1
  %y = f32[8,128] tanh(%x)
  %u = (s32[], f32[8,128]) tuple(%j, %y)
  %j.1 = s32[] get-tuple-element(%u), index=0
  %j.2 = s32[] copy(%j.1)
  ROOT %t = (s32[], f32[8,128]) tuple(%j.2, %y)
}
ENTRY %e (x: f32[8,128]) -> (s32[], f32[8,128]) {
  %x = f32[8,128] parameter(0)
  %z = s32[] constant(0)
  %z.1 = s32[] copy(%z)
  %s = (s32[], f32[8,128]) tuple(%z.1, %x)
  %s.1 = (s32[], f32[8,128]) copy(%s)
  ROOT %w = (s32[], f32[8,128]) while(%s.1), condition=%cond, body=%body
})";
    HloImportStats st;
    const Trace t = hlo_to_trace(parse_hlo(text, "t.hlo"), HloImportOptions{}, 8, &st);
    CHECK(st.while_trips == 10);
    REQUIRE(t.loops.size() == 1);
    CHECK(t.loops[0].trips == 10);
    // known_trip_count still decides when it is there.
    const std::string known = text.substr(0, text.size() - 2) +
                              R"(, backend_config={"known_trip_count":{"n":"4"}}
})";
    const Trace k = import(known);
    REQUIRE(k.loops.size() == 1);
    CHECK(k.loops[0].trips == 4);
}

TEST_CASE("HLO while: trip counts as XLA's while-loop analysis finds them", "[hlo]") {
    const std::string cmp_i = "  i = s32[] get-tuple-element(p), index=0\n";
    const std::string inc = "  one = s32[] constant(1)\n  j = s32[] add(i, one)";
    const std::string from0 = "  a = s32[] constant(0)\n  b = s32[] constant(0)";
    // GT with a counter that goes down by a subtract: 10, 9, ..., 1.
    CHECK(while_trips(
              cmp_i + "  n = s32[] constant(0)\n  ROOT c = pred[] compare(i, n), direction=GT",
              "  one = s32[] constant(1)\n  j = s32[] subtract(i, one)",
              "  a = s32[] constant(10)\n  b = s32[] constant(0)") == 10);
    // GE with the add of a negative step: 10, 7, 4, 1.
    CHECK(while_trips(
              cmp_i + "  n = s32[] constant(0)\n  ROOT c = pred[] compare(i, n), direction=GE",
              "  m = s32[] constant(-3)\n  j = s32[] add(m, i)",
              "  a = s32[] constant(10)\n  b = s32[] constant(0)") == 4);
    // LE by 2: 0, 2, 4, 6, 8 (the bound through a copy of a constant sunk into the condition).
    CHECK(while_trips(cmp_i + "  n0 = s32[] constant(9)\n  n = s32[] copy(n0)\n"
                              "  ROOT c = pred[] compare(i, n), direction=LE",
                      "  two = s32[] constant(2)\n  j = s32[] add(i, two)", from0) == 5);
    // NE by 3 from 0 to 12: 0, 3, 6, 9.
    CHECK(while_trips(
              cmp_i + "  n = s32[] constant(12)\n  ROOT c = pred[] compare(i, n), direction=NE",
              "  s = s32[] constant(3)\n  j = s32[] add(i, s)", from0) == 4);
    // The bound on the left, a tuple element the body passes on unchanged (k = 10): k > i.
    CHECK(while_trips(cmp_i + "  k = s32[] get-tuple-element(p), index=1\n"
                              "  ROOT c = pred[] compare(k, i), direction=GT",
                      inc, "  a = s32[] constant(0)\n  b = s32[] constant(10)") == 10);
    // The step a loop-invariant tuple element (k = 2): 0, 2, ..., 8 below 10.
    CHECK(while_trips(
              cmp_i + "  n = s32[] constant(10)\n  ROOT c = pred[] compare(i, n), direction=LT",
              "  j = s32[] add(k, i)", "  a = s32[] constant(0)\n  b = s32[] constant(2)") == 5);
    // The init through a convert and a copy: 3 up to 10.
    CHECK(while_trips(
              cmp_i + "  n = s32[] constant(10)\n  ROOT c = pred[] compare(i, n), direction=LT",
              inc,
              "  a0 = s64[] constant(3)\n  a1 = s32[] convert(a0)\n  a = s32[] copy(a1)\n"
              "  b = s32[] constant(0)") == 7);
    // False at the start: no trip, whichever way the counter goes (GT, counting up from 0;
    // EQ 5 from 0).
    CHECK(while_trips(
              cmp_i + "  n = s32[] constant(10)\n  ROOT c = pred[] compare(i, n), direction=GT",
              inc, from0) == 0);
    CHECK(while_trips(
              cmp_i + "  n = s32[] constant(5)\n  ROOT c = pred[] compare(i, n), direction=EQ", inc,
              from0) == 0);
}

TEST_CASE("HLO while: loops XLA cannot count still need --while-trips", "[hlo]") {
    const std::string cmp_i = "  i = s32[] get-tuple-element(p), index=0\n";
    const std::string lt10 =
        cmp_i + "  n = s32[] constant(10)\n  ROOT c = pred[] compare(i, n), direction=LT";
    const std::string inc = "  one = s32[] constant(1)\n  j = s32[] add(i, one)";
    const auto needs_trips =
        Catch::Matches(".*cannot find the trip count of while w .*: give --while-trips N");
    // The counter starts from an entry parameter.
    CHECK_THROWS_WITH(while_trips(lt10, inc, "  a = s32[] parameter(1)\n  b = s32[] constant(0)"),
                      needs_trips);
    // A data-dependent condition: the bound read from the loop's data.
    CHECK_THROWS_WITH(while_trips(cmp_i + "  x = f32[8,128] get-tuple-element(p), index=2\n"
                                          "  x1 = f32[1,1] slice(x), slice={[0:1], [0:1]}\n"
                                          "  x2 = f32[] reshape(x1)\n  n = s32[] convert(x2)\n"
                                          "  ROOT c = pred[] compare(i, n), direction=LT",
                                  inc, "  a = s32[] constant(0)\n  b = s32[] constant(0)"),
                      needs_trips);
    // NE that steps over its bound (0, 3, 6, 9, 12, ...), and a counter that goes the wrong
    // way (counts down below 10 until it wraps).
    CHECK_THROWS_WITH(
        while_trips(
            cmp_i + "  n = s32[] constant(10)\n  ROOT c = pred[] compare(i, n), direction=NE",
            "  s = s32[] constant(3)\n  j = s32[] add(i, s)",
            "  a = s32[] constant(0)\n  b = s32[] constant(0)"),
        needs_trips);
    CHECK_THROWS_WITH(while_trips(lt10, "  one = s32[] constant(1)\n  j = s32[] subtract(i, one)",
                                  "  a = s32[] constant(0)\n  b = s32[] constant(0)"),
                      needs_trips);
    // Overflow: i <= INT32_MAX holds for every s32 (the counter wraps), and an s64 count past
    // INT64_MAX is no count; one that fits but is absurd is rejected as more than 2^40 trips.
    CHECK_THROWS_WITH(while_trips(cmp_i + "  n = s32[] constant(2147483647)\n"
                                          "  ROOT c = pred[] compare(i, n), direction=LE",
                                  inc, "  a = s32[] constant(0)\n  b = s32[] constant(0)"),
                      needs_trips);
    const std::string lt_max = cmp_i +
                               "  n = s32[] constant(9223372036854775807)\n"
                               "  ROOT c = pred[] compare(i, n), direction=LT";
    CHECK_THROWS_WITH(while_trips(lt_max, inc,
                                  "  a = s32[] constant(-9223372036854775808)\n"
                                  "  b = s32[] constant(0)",
                                  "s64"),
                      needs_trips);
    const std::string lt_4e18 = cmp_i +
                                "  n = s32[] constant(4000000000000000000)\n"
                                "  ROOT c = pred[] compare(i, n), direction=LT";
    CHECK_THROWS_WITH(while_trips(lt_4e18, inc,
                                  "  a = s32[] constant(-4000000000000000000)\n"
                                  "  b = s32[] constant(0)",
                                  "s64"),
                      Catch::Contains("while w runs more than 2^40 trips"));
}

TEST_CASE("HLO collectives: iota replica groups and SPMD cores", "[hlo]") {
    // [2,4]<=[4,2]T(1,0): iota 0..7 as 4x2, transposed to 2x4: {0,2,4,6}, {1,3,5,7}.
    const Trace t = import(R"(HloModule m, num_partitions=8
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  x = bf16[1024]{0} parameter(0)
  ROOT r = bf16[1024]{0} all-reduce(x), replica_groups=[2,4]<=[4,2]T(1,0), to_apply=add
})");
    CHECK(t.cores == 8);
    REQUIRE(t.ops.size() == 1);
    CHECK(t.ops[0].kind == OpKind::AllReduce);
    CHECK(t.ops[0].bytes == 1024 * 2);
    REQUIRE(t.ops[0].replica_groups.size() == 2);
    CHECK(t.ops[0].replica_groups[0] == std::vector<int>{0, 2, 4, 6});
    CHECK(t.ops[0].replica_groups[1] == std::vector<int>{1, 3, 5, 7});
    CHECK(error_of("HloModule m, num_partitions=16\nENTRY e {\n ROOT x = f32[] parameter(0)\n}", 8)
              .find("program for 16 devices") != std::string::npos);
}

TEST_CASE("HLO reader: layouts, tuples, comments, no header", "[hlo]") {
    const HloModule m = parse_hlo(R"(/* no HloModule line */
c {
  p = (f32[8,128]{1,0:T(8,128)S(1)}, /*index=1*/ (s32[], bf16[2]{0})) parameter(0) // a tuple
  ROOT g = f32[8,128]{1,0:T(8,128)S(1)} get-tuple-element(p), index=0
}
)",
                                  "t.hlo");
    REQUIRE(m.computations.size() == 1);
    CHECK(m.entry == 0);
    const HloShape& s = m.computations[0].instrs[0].shape;
    REQUIRE(s.tuple);
    REQUIRE(s.elements.size() == 2);
    CHECK(s.elements[0].memory_space == 1);
    CHECK(s.elements[0].minor_to_major == std::vector<std::int64_t>{1, 0});
    CHECK(s.elements[1].elements[1].type.name == "bf16");
    CHECK(s.bytes() == 8 * 128 * 4 + 4 + 2 * 2);
}

TEST_CASE("HLO reader: errors are located file:line:column", "[hlo]") {
    CHECK(
        error_of(
            "HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT y = f32[4] negate(q)\n}") ==
        "t.hlo:4:26: unknown operand q (not defined earlier in computation e)");
    CHECK(error_of("ENTRY e {\n  x = f32[4] parameter(0)\n") ==
          "t.hlo:1:7: computation e is not closed: missing '}' before the end of the file");
    CHECK(error_of("ENTRY e {\n  x = f99[4] parameter(0)\n}")
              .rfind("t.hlo:2:7: expected a shape", 0) == 0);
}

TEST_CASE("HLO tile padding: the layout that pads least, unless the TPU compiler chose it",
          "[hlo]") {
    // f32[96,320,7,7] (MobileNetV2's last feature map, NCHW as PyTorch/XLA writes it).
    auto cols_of = [](const std::string& layout) {
        const Trace t = import("HloModule m\nENTRY e {\n  x = f32[96,320,7,7]{" + layout +
                               "} parameter(0)\n  ROOT y = f32[96,320,7,7]{" + layout +
                               "} exponential(x)\n}\n");
        REQUIRE(t.ops.size() == 1);
        CHECK(t.ops[0].vector.rows == 1);
        return t.ops[0].vector.cols;
    };
    // XLA's default layout: the TPU lays the tensor out to pad least. Candidates (minor to
    // 128, second minor to 8): 320 -> 384 with 96 second: 96*384*7*7 = 1806336; 96 -> 128
    // with 320 second: 128*320*49 = 2007040; 7 -> 128 minor: at least 96*320*128*7 = 27525120.
    CHECK(cols_of("3,2,1,0") == 96 * 384 * 7 * 7);
    // A tiled layout is the TPU compiler's: padded as written, 7 -> 128 (minor), 7 -> 8.
    CHECK(cols_of("3,2,1,0:T(8,128)") == 96 * 320 * 8 * 128);
    // Without the pass: the elements as they are.
    HloImportOptions none;
    none.tile_padding = false;
    const Trace raw = import(
        "HloModule m\nENTRY e {\n  x = f32[96,320,7,7]{3,2,1,0} parameter(0)\n"
        "  ROOT y = f32[96,320,7,7]{3,2,1,0} exponential(x)\n}\n",
        8, none);
    CHECK(raw.ops.at(0).vector.cols == 96 * 320 * 7 * 7);
}
