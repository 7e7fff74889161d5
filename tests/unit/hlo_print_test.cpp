// The HLO writer and the steps written with it (docs/hlo.md, "Passes"): every sample module
// prints to text that reads back to the same module; the fusion pass written as fusions; the
// defusion of another backend's optimised module.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "hlo_test_util.h"
#include "tpusim/common/error.h"
#include "tpusim/trace/hlo.h"

using namespace tpusim;

namespace {

void same_shape(const HloShape& a, const HloShape& b) {
    REQUIRE(a.tuple == b.tuple);
    CHECK(a.type.name == b.type.name);
    CHECK(a.dims == b.dims);
    CHECK(a.minor_to_major == b.minor_to_major);
    CHECK(a.memory_space == b.memory_space);
    CHECK(a.tiled == b.tiled);
    CHECK(a.text == b.text);
    REQUIRE(a.elements.size() == b.elements.size());
    for (std::size_t i = 0; i < a.elements.size(); ++i) same_shape(a.elements[i], b.elements[i]);
}

// The two modules have the same computations, instructions, shapes, operands, attributes
// (names and values as written), literals, roots and entry.
void same_module(const HloModule& a, const HloModule& b) {
    CHECK(a.name == b.name);
    REQUIRE(a.attrs.size() == b.attrs.size());
    for (std::size_t i = 0; i < a.attrs.size(); ++i) {
        CHECK(a.attrs[i].name == b.attrs[i].name);
        CHECK(a.attrs[i].value == b.attrs[i].value);
    }
    REQUIRE(a.computations.size() == b.computations.size());
    CHECK(a.computations[static_cast<std::size_t>(a.entry)].name ==
          b.computations[static_cast<std::size_t>(b.entry)].name);
    for (std::size_t c = 0; c < a.computations.size(); ++c) {
        const HloComputation& x = a.computations[c];
        const HloComputation& y = b.computations[c];
        INFO("computation " << x.name);
        CHECK(x.name == y.name);
        CHECK(x.root == y.root);
        REQUIRE(x.instrs.size() == y.instrs.size());
        for (std::size_t i = 0; i < x.instrs.size(); ++i) {
            const HloInstr& p = x.instrs[i];
            const HloInstr& q = y.instrs[i];
            INFO("instruction " << p.name);
            CHECK(p.name == q.name);
            CHECK(p.opcode == q.opcode);
            CHECK(p.literal == q.literal);
            same_shape(p.shape, q.shape);
            REQUIRE(p.operands.size() == q.operands.size());
            for (std::size_t k = 0; k < p.operands.size(); ++k) {
                CHECK(p.operands[k].instr == q.operands[k].instr);
                CHECK(p.operands[k].tuple_index == q.operands[k].tuple_index);
            }
            REQUIRE(p.attrs.size() == q.attrs.size());
            for (std::size_t k = 0; k < p.attrs.size(); ++k) {
                CHECK(p.attrs[k].name == q.attrs[k].name);
                CHECK(p.attrs[k].value == q.attrs[k].value);
            }
            REQUIRE(p.callees.size() == q.callees.size());
            for (std::size_t k = 0; k < p.callees.size(); ++k)
                CHECK(a.computations[static_cast<std::size_t>(p.callees[k])].name ==
                      b.computations[static_cast<std::size_t>(q.callees[k])].name);
        }
    }
}

// The kernels of a trace: matmul, vector and copy ops that are not fused onto a producer.
int kernels(const Trace& t) {
    int n = 0;
    for (const auto& op : t.ops)
        if ((op.kind == OpKind::Matmul || op.kind == OpKind::Vector || op.kind == OpKind::Copy) &&
            !op.fused)
            ++n;
    return n;
}

int count(const std::string& text, const std::string& what) {
    int n = 0;
    for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
    return n;
}

}  // namespace

TEST_CASE("HLO writer: every sample module reads back the same", "[hlo]") {
    int modules = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(
             std::filesystem::path(TPUSIM_SOURCE_DIR) / "tests/data/hlo")) {
        if (e.path().extension() != ".hlo") continue;
        std::optional<HloModule> m;
        try {
            m = read_hlo(e.path().string());
        } catch (const InputError&) {
            continue;  // several modules in one file, or cut off: not a module
        }
        INFO(e.path().string());
        const std::string text = print_hlo(*m);
        const HloModule back = parse_hlo(text, "printed.hlo");
        same_module(*m, back);
        CHECK(print_hlo(back) == text);
        ++modules;
    }
    CHECK(modules > 80);  // 88 whole modules when written
}

