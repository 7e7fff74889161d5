// Program layer: trace ops -> instruction streams. Expected counts are derived from the
// config and the tiling rules in tpusim/program/lowering.h.
#include "tpusim/program/lowering.h"

#include <fmt/format.h>

#include <array>
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "../test_util.h"
#include "op_spec_util.h"
#include "tpusim/common/error.h"
#include "tpusim/program/from_trace.h"
#include "tpusim/trace/trace.h"
#include "trace_test_util.h"

using namespace tpusim;

namespace {

TpuConfig v3() { return load_config(test::config_path("tpu_v3_8.json")); }

using test::matmul_spec;
using test::totals;
using test::Totals;
using test::vector_spec;

}  // namespace

TEST_CASE("matmul lowering covers every MAC once and writes the result once", "[lowering]") {
    const TpuConfig cfg = v3();
    for (auto [m, k, n] : {std::array<std::int64_t, 3>{1, 1, 1},
                           {300, 200, 130},
                           {2048, 4096, 1024},
                           {8, 12288, 12288}}) {
        const Program p = lower_ops({matmul_spec("mm", m, k, n)}, cfg, {}, "t");
        REQUIRE(p.cores.size() == 1);
        const Totals t = totals(p.cores[0]);
        CHECK(t.macs == static_cast<std::uint64_t>(m * k * n));
        // bf16 result: m x n x 2 bytes, written once.
        CHECK(t.dma_out == static_cast<std::uint64_t>(m * n * 2));
        // Every operand byte is read at least once.
        CHECK(t.dma_in >= static_cast<std::uint64_t>((m * k + k * n) * 2));
        CHECK(p.ops[0].flops == Approx(2.0 * m * k * n));
    }
}

TEST_CASE("an f32 matmul at high or highest precision makes 3 or 6 passes of its MACs",
          "[lowering]") {
    // XLA's TPU dot of f32 operands splits them into bf16 parts: DEFAULT one product, HIGH
    // three (bf16_3x), HIGHEST six, into the same accumulator. The operands are read and the
    // result written once whatever the passes; bf16 operands take one pass at any precision.
    const TpuConfig cfg = v3();
    const std::int64_t m = 1024, k = 2048, n = 512;
    auto trace = [&](const char* dtype, const char* precision) {
        return test::parse_text(fmt::format(
            R"({{"format": "tpusim.trace", "version": 1, "cores": 1, "ops": [{{"id": "mm",
            "kind": "matmul", "m": {}, "k": {}, "n": {}, "dtype": "{}", "precision": "{}"}}]}})",
            m, k, n, dtype, precision));
    };
    const Totals base = totals(lower_trace(trace("f32", "default"), cfg).cores[0]);
    CHECK(base.macs == static_cast<std::uint64_t>(m * k * n));
    for (auto [precision, passes] :
         {std::pair<const char*, std::uint64_t>{"high", 3}, {"highest", 6}}) {
        INFO(precision);
        const Program p = lower_trace(trace("f32", precision), cfg);
        const Totals t = totals(p.cores[0]);
        CHECK(t.macs == passes * base.macs);
        CHECK(t.dma_in == base.dma_in);
        CHECK(t.dma_out == base.dma_out);
        CHECK(p.ops[0].flops == Approx(2.0 * m * k * n));  // useful FLOPs: the dot's
        CHECK(totals(lower_trace(trace("bf16", precision), cfg).cores[0]).macs ==
              static_cast<std::uint64_t>(m * k * n));
    }
}

TEST_CASE("resident weights are released with their last pass, not a step later", "[lowering]") {
    // BERT-base's FFN weight gradient at 2 sequences of 512 per core: (768 x 1024) . (1024 x
    // 3072), f32 out. Tiles 768 x 1024 x 1024 (13 MiB of the 14.4 MiB budget): K fits one tile,
    // so each 2 MiB weight tile is pinned while its M tiles run. Released only when the step
    // finished (after the next step's passes were issued), three weight tiles and an
    // accumulator were pinned when the next 3 MiB accumulator was asked for, and the ring of
    // 16 MiB had no 3 MiB gap left: "needs a 3.00 MiB VMEM buffer beside 9.00 MiB already held".
    const TpuConfig cfg = v3();
    OpSpec mm = matmul_spec("l11.ffn_in.dw", 768, 1024, 3072);
    mm.out_bytes = 4;
    const Program p = lower_ops({mm}, cfg, {}, "t");
    CHECK(totals(p.cores[0]).macs == 768ull * 1024 * 3072);
}

