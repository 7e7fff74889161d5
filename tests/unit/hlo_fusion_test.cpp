// The HLO importer's XLA passes (docs/hlo.md, "Passes"): which producers the fusion pass
// copies into their consumers' fusions, sibling multi-output fusion, copies removed, and
// what the lowering does with the fused ops the import writes.
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
    // multi-output kernel that reads x once; the second's ops read nothing from HBM. The group
    // is formed in text order and scheduled as one kernel, with or without the memory
    // scheduler.
    HloImportOptions text_order;
    text_order.memory_scheduler = false;
    for (const HloImportOptions& opts : {HloImportOptions{}, text_order}) {
        HloImportStats st;
        const Trace siblings = hlo_to_trace(
            parse_hlo(head + "  r1 = f32[1024]{0} reduce(x, z), dimensions={1}, to_apply=add\n"
                             "  m = f32[1024,512]{1,0} multiply(x, x)\n"
                             "  r2 = f32[1024]{0} reduce(m, z), dimensions={1}, to_apply=add\n"
                             "  ROOT t = (f32[1024]{0}, f32[1024]{0}) tuple(r1, r2)\n}\n",
                      "t.hlo"),
            opts, 8, &st);
        CHECK(hbm_in(siblings) == x_bytes);
        CHECK(op_named(siblings, "m").vmem_operands == std::vector<int>{0});
        CHECK(st.multi_output_fusions == 1);
    }
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
    CHECK(t.ops[0].rhs_type() == DType::Bf16);
    const TpuConfig cfg = load_config(test::config_path("tpu_v3_8.json"));
    CHECK(lower_trace(t, cfg).ops[0].hbm_bytes ==
          Bytes{256} * 512 * 4 + Bytes{512} * 128 * 2 + Bytes{256} * 128 * 4);
    // The imported trace says so, and reads back the same.
    const Trace back = parse_trace(trace_to_json_object(t), "t.json", 8);
    CHECK(back.ops.at(0).lhs_type() == DType::F32);
    CHECK(back.ops.at(0).rhs_type() == DType::Bf16);
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
    // it waits for y's op and its operand names it, not a parameter of its own. In the text's
    // order: the memory scheduler runs t first, on y's tiles, and r then joins that kernel as
    // t's sibling and finds y on chip.
    HloImportOptions text_order;
    text_order.memory_scheduler = false;
    const Trace t = import(
        "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n"
        "  x = f32[1024,512]{1,0} parameter(0)\n  x2 = f32[1024,512]{1,0} parameter(1)\n"
        "  z = f32[] constant(0)\n  y = f32[1024,512]{1,0} exponential(x2)\n"
        "  q = f32[1024,512]{1,0} negate(x)\n  r = f32[1024,512]{1,0} add(q, y)\n"
        "  t = f32[1024]{0} reduce(y, z), dimensions={1}, to_apply=add\n"
        "  ROOT o = (f32[1024,512]{1,0}, f32[1024]{0}) tuple(r, t)\n}\n",
        8, text_order);
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