TEST_CASE("HLO writer: computations written in place stay in their attribute", "[hlo]") {
    const HloModule m = parse_hlo(R"(HloModule m, entry_computation_layout={(f32[8]{0})->f32[]}
ENTRY e {
  x = f32[8]{0} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply={ a = f32[] parameter(0)
    b = f32[] parameter(1)
    ROOT s = f32[] add(a, b) }
})",
                                  "t.hlo");
    const std::string text = print_hlo(m);
    CHECK(count(text, "ENTRY") == 1);
    same_module(m, parse_hlo(text, "printed.hlo"));
}

namespace {

// A small program: a matmul with a bias and an activation (one output fusion), then a softmax-
// like pair of reductions, with a layout-only copy in between.
// The header and the two scalar reducers of kUnfused and its CPU-fused form.
const std::string kHeaderAndReducers =
    R"(HloModule m, entry_computation_layout={(f32[256,512]{1,0}, f32[512,256]{1,0}, f32[256]{0})->f32[256]{0}}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
)";

const std::string kUnfused = kHeaderAndReducers + R"(ENTRY e {
  x = f32[256,512]{1,0} parameter(0)
  w = f32[512,256]{1,0} parameter(1)
  bias = f32[256]{0} parameter(2)
  d = f32[256,256]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[256,256]{1,0} broadcast(bias), dimensions={1}
  s = f32[256,256]{1,0} add(d, bb)
  z = f32[] constant(0)
  zb = f32[256,256]{1,0} broadcast(z), dimensions={}
  r = f32[256,256]{1,0} maximum(s, zb)
  c = f32[256,256]{1,0} copy(r)
  e = f32[256,256]{1,0} exponential(c)
  ninf = f32[] constant(-inf)
  mx = f32[256]{0} reduce(e, ninf), dimensions={1}, to_apply=max
  n = f32[256,256]{1,0} negate(e)
  sm = f32[256]{0} reduce(n, z), dimensions={1}, to_apply=add
  ROOT o = f32[256]{0} add(mx, sm)
})";

}  // namespace

TEST_CASE("HLO after passes: the fusion pass written as fusions imports to the same kernels",
          "[hlo]") {
    const HloModule m = parse_hlo(kUnfused, "t.hlo");
    const HloModule after = hlo_after_passes(m, HloImportOptions{});
    const std::string text = print_hlo(after);
    INFO(text);
    CHECK(count(text, " fusion(") >= 3);
    CHECK(count(text, "kind=kOutput") == 1);  // the dot, its bias and its activation
    CHECK(count(text, "kind=kInput") >= 1);   // a reduction root
    CHECK(count(text, " copy(") == 0);        // the copy keeps shape and layout: removed
    // Broadcasts and constants are made inside the fusions that use them.
    CHECK(count(text, "broadcast(") >= 2);
    const HloModule back = parse_hlo(text, "after.hlo");
    same_module(after, back);
    // Producer-consumer multi-output fusion (a kernel run on a stored producer's tiles) is
    // not written as a fusion, so the original is imported without it for the comparison.
    HloImportOptions no_mof;
    no_mof.producer_fusion = false;
    const Trace a = hlo_to_trace(m, no_mof, 8);
    const Trace b = hlo_to_trace(back, HloImportOptions{}, 8);
    CHECK(kernels(a) == kernels(b));
    // A module with fusions is written as it is.
    same_module(hlo_after_passes(back, HloImportOptions{}), back);
}