TEST_CASE("matmul work is split between the core's MXUs", "[lowering]") {
    const TpuConfig cfg = v3();
    const Program p = lower_ops({matmul_spec("mm", 1024, 1024, 1024)}, cfg, {}, "t");
    std::uint64_t per_mxu[2] = {0, 0};
    for (const auto& in : p.cores[0].instrs) {
        if (in.unit == Unit::Mxu)
            per_mxu[in.mm().mxu] += static_cast<std::uint64_t>(in.mm().m * in.mm().k * in.mm().n);
    }
    CHECK(per_mxu[0] == per_mxu[1]);
    CHECK(per_mxu[0] + per_mxu[1] == 1024ull * 1024 * 1024);
}

TEST_CASE("a matmul narrower than the MXUs splits its rows between them", "[lowering]") {
    // N = 128 is one column group of the 128-wide array: on a v3 core (two MXUs) both arrays
    // hold that weight tile and stream half of each A tile's rows; v2 has one MXU.
    const std::int64_t m = 2048, k = 1024, n = 128;
    TpuConfig cfg = v3();
    const Program p = lower_ops({matmul_spec("mm", m, k, n)}, cfg, {}, "t");
    std::uint64_t per_mxu[2] = {0, 0};
    for (const auto& in : p.cores[0].instrs) {
        if (in.unit != Unit::Mxu) continue;
        CHECK(in.mm().n == n);
        // matmul_max_tile_m = 1024 rows per tile, half of them per MXU.
        CHECK(in.mm().m == cfg.lowering.matmul_max_tile_m / 2);
        per_mxu[in.mm().mxu] += static_cast<std::uint64_t>(in.mm().m * in.mm().k * in.mm().n);
    }
    CHECK(per_mxu[0] == per_mxu[1]);
    CHECK(per_mxu[0] + per_mxu[1] == static_cast<std::uint64_t>(m * k * n));
    cfg.core.mxus = 1;
    const Program one = lower_ops({matmul_spec("mm", m, k, n)}, cfg, {}, "t");
    for (const auto& in : one.cores[0].instrs)
        if (in.unit == Unit::Mxu) CHECK(in.mm().m == cfg.lowering.matmul_max_tile_m);
}

TEST_CASE("a convolution reads its input window once, not as im2col", "[lowering]") {
    // 3x3 stride-1 'same' convolution, one 32x32x64 image to 64 channels: the implicit GEMM
    // has m = 32*32 = 1024 (one M tile), k = 9*64 = 576 (one K tile), n = 64. Its LHS tile
    // covers output rows 0..31, so it needs input rows 0..31 (the halo rows fall outside the
    // image) of all 64 channels: the input once, 32*32*64*2 bytes, instead of the im2col
    // 1024*576*2; plus the 576 x 64 bf16 filter.
    const TpuConfig cfg = v3();
    OpSpec c = matmul_spec("conv", 32 * 32, 9 * 64, 64);
    c.conv = {32, 32, 64, 3, 3, 1, 32, 32};
    const Totals t = totals(lower_ops({c}, cfg, {}, "t").cores[0]);
    CHECK(t.macs == 1024ull * 576 * 64);
    CHECK(t.dma_in == 32ull * 32 * 64 * 2 + 576ull * 64 * 2);
    CHECK(t.dma_out == 1024ull * 64 * 2);
    // The same GEMM without the window reads the im2col rows.
    const Totals g = totals(lower_ops({matmul_spec("mm", 1024, 576, 64)}, cfg, {}, "t").cores[0]);
    CHECK(g.dma_in == 1024ull * 576 * 2 + 576ull * 64 * 2);
}

