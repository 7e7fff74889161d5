// The memory scheduler (docs/hlo.md, "Passes", memory-scheduler): a fused computation's
// kernels run in the order of XLA's default memory scheduler, the lowest peak of live buffers
// of its list, DFS and post-order schedules, not in the module's text order.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "hlo_test_util.h"

using namespace tpusim;
using tpusim::test::import;

namespace {

// Three dots of x and w, each reduced to a row sum; the text computes the three products
// before any sum, as JAX writes a training step's weight gradients after the whole backward
// pass. A dot's result is f32[256,256] (d bytes) and a sum's f32[256] (r bytes); a dot's
// kernel does not take a reduction into its fusion, so each product is stored.
const std::string kModule =
    "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n"
    "  x = f32[256,256]{1,0} parameter(0)\n  w = f32[256,256]{1,0} parameter(1)\n"
    "  z = f32[] constant(0)\n"
    "  d1 = f32[256,256]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  d2 = f32[256,256]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  d3 = f32[256,256]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  r1 = f32[256]{0} reduce(d1, z), dimensions={1}, to_apply=add\n"
    "  r2 = f32[256]{0} reduce(d2, z), dimensions={1}, to_apply=add\n"
    "  r3 = f32[256]{0} reduce(d3, z), dimensions={1}, to_apply=add\n"
    "  ROOT t = (f32[256]{0}, f32[256]{0}, f32[256]{0}) tuple(r1, r2, r3)\n}\n";
constexpr std::int64_t d = 256 * 256 * 4, r = 256 * 4;

std::vector<std::string> ids(const Trace& t) {
    std::vector<std::string> v;
    for (const auto& op : t.ops) v.push_back(op.id);
    return v;
}

}  // namespace

TEST_CASE("HLO memory scheduler: each product is reduced before the next is made", "[hlo]") {
    HloImportStats st;
    const Trace t = hlo_to_trace(parse_hlo(kModule, "t.hlo"), HloImportOptions{}, 8, &st);
    // The list schedule: after the parameters, the three dots are ready and each frees
    // nothing (-d); the last of them to become ready runs first (XLA's tie rule), and then its
    // sum frees d - r, more than any dot: d3 r3 d2 r2 d1 r1. Its peak is one product and the
    // three sums (d + 3r, when d1 is made); the text order holds all three products and a
    // sum (3d + r, when r1 is made).
    CHECK(ids(t) == std::vector<std::string>{"d3", "r3", "d2", "r2", "d1", "r1"});
    CHECK(st.entry_schedule == "list");
    CHECK(st.entry_schedule_peak_bytes == d + 3 * r);
    CHECK(st.entry_text_peak_bytes == 3 * d + r);
}

TEST_CASE("HLO memory scheduler: off, or a module XLA scheduled, keeps the text order", "[hlo]") {
    const std::vector<std::string> text{"d1", "d2", "d3", "r1", "r2", "r3"};
    HloImportOptions off;
    off.memory_scheduler = false;
    HloImportStats st;
    CHECK(ids(hlo_to_trace(parse_hlo(kModule, "t.hlo"), off, 8, &st)) == text);
    CHECK(st.entry_schedule.empty());
    apply_hlo_passes("fusion", off);  // a list without memory-scheduler
    CHECK_FALSE(off.memory_scheduler);
    std::string scheduled = kModule;
    scheduled.replace(0, std::string("HloModule m").size(), "HloModule m, is_scheduled=true");
    CHECK(ids(import(scheduled)) == text);
}

TEST_CASE("HLO memory scheduler: the module written after the passes is in its order", "[hlo]") {
    // `--after-passes` writes each fused computation in the order the import runs it; the
    // written module has fusions, so its own import keeps that (text) order.
    const HloModule written = apply_fusion_pass(parse_hlo(kModule, "t.hlo"));
    CHECK(ids(hlo_to_trace(written, HloImportOptions{}, 8)) ==
          std::vector<std::string>{"d3", "r3", "d2", "r2", "d1", "r1"});
    const HloModule text = apply_fusion_pass(parse_hlo(kModule, "t.hlo"), false);
    CHECK(ids(hlo_to_trace(text, HloImportOptions{}, 8)) ==
          std::vector<std::string>{"d1", "d2", "d3", "r1", "r2", "r3"});
}