TEST_CASE("HLO defusion: another backend's fused module runs as its unfused program", "[hlo]") {
    // What XLA's CPU backend writes for kUnfused-like code: loop fusions over {1,0} layouts
    // with no TPU tiling, one multi-output fusion read through get-tuple-element.
    const std::string cpu = kHeaderAndReducers + R"(fused_relu {
  p0 = f32[256,256]{1,0} parameter(0)
  p1 = f32[256]{0} parameter(1)
  bb = f32[256,256]{1,0} broadcast(p1), dimensions={1}
  s = f32[256,256]{1,0} add(p0, bb)
  z = f32[] constant(0)
  zb = f32[256,256]{1,0} broadcast(z), dimensions={}
  ROOT r = f32[256,256]{1,0} maximum(s, zb)
}
fused_exp {
  p0 = f32[256,256]{1,0} parameter(0)
  e = f32[256,256]{1,0} exponential(p0)
  n = f32[256,256]{1,0} negate(e)
  ROOT t = (f32[256,256]{1,0}, f32[256,256]{1,0}) tuple(e, n)
}
ENTRY e {
  x = f32[256,512]{1,0} parameter(0)
  w = f32[512,256]{1,0} parameter(1)
  bias = f32[256]{0} parameter(2)
  d = f32[256,256]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  fusion = f32[256,256]{1,0} fusion(d, bias), kind=kLoop, calls=fused_relu
  c = f32[256,256]{1,0} copy(fusion)
  fusion.1 = (f32[256,256]{1,0}, f32[256,256]{1,0}) fusion(c), kind=kLoop, calls=fused_exp
  g0 = f32[256,256]{1,0} get-tuple-element(fusion.1), index=0
  g1 = f32[256,256]{1,0} get-tuple-element(fusion.1), index=1
  z = f32[] constant(0)
  ninf = f32[] constant(-inf)
  mx = f32[256]{0} reduce(g0, ninf), dimensions={1}, to_apply=max
  sm = f32[256]{0} reduce(g1, z), dimensions={1}, to_apply=add
  ROOT o = f32[256]{0} add(mx, sm)
})";
    const HloModule m = parse_hlo(cpu, "cpu.hlo");
    CHECK(is_foreign_fused(m));
    std::int64_t n = 0;
    const HloModule d = defuse_hlo(m, &n);
    CHECK(n == 2);
    const std::string text = print_hlo(d);
    INFO(text);
    CHECK(count(text, "fusion(") == 0);
    CHECK(count(text, "get-tuple-element") == 0);  // read through to the tuple's elements
    CHECK(count(text, "fused_relu") == 0);         // the fused computations are gone
    HloImportStats st;
    const Trace a = hlo_to_trace(m, HloImportOptions{}, 8, &st);
    CHECK(st.defused_fusions == 2);
    const Trace b = hlo_to_trace(parse_hlo(kUnfused, "t.hlo"), HloImportOptions{}, 8);
    CHECK(kernels(a) == kernels(b));
    CHECK(a.ops.size() == b.ops.size());
}

TEST_CASE("HLO defusion: a TPU module, or one written by hand, stays fused", "[hlo]") {
    auto module = [](const std::string& header, const std::string& layout) {
        return header + "\nf {\n  p0 = f32[1024,512]" + layout +
               " parameter(0)\n  e = f32[1024,512]" + layout +
               " exponential(p0)\n  ROOT n = f32[1024,512]" + layout +
               " negate(e)\n}\nENTRY e {\n  x = f32[1024,512]" + layout +
               " parameter(0)\n  ROOT r = f32[1024,512]" + layout +
               " fusion(x), kind=kLoop, calls=f\n}\n";
    };
    const std::string header =
        "HloModule m, entry_computation_layout={(f32[1024,512]{1,0})->f32[1024,512]{1,0}}";
    const HloModule tpu = parse_hlo(module(header, "{1,0:T(8,128)}"), "tpu.hlo");
    CHECK_FALSE(is_foreign_fused(tpu));
    HloImportStats st;
    const Trace t = hlo_to_trace(tpu, HloImportOptions{}, 8, &st);
    CHECK(st.defused_fusions == 0);
    CHECK(kernels(t) == 1);
    CHECK(count(print_hlo(hlo_after_passes(tpu, HloImportOptions{})), "fusion(") == 1);
    // No entry_computation_layout: written by hand (tests, examples), trusted as fused.
    CHECK_FALSE(is_foreign_fused(parse_hlo(module("HloModule m", "{1,0}"), "hand.hlo")));
    CHECK(is_foreign_fused(parse_hlo(module(header, "{1,0}"), "cpu.hlo")));
}