TEST_CASE("a thin LHS is the stationary operand and B streams through both MXUs", "[lowering]") {
    const TpuConfig cfg = v3();
    const std::int64_t R = cfg.mxu.rows, C = cfg.mxu.cols;
    // M = 64 <= C: each MXU instruction keeps the M x K tile stationary (n = M) and streams
    // its share of B's columns (m = tn / 2), so every block has ceil(k / R) passes.
    const Program p = lower_ops({matmul_spec("mm", 64, 4096, 4096)}, cfg, {}, "t");
    std::uint64_t per_mxu[2] = {0, 0};
    for (const auto& in : p.cores[0].instrs) {
        if (in.unit != Unit::Mxu) continue;
        CHECK(in.mm().n == 64);
        CHECK(in.mm().k % R == 0);
        per_mxu[in.mm().mxu] += static_cast<std::uint64_t>(in.mm().m * in.mm().k * in.mm().n);
    }
    CHECK(per_mxu[0] == per_mxu[1]);
    CHECK(per_mxu[0] + per_mxu[1] == 64ull * 4096 * 4096);
    // One array width more and B is stationary again (n = a multiple of C per MXU).
    const Program q = lower_ops({matmul_spec("mm", C + 1, 4096, 4096)}, cfg, {}, "t");
    for (const auto& in : q.cores[0].instrs)
        if (in.unit == Unit::Mxu) CHECK(in.mm().m == C + 1);
}

TEST_CASE("waits only name earlier instructions and DMA runs one step ahead", "[lowering]") {
    const TpuConfig cfg = v3();
    const Program p = lower_ops(
        {matmul_spec("a", 4096, 4096, 4096), vector_spec("g", VectorOp::Gelu, 4096, 4096)}, cfg, {},
        "t");
    const auto& in = p.cores[0].instrs;
    bool dma_before_first_mxu_done = false;
    std::size_t first_mxu = in.size();
    for (std::size_t i = 0; i < in.size(); ++i) {
        for (auto w : in[i].waits) REQUIRE(w < i);
        if (in[i].unit == Unit::Mxu && first_mxu == in.size()) first_mxu = i;
    }
    // The second step's operand DMAs are issued before the first MXU block.
    std::size_t dmas_before = 0;
    for (std::size_t i = 0; i < first_mxu; ++i) dmas_before += in[i].unit == Unit::Dma;
    dma_before_first_mxu_done = dmas_before >= 4;
    CHECK(dma_before_first_mxu_done);
}

TEST_CASE("a fused consumer reads its producer's tiles from VMEM", "[lowering]") {
    const TpuConfig cfg = v3();
    OpSpec mm = matmul_spec("mm", 2048, 768, 3072);
    OpSpec g = vector_spec("gelu", VectorOp::Gelu, 2048, 3072);
    g.deps = {0};
    // Bytes each op moves in each direction.
    auto per_op = [](const Program& p, std::uint32_t op, bool in) {
        std::uint64_t b = 0;
        for (const auto& i : p.cores[0].instrs) {
            if (i.unit == Unit::Dma && i.op == op && i.dma().to_vmem() == in) b += i.dma().bytes();
        }
        return b;
    };
    const Program unfused = lower_ops({mm, g}, cfg, {}, "t");
    // Unfused: the matmul writes its bf16 result, GELU reads it back (f32 here) and writes.
    CHECK(per_op(unfused, 0, false) == 2048ull * 3072 * 2);
    CHECK(per_op(unfused, 1, true) == 2048ull * 3072 * 4);
    CHECK(per_op(unfused, 1, false) == 2048ull * 3072 * 4);
    g.fused = true;
    const Program fused = lower_ops({mm, g}, cfg, {}, "t");
    CHECK(per_op(fused, 0, false) == 0);
    CHECK(per_op(fused, 1, true) == 0);
    CHECK(per_op(fused, 1, false) == 2048ull * 3072 * 4);
    CHECK(totals(fused.cores[0]).vec_elems == 2048ull * 3072);
    CHECK(totals(fused.cores[0]).macs == 2048ull * 768 * 3072);

    // Multi-output fusion: with a second, unfused consumer the matmul hands its tiles to the
    // fused GELU and also writes its result once for the other consumer, which reads it.
    OpSpec other = vector_spec("relu", VectorOp::Relu, 2048, 3072);
    other.deps = {0};
    const Program multi = lower_ops({mm, g, other}, cfg, {}, "t");
    CHECK(per_op(multi, 0, false) == 2048ull * 3072 * 2);
    CHECK(per_op(multi, 1, true) == 0);
    CHECK(per_op(multi, 2, true) == 2048ull * 3072 * 4);
    CHECK(multi.ops[1].fused_into == "mm");
}

