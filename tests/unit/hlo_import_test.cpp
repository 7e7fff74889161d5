// XLA HLO import (docs/hlo.md): the reader's grammar and located errors, and the trace ops
// that dot, convolution, fusions, while loops and collectives become. Expected sizes are
// derived from the shapes in each module.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "../test_util.h"
#include "tpusim/common/error.h"
#include "tpusim/config/tpu_config.h"
#include "tpusim/program/from_trace.h"
#include "tpusim/program/hbm_footprint.h"
#include "tpusim/trace/hlo.h"

using namespace tpusim;

namespace {

Trace import(const std::string& text, std::int64_t board_cores = 8,
             HloImportOptions opts = HloImportOptions{}) {
    return hlo_to_trace(parse_hlo(text, "t.hlo"), opts, board_cores);
}

std::string error_of(const std::string& text, std::int64_t board_cores = 8) {
    try {
        import(text, board_cores);
    } catch (const InputError& e) {
        return e.what();
    }
    return "no error";
}

const TraceOp& op_named(const Trace& t, const std::string& id) {
    for (const auto& op : t.ops)
        if (op.id == id) return op;
    FAIL("no op " << id);
    return t.ops.front();
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
    CHECK(d.dtype == DType::BF16);
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
    const TraceOp& c = op_named(t, "c");
    CHECK(c.matmul.m == 8 * 28 * 28);
    CHECK(c.matmul.k == 3 * 3 * 64);
    CHECK(c.matmul.n == 128);
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

TEST_CASE("HLO fusion pass: a cheap producer of several fusions is duplicated into each", "[hlo]") {
    // `p` feeds two reductions, which root two fusions. A convert is cheap: XLA's
    // instruction fusion duplicates it into both, so it runs twice and is never stored. An
    // exponential is expensive: it roots a fusion of its own whose result goes to HBM.
    auto module = [](const std::string& producer) {
        return "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
               "  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n"
               "  x = f32[1024,512]{1,0} parameter(0)\n  z = f32[] constant(0)\n"
               "  p = bf16[1024,512]{1,0} " +
               producer +
               "(x)\n"
               "  r1 = bf16[1024]{0} reduce(p, z), dimensions={1}, to_apply=add\n"
               "  m = bf16[1024,512]{1,0} multiply(p, p)\n"
               "  r2 = bf16[1024]{0} reduce(m, z), dimensions={1}, to_apply=add\n"
               "  ROOT t = (bf16[1024]{0}, bf16[1024]{0}) tuple(r1, r2)\n}\n";
    };
    const Trace cheap = import(module("convert"));
    std::vector<std::size_t> copies;
    for (std::size_t i = 0; i < cheap.ops.size(); ++i)
        if (cheap.ops[i].id.rfind("p", 0) == 0) copies.push_back(i);
    REQUIRE(copies.size() == 2);  // "p" and "p/2", one per fusion
    const auto kept = results_kept_on_chip(cheap);
    for (std::size_t i : copies) {
        CHECK(cheap.ops[i].vector.op == VectorOp::Convert);
        CHECK(kept[i]);  // consumed on chip by its fusion only
    }
    const Trace costly = import(module("exponential"));
    std::size_t exps = 0;
    for (std::size_t i = 0; i < costly.ops.size(); ++i) {
        if (costly.ops[i].id.rfind("p", 0) != 0) continue;
        ++exps;
        CHECK_FALSE(results_kept_on_chip(costly)[i]);  // stored for its two readers
    }
    CHECK(exps == 1);
}

TEST_CASE("HLO fusion pass: a producer is duplicated only where the copies move fewer bytes",
          "[hlo]") {
    // p = x + y (bf16) feeds `readers` reductions, each the root of its own fusion, and is fed
    // by a single-user negate q. k copies of p read 4 bytes per element each; storing p once
    // costs its 4-byte read, its 2-byte write and 2 bytes per reader: k * 4 <= 4 + 2 + 2k
    // holds up to k = 3. Where p is stored, q joins p's one fusion and runs once.
    auto module = [](int readers) {
        std::string m =
            "HloModule m\nadd {\n  a = bf16[] parameter(0)\n  b = bf16[] parameter(1)\n"
            "  ROOT s = bf16[] add(a, b)\n}\nENTRY e {\n"
            "  x = bf16[1024,512]{1,0} parameter(0)\n  y = bf16[1024,512]{1,0} parameter(1)\n"
            "  z = bf16[] constant(0)\n  q = bf16[1024,512]{1,0} negate(x)\n"
            "  p = bf16[1024,512]{1,0} add(q, y)\n";
        std::string types, names;
        for (int r = 0; r < readers; ++r) {
            const std::string name = "r" + std::to_string(r);
            m += "  " + name + " = bf16[1024]{0} reduce(p, z), dimensions={1}, to_apply=add\n";
            types += (r ? ", " : "") + std::string("bf16[1024]{0}");
            names += (r ? ", " : "") + name;
        }
        return m + "  ROOT t = (" + types + ") tuple(" + names + ")\n}\n";
    };
    auto copies_of = [](const Trace& t, const std::string& name) {
        std::size_t n = 0;
        for (const auto& op : t.ops)
            if (op.id == name || op.id.rfind(name + "/", 0) == 0) ++n;
        return n;
    };
    for (int readers : {2, 3}) {
        const Trace t = import(module(readers));
        CHECK(copies_of(t, "p") == static_cast<std::size_t>(readers));
        CHECK(copies_of(t, "q") == static_cast<std::size_t>(readers));
    }
    const Trace stored = import(module(4));
    REQUIRE(copies_of(stored, "p") == 1);
    CHECK(copies_of(stored, "q") == 1);
    std::size_t pi = 0;
    while (stored.ops[pi].id != "p") ++pi;
    CHECK_FALSE(results_kept_on_chip(stored)[pi]);  // written once, read by the four fusions
}

TEST_CASE("HLO fusions read each operand once; independent siblings share the read", "[hlo]") {
    const std::int64_t x_bytes = 1024 * 512 * 4;  // f32[1024,512]
    auto hbm_in = [](const Trace& t) {
        std::int64_t sum = 0;
        for (const auto& op : t.ops) sum += op_hbm_bytes_in(op);
        return sum;
    };
    const std::string head =
        "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n"
        "  x = f32[1024,512]{1,0} parameter(0)\n  z = f32[] constant(0)\n";
    // One fusion, x used by two of its ops: read once.
    const Trace once = import(head +
                              "  a = f32[1024,512]{1,0} exponential(x)\n"
                              "  ROOT b = f32[1024,512]{1,0} add(a, x)\n}\n");
    REQUIRE(once.ops.size() == 2);
    CHECK(hbm_in(once) == x_bytes);
    // sum(x) and sum(x * x): two reductions of x that do not depend on each other, one
    // multi-output kernel that reads x once; the second's ops read nothing from HBM.
    const Trace siblings = import(head +
                                  "  r1 = f32[1024]{0} reduce(x, z), dimensions={1}, to_apply=add\n"
                                  "  m = f32[1024,512]{1,0} multiply(x, x)\n"
                                  "  r2 = f32[1024]{0} reduce(m, z), dimensions={1}, to_apply=add\n"
                                  "  ROOT t = (f32[1024]{0}, f32[1024]{0}) tuple(r1, r2)\n}\n");
    CHECK(hbm_in(siblings) == x_bytes);
    CHECK(op_named(siblings, "m").vmem_operands == std::vector<int>{0});
    // The variance after the mean: the second reduction needs the first, so they are two
    // kernels and each reads x.
    const Trace dependent =
        import(head +
               "  r1 = f32[1024]{0} reduce(x, z), dimensions={1}, to_apply=add\n"
               "  b = f32[1024,512]{1,0} broadcast(r1), dimensions={0}\n"
               "  d = f32[1024,512]{1,0} subtract(x, b)\n"
               "  q = f32[1024,512]{1,0} multiply(d, d)\n"
               "  r2 = f32[1024]{0} reduce(q, z), dimensions={1}, to_apply=add\n"
               "  ROOT t = (f32[1024]{0}, f32[1024]{0}) tuple(r1, r2)\n}\n");
    CHECK(hbm_in(dependent) == 2 * x_bytes);  // r1 reaches d as a broadcast, made in registers
}

TEST_CASE("HLO fusion pass: a copy that keeps its operand's layout is removed", "[hlo]") {
    // XLA's algebraic simplifier drops a copy whose result has its operand's shape and
    // layout; one that changes the layout is a transpose and stays.
    auto ops_with = [](const std::string& layout) {
        return import(
                   "HloModule m\nENTRY e {\n  x = f32[1024,512]{1,0} parameter(0)\n"
                   "  c = f32[1024,512]{" +
                   layout +
                   "} copy(x)\n"
                   "  ROOT y = f32[1024,512]{1,0} exponential(c)\n}\n")
            .ops.size();
    };
    CHECK(ops_with("1,0") == 1);
    CHECK(ops_with("0,1") == 2);
    // A module XLA has optimised (it has fusions) keeps its copies as written.
    const Trace kept = import(
        "HloModule m\nf {\n  p = f32[8]{0} parameter(0)\n  ROOT n = f32[8]{0} negate(p)\n}\n"
        "ENTRY e {\n  x = f32[1024]{0} parameter(0)\n  c = f32[1024]{0} copy(x)\n"
        "  y = f32[8]{0} parameter(1)\n  ROOT z = f32[8]{0} fusion(y), kind=kLoop, calls=f\n}\n");
    CHECK(kept.ops.size() == 2);
}

TEST_CASE("HLO dot: each operand is read at its own element type", "[hlo]") {
    // f32 activations times bf16 weights: the lhs moves 4 bytes per element, the rhs 2.
    const Trace t = import(
        "HloModule m\nENTRY e {\n  a = f32[256,512]{1,0} parameter(0)\n"
        "  b = bf16[512,128]{1,0} parameter(1)\n"
        "  ROOT d = f32[256,128]{1,0} dot(a, b), lhs_contracting_dims={1}, "
        "rhs_contracting_dims={0}\n}\n");
    REQUIRE(t.ops.size() == 1);
    CHECK(t.ops[0].lhs_type() == DType::F32);
    CHECK(t.ops[0].rhs_type() == DType::BF16);
    const TpuConfig cfg = load_config(test::config_path("tpu_v3_8.json"));
    CHECK(lower_trace(t, cfg).ops[0].hbm_bytes ==
          Bytes{256} * 512 * 4 + Bytes{512} * 128 * 2 + Bytes{256} * 128 * 4);
    // The imported trace says so, and reads back the same.
    const Trace back = parse_trace(trace_to_json_object(t), "t.json", 8);
    CHECK(back.ops.at(0).lhs_type() == DType::F32);
    CHECK(back.ops.at(0).rhs_type() == DType::BF16);
}

TEST_CASE("HLO fusion pass: only vector ops are written as fused; the lowering honours them",
          "[hlo]") {
    // x -> convert -> dot -> add (bias): one fusion in the pass, but the dot reads its
    // operand from HBM (a matmul does not run on a producer's tiles), so it is not `fused`,
    // and the lowering has nothing to warn about.
    const Trace t = import(
        "HloModule m\nENTRY e {\n  x = f32[256,512]{1,0} parameter(0)\n"
        "  w = bf16[512,128]{1,0} parameter(1)\n  b = bf16[256,128]{1,0} parameter(2)\n"
        "  c = bf16[256,512]{1,0} convert(x)\n"
        "  d = bf16[256,128]{1,0} dot(c, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
        "  ROOT y = bf16[256,128]{1,0} add(d, b)\n}\n");
    CHECK_FALSE(op_named(t, "d").fused);
    CHECK(op_named(t, "y").fused);
    const Program p = lower_trace(t, load_config(test::config_path("tpu_v3_8.json")));
    CHECK(p.warnings.empty());
}

TEST_CASE("HLO fusions: a fused op reads its other operand from the op that holds it", "[hlo]") {
    // y = exp(x2) is stored (two fusions read it, and an exponential is not duplicated).
    // In the fusion {q = negate(x), r = add(q, y)}, r runs on q's tiles and reads y from HBM:
    // it waits for y's op and its operand names it, not a parameter of its own.
    const Trace t = import(
        "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n"
        "  x = f32[1024,512]{1,0} parameter(0)\n  x2 = f32[1024,512]{1,0} parameter(1)\n"
        "  z = f32[] constant(0)\n  y = f32[1024,512]{1,0} exponential(x2)\n"
        "  q = f32[1024,512]{1,0} negate(x)\n  r = f32[1024,512]{1,0} add(q, y)\n"
        "  t = f32[1024]{0} reduce(y, z), dimensions={1}, to_apply=add\n"
        "  ROOT o = (f32[1024,512]{1,0}, f32[1024]{0}) tuple(r, t)\n}\n");
    const TraceOp& r = op_named(t, "r");
    REQUIRE(r.fused);
    std::size_t y = 0;
    while (t.ops[y].id != "y") ++y;
    CHECK(op_operand_dep(r, 1) == static_cast<std::ptrdiff_t>(y));
}

TEST_CASE("HLO S(1): a dot's VMEM operand is not read and its VMEM result is not written",
          "[hlo]") {
    // A TPU-compiled dot: lhs bf16[256,512] in HBM, rhs bf16[512,128] in VMEM (S(1)), result
    // f32[256,128] in VMEM. The only HBM traffic is the lhs read: 256 * 512 * 2 bytes.
    const std::string text = R"(HloModule m
ENTRY e {
  a = bf16[256,512]{1,0:T(8,128)(2,1)} parameter(0)
  b = bf16[512,128]{1,0:T(8,128)(2,1)S(1)} parameter(1)
  ROOT d = f32[256,128]{1,0:T(8,128)S(1)} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";
    const Trace t = import(text);
    REQUIRE(t.ops.size() == 1);
    CHECK(t.ops[0].vmem_operands == std::vector<int>{1});
    CHECK(t.ops[0].result_in_vmem);
    const TpuConfig cfg = load_config(test::config_path("tpu_v3_8.json"));
    const Program p = lower_trace(t, cfg);
    REQUIRE(p.ops.size() == 1);
    CHECK(p.ops[0].hbm_bytes == Bytes{256} * 512 * 2);
    // The same dot with every value in HBM also reads rhs (512 * 128 * 2) and writes the
    // f32 result (256 * 128 * 4).
    Trace h = t;
    h.ops[0].vmem_operands.clear();
    h.ops[0].result_in_vmem = false;
    CHECK(lower_trace(h, cfg).ops[0].hbm_bytes ==
          Bytes{256} * 512 * 2 + Bytes{512} * 128 * 2 + Bytes{256} * 128 * 4);
    // The trace library's figures agree with the lowering: the HBM read is the lhs alone, the
    // result is not stored in HBM, so the live HBM at the dot is the lhs parameter only (the
    // VMEM-resident rhs still counts as a declared entry parameter, as the import declares it).
    CHECK(op_hbm_bytes_in(t.ops[0]) == std::int64_t{256} * 512 * 2);
    CHECK(op_hbm_bytes_in(h.ops[0]) == std::int64_t{256} * 512 * 2 + std::int64_t{512} * 128 * 2);
    CHECK(results_kept_on_chip(t)[0]);
    CHECK_FALSE(results_kept_on_chip(h)[0]);
    CHECK(hbm_footprint(h).peak_bytes - hbm_footprint(t).peak_bytes ==
          std::int64_t{256} * 128 * 4);  // the f32 result that S(1) keeps out of HBM
}

namespace {

// [lowest, highest) HBM bytes that op `id`'s DMAs in direction `dir` reach on core 0.
std::pair<Addr, Addr> dma_range(const Program& p, const std::string& id, DmaDescriptor::Dir dir) {
    std::size_t op = p.ops.size();
    for (std::size_t i = 0; i < p.ops.size(); ++i)
        if (p.ops[i].id == id) op = i;
    REQUIRE(op < p.ops.size());
    Addr lo = ~Addr{0}, hi = 0;
    for (const Instr& in : p.cores.at(0).instrs) {
        if (in.unit != Unit::Dma || in.op != op || in.dma().dir != dir) continue;
        lo = std::min(lo, in.dma().hbm_addr);
        hi = std::max(hi, in.dma().hbm_extent());
    }
    REQUIRE(hi > 0);
    return {lo, hi};
}

}  // namespace

TEST_CASE("HLO fusion: an unfused member reads its own operand, not the fusion's first input",
          "[hlo][lowering]") {
    // The fusion {d, m} waits for all three of its inputs (k, big, red), and d reads only
    // `big` from HBM (its other operand is a broadcast, made in registers). The deps of d are
    // the fusion's inputs in program order, so its operand 0 by position was the scalar k:
    // d read 1 MiB from k's 4 KiB buffer (RoBERTa's div.687 read 96 MiB from a bf16[] and the
    // replay counted dma.hbm_errors where such reads crossed the end of the core's share).
    const Trace t = import(R"(HloModule m
add_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p0 = f32[] parameter(0)
  k = f32[] exponential(p0)
  p1 = f32[512,512]{1,0} parameter(1)
  big = f32[512,512]{1,0} tanh(p1)
  zero = f32[] constant(0)
  red = f32[512]{0} reduce(big, zero), dimensions={1}, to_apply=add_f32
  b = f32[512,512]{1,0} broadcast(red), dimensions={0}
  kb = f32[512,512]{1,0} broadcast(k), dimensions={}
  d = f32[512,512]{1,0} divide(big, b)
  ROOT m = f32[512,512]{1,0} multiply(d, kb)
})");
    const TraceOp& d = op_named(t, "d");
    REQUIRE_FALSE(d.fused);
    REQUIRE(d.deps.size() == 3);  // it waits for every input of its fusion
    REQUIRE(op_operand_dep(d, 0) >= 0);
    CHECK(t.ops[static_cast<std::size_t>(op_operand_dep(d, 0))].id == "big");
    // Lowered, d's reads are the buffer big's result was written to.
    const Program p = lower_trace(t, load_config(test::config_path("tpu_v3_8.json")));
    const auto written = dma_range(p, "big", DmaDescriptor::Dir::VmemToHbm);
    const auto read = dma_range(p, "d", DmaDescriptor::Dir::HbmToVmem);
    CHECK(read == written);
}