TEST_CASE("HLO memory scheduler: a sibling multi-output group is scheduled as one kernel",
          "[hlo]") {
    // sum(x) and sum(x * x) share x's read (one kernel, formed in text order); the scalar
    // s = sum(sum(x * x)) is ready once the second is done and comes first in the list
    // schedule (scalars first). Scheduled apart, the two reductions would be split by s and
    // the second could not find x on chip; as one node they run back to back.
    const std::string m =
        "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n"
        "  x = f32[1024,512]{1,0} parameter(0)\n  z = f32[] constant(0)\n"
        "  r1 = f32[1024]{0} reduce(x, z), dimensions={1}, to_apply=add\n"
        "  m = f32[1024,512]{1,0} multiply(x, x)\n"
        "  r2 = f32[1024]{0} reduce(m, z), dimensions={1}, to_apply=add\n"
        "  s = f32[] reduce(r2, z), dimensions={0}, to_apply=add\n"
        "  ROOT t = (f32[1024]{0}, f32[]) tuple(r1, s)\n}\n";
    HloImportStats st;
    const Trace t = hlo_to_trace(parse_hlo(m, "t.hlo"), HloImportOptions{}, 8, &st);
    CHECK(ids(t) == std::vector<std::string>{"r1", "m", "r2", "s"});
    CHECK(st.multi_output_fusions == 1);
    for (const auto& op : t.ops)
        if (op.id == "m") CHECK(op.vmem_operands == std::vector<int>{0});
}

TEST_CASE("HLO memory scheduler: a while loop's body is scheduled too", "[hlo]") {
    // Two products of the loop's x and w, each summed: in text order both products are live
    // at once (2d + r); any order with the lower peak (d + 2r) sums each product before the
    // next is made. The trace loop keeps the body's order and its 10 trips.
    const std::string m =
        "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] add(a, b)\n}\n"
        "body {\n  p = (s32[], f32[256,256]{1,0}, f32[256,256]{1,0}, f32[256]{0}) parameter(0)\n"
        "  i = s32[] get-tuple-element(p), index=0\n"
        "  x = f32[256,256]{1,0} get-tuple-element(p), index=1\n"
        "  w = f32[256,256]{1,0} get-tuple-element(p), index=2\n  z = f32[] constant(0)\n"
        "  d1 = f32[256,256]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
        "  d2 = f32[256,256]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
        "  r1 = f32[256]{0} reduce(d1, z), dimensions={1}, to_apply=add\n"
        "  r2 = f32[256]{0} reduce(d2, z), dimensions={1}, to_apply=add\n"
        "  s = f32[256]{0} add(r1, r2)\n  one = s32[] constant(1)\n  n = s32[] add(i, one)\n"
        "  ROOT t = (s32[], f32[256,256]{1,0}, f32[256,256]{1,0}, f32[256]{0}) tuple(n, x, w, s)\n"
        "}\ncond {\n  p = (s32[], f32[256,256]{1,0}, f32[256,256]{1,0}, f32[256]{0}) parameter(0)\n"
        "  i = s32[] get-tuple-element(p), index=0\n  k = s32[] constant(10)\n"
        "  ROOT c = pred[] compare(i, k), direction=LT\n}\n"
        "ENTRY e {\n  x = f32[256,256]{1,0} parameter(0)\n  w = f32[256,256]{1,0} parameter(1)\n"
        "  zero = s32[] constant(0)\n  zf = f32[] constant(0)\n"
        "  zs = f32[256]{0} broadcast(zf), dimensions={}\n"
        "  init = (s32[], f32[256,256]{1,0}, f32[256,256]{1,0}, f32[256]{0}) tuple(zero, x, w, "
        "zs)\n"
        "  l = (s32[], f32[256,256]{1,0}, f32[256,256]{1,0}, f32[256]{0}) while(init), "
        "condition=cond, body=body\n"
        "  ROOT o = f32[256]{0} get-tuple-element(l), index=3\n}\n";
    auto at = [](const std::vector<std::string>& v, const char* id) {
        return std::find(v.begin(), v.end(), id) - v.begin();
    };
    const Trace t = import(m);
    REQUIRE(t.loops.size() == 1);
    CHECK(t.loops[0].trips == 10);
    const std::vector<std::string> v = ids(t);
    CHECK(at(v, "r1") == at(v, "d1") + 1);
    CHECK(at(v, "r2") == at(v, "d2") + 1);
    HloImportOptions off;
    off.memory_scheduler = false;
    const std::vector<std::string> text = ids(import(m, 8, off));
    CHECK(at(text, "d2") == at(text, "d1") + 1);  // the text's order: both products first
}