TEST_CASE("SPMD lowering shares one stream; each core issues it in its own HBM half",
          "[lowering]") {
    const TpuConfig cfg = v3();
    LoweringOptions o;
    o.cores = 8;
    const Program p = lower_ops({matmul_spec("mm", 512, 512, 512)}, cfg, o, "t");
    REQUIRE(p.cores.size() == 8);
    const Bytes half = cfg.hbm.capacity_bytes() / 2;
    for (std::int64_t c = 0; c < 8; ++c) {
        const auto& cp = p.cores[static_cast<std::size_t>(c)];
        CHECK(cp.core == c);
        CHECK(cp.instrs.same_as(p.cores[0].instrs));  // lowered once, not copied
        CHECK(totals(cp).macs == 512ull * 512 * 512);
        const Bytes base = static_cast<Bytes>(c % 2) * half;
        CHECK(cp.hbm_base == base);
        for (const auto& in : cp.instrs) {
            if (in.unit != Unit::Dma) continue;
            // The address the core issues (TensorCore::issue adds hbm_base).
            CHECK(cp.hbm_base + in.dma().hbm_addr >= base);
            CHECK(cp.hbm_base + in.dma().hbm_addr < base + half);
        }
    }
}

TEST_CASE("cores of different replica groups share a stream; different ops get their own",
          "[lowering]") {
    const auto j = nlohmann::json::parse(R"({"format": "tpusim.trace", "version": 1,
        "name": "t", "cores": 4, "ops": [
        {"id": "mm", "kind": "matmul", "m": 256, "k": 256, "n": 256},
        {"id": "ar", "kind": "all_reduce", "bytes": 4096, "deps": ["mm"],
         "replica_groups": [[0, 1], [2, 3]]},
        {"id": "extra", "kind": "matmul", "m": 256, "k": 256, "n": 256, "cores": [3]}]})");
    const Program p = lower_trace(parse_trace(j, "t.json", 8), v3());
    REQUIRE(p.cores.size() == 4);
    CHECK(p.cores[1].instrs.same_as(p.cores[0].instrs));
    CHECK(p.cores[2].instrs.same_as(p.cores[0].instrs));        // the other group: the same
    CHECK_FALSE(p.cores[3].instrs.same_as(p.cores[2].instrs));  // runs "extra" too
    // Each core takes its own group from its stream's collective when it issues it.
    auto group_of = [&](std::size_t c) {
        for (const auto& in : p.cores[c].instrs) {
            if (in.unit == Unit::Ici) return in.coll->group_of(static_cast<std::int64_t>(c));
        }
        return std::vector<std::int64_t>{};
    };
    CHECK(group_of(0) == std::vector<std::int64_t>{0, 1});
    CHECK(group_of(1) == std::vector<std::int64_t>{0, 1});
    CHECK(group_of(2) == std::vector<std::int64_t>{2, 3});
    CHECK(group_of(3) == std::vector<std::int64_t>{2, 3});
    // The lowering's list of each stream's collectives holds every group.
    REQUIRE(p.cores[0].collectives);
    REQUIRE(p.cores[0].collectives->size() == 1);
    REQUIRE(p.cores[0].collectives->front().groups);
    CHECK(p.cores[0].collectives->front().groups->groups.size() == 2);
}

TEST_CASE("ops waiting on a collective are issued just before their first consumer",
          "[lowering][schedule]") {
    const auto j = nlohmann::json::parse(R"({"format": "tpusim.trace", "version": 1,
        "name": "t", "cores": 8, "ops": [
        {"id": "dw2", "kind": "matmul", "m": 256, "k": 256, "n": 256},
        {"id": "ar2", "kind": "all_reduce", "bytes": 1024, "deps": ["dw2"]},
        {"id": "adam2", "kind": "vector", "op": "adam", "rows": 256, "cols": 256,
         "deps": ["ar2"]},
        {"id": "scale2", "kind": "vector", "op": "mul", "rows": 256, "cols": 256,
         "deps": ["adam2"]},
        {"id": "dw1", "kind": "matmul", "m": 256, "k": 256, "n": 256, "deps": ["dw2"]},
        {"id": "act1", "kind": "vector", "op": "relu", "rows": 256, "cols": 256,
         "deps": ["dw1"]},
        {"id": "use", "kind": "vector", "op": "add", "rows": 256, "cols": 256,
         "deps": ["act1", "adam2"]},
        {"id": "ar1", "kind": "all_reduce", "bytes": 1024, "deps": ["act1"]},
        {"id": "adam1", "kind": "vector", "op": "adam", "rows": 256, "cols": 256,
         "deps": ["ar1"]},
        {"id": "ag", "kind": "all_gather", "bytes": 1024, "deps": ["scale2"]}]})");
    const Trace t = parse_trace(j, "t.json", 8);
    std::vector<std::string> ids;
    for (std::size_t i : issue_order(t)) ids.push_back(t.ops[i].id);
    // adam2 waits for ar2, and scale2 and use wait for adam2: they go after the independent
    // dw1 and act1. The collectives keep their place, so the all_gather pulls its deferred
    // ancestors (adam2, scale2) in just before it; the rest (use, adam1) ends the program.
    CHECK(ids == std::vector<std::string>{"dw2", "ar2", "dw1", "act1", "ar1", "adam2", "scale2",
                                          "ag", "use", "adam1"});
    // Dependencies are renumbered to the issue order.
    const std::vector<OpSpec> specs = op_specs(t);
    REQUIRE(specs[8].id == "use");
    auto deps = specs[8].deps;
    std::sort(deps.begin(), deps.end());
    CHECK(deps == std::vector<std::size_t>{3, 5});
    // Without collectives the trace order is kept.
    const auto k = nlohmann::json::parse(R"({"format": "tpusim.trace", "version": 1,
        "name": "u", "cores": 1, "ops": [
        {"id": "a", "kind": "matmul", "m": 8, "k": 8, "n": 8},
        {"id": "b", "kind": "matmul", "m": 8, "k": 8, "n": 8},
        {"id": "c", "kind": "vector", "op": "add", "rows": 8, "cols": 8, "deps": ["a", "b"]}]})");
    const Trace u = parse_trace(k, "u.json", 8);
    CHECK(issue_order(u) == std::vector<std::size_t>{0, 1, 2});
}

TEST_CASE("every DMA stays inside the HBM buffer it reads or writes", "[lowering]") {
    const TpuConfig cfg = v3();
    const Bytes share = cfg.hbm.capacity_bytes() / static_cast<Bytes>(cfg.chip.cores_per_chip);
    // [addr, extent) of each op's reads and writes on core 0.
    struct Range {
        Addr lo = ~Addr{0}, hi = 0;
        std::uint64_t bytes = 0;
    };
    auto ranges = [](const Program& p, bool reads) {
        std::map<std::string, Range> r;
        for (const auto& in : p.cores[0].instrs) {
            if (in.unit != Unit::Dma || in.dma().to_vmem() != reads) continue;
            Range& x = r[p.ops[in.op].id];
            x.lo = std::min(x.lo, in.dma().hbm_addr);
            x.hi = std::max(x.hi, in.dma().hbm_extent());
            x.bytes += in.dma().bytes();
        }
        return r;
    };
    // An op that views its operand as larger than the dep's result (a scalar broadcast, or a
    // hand-written dep of another size) reads inside the scalar's buffer: the whole buffer
    // once per chunk, as each chunk is larger than it. Before, it read 32 MiB on from the
    // scalar's 4 KiB.
    OpSpec scalar = vector_spec("s", VectorOp::Exp, 1, 1);
    OpSpec wide = vector_spec("w", VectorOp::Exp, 2048, 4096);
    wide.deps = {0};
    const Program p = lower_ops({scalar, wide}, cfg, {}, "t");
    const auto wrote = ranges(p, false);
    const auto read = ranges(p, true);
    REQUIRE(read.count("w"));
    CHECK(read.at("w").bytes % 4096 == 0);
    CHECK(read.at("w").bytes < 2048ull * 4096 * 4);
    CHECK(read.at("w").lo >= wrote.at("s").lo);
    CHECK(read.at("w").hi <= wrote.at("s").lo + 4096);
    // A fused reduction whose rows are not its producer's (a column reduction of the
    // producer's tiles): each tile writes its share of the op's own result, inside it.
    OpSpec x = vector_spec("x", VectorOp::Exp, 4096, 1024);
    OpSpec col = vector_spec("col", VectorOp::ReduceSum, 1024, 4096, 1, true);
    col.deps = {0};
    col.fused = true;
    const Program q = lower_ops({x, col}, cfg, {}, "t");
    REQUIRE(q.ops[1].fused_into == "x");
    const Range out = ranges(q, false).at("col");
    CHECK(out.hi - out.lo <= 1024 * 4);
    CHECK(out.bytes <= 1024 * 4);
    for (const auto& in : q.cores[0].instrs)
        if (in.unit == Unit::Dma) CHECK(in.dma().hbm_extent() <= share);
}
