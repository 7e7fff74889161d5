// The call inliner (docs/hlo.md, "Passes"): calls replaced by their computations, fresh names
// for a computation inlined twice, lines kept, and fusion across what were call boundaries.
#include <catch2/catch.hpp>
#include <string>

#include "hlo_test_util.h"
#include "tpusim/trace/hlo.h"

using namespace tpusim;

namespace {

// JAX's custom_jvp ReLU as a module before optimisation writes it: a `call` per use.
const char* const kReluCalls = R"(HloModule m

relu {
  x = f32[1024,512] parameter(0)
  z = f32[] constant(0)
  b = f32[1024,512] broadcast(z), dimensions={}
  ROOT r = f32[1024,512] maximum(x, b)
}

ENTRY e {
  p = f32[1024,512] parameter(0)
  a = f32[1024,512] add(p, p)
  c1 = f32[1024,512] call(a), to_apply=relu
  m = f32[1024,512] multiply(c1, c1)
  c2 = f32[1024,512] call(m), to_apply=relu
  ROOT n = f32[1024,512] negate(c2)
}
)";

std::size_t unfused_ops(const Trace& t) {
    std::size_t n = 0;
    for (const auto& op : t.ops) n += op.fused ? 0 : 1;
    return n;
}

const HloInstr* instr_named(const HloComputation& c, const std::string& name) {
    for (const auto& in : c.instrs)
        if (in.name == name) return &in;
    return nullptr;
}

}  // namespace

TEST_CASE("HLO call inliner: every call becomes its computation's instructions", "[hlo]") {
    const HloModule m = parse_hlo(kReluCalls, "t.hlo");
    REQUIRE(has_calls(m));
    std::int64_t n = 0;
    const auto out = inline_calls(m, &n);
    REQUIRE(out.has_value());
    CHECK(n == 2);
    CHECK_FALSE(has_calls(*out));
    const HloComputation& e = out->computations[static_cast<std::size_t>(out->entry)];
    // The first copy keeps the callee's names, the second gets fresh ones.
    for (const char* name : {"z", "b", "r", "z.1", "b.1", "r.1"}) CHECK(instr_named(e, name));
    const HloInstr* mul = instr_named(e, "m");
    REQUIRE(mul);
    CHECK(e.instrs[static_cast<std::size_t>(mul->operands[0].instr)].name == "r");
    CHECK(e.instrs[static_cast<std::size_t>(e.root)].name == "n");
    // An inlined instruction keeps its place in the file: r is on line 7.
    const HloInstr* r1 = instr_named(e, "r.1");
    REQUIRE(r1);
    CHECK(m.location(r1->offset).find("t.hlo:7:") == 0);
    // The written module reads back.
    const HloModule back = parse_hlo(print_hlo(*out), "back.hlo");
    CHECK_FALSE(has_calls(back));
}

TEST_CASE("HLO call inliner: the fusion pass fuses across what were calls", "[hlo]") {
    HloImportStats st;
    const Trace on = hlo_to_trace(parse_hlo(kReluCalls, "t.hlo"), HloImportOptions{}, 8, &st);
    CHECK(st.inlined_calls == 2);
    // add, relu, multiply, relu, negate: one kernel.
    CHECK(unfused_ops(on) == 1);
    CHECK(test::op_named(on, "r.1").line == 7);
    HloImportOptions off;
    off.call_inliner = false;
    HloImportStats st_off;
    const Trace t_off = hlo_to_trace(parse_hlo(kReluCalls, "t.hlo"), off, 8, &st_off);
    CHECK(st_off.inlined_calls == 0);
    CHECK(unfused_ops(t_off) > 1);  // each call's computation is fused on its own
}

TEST_CASE("HLO call inliner: a call it cannot write inline leaves the module as it is", "[hlo]") {
    // The callee reads element 0 of its tuple parameter, which is element 1 of the caller's
    // tuple: an element of an element, which HLO operands cannot name.
    const char* ordered = R"(HloModule m

inner {
  q = (f32[8], f32[8]) parameter(0)
  ROOT g = f32[8] negate(q#0)
}

ENTRY e {
  p = f32[8] parameter(0)
  pp = (f32[8], f32[8]) tuple(p, p)
  t = ((f32[8], f32[8]), (f32[8], f32[8])) tuple(pp, pp)
  ROOT c = f32[8] call(t#1), to_apply=inner
}
)";
    const HloModule m = parse_hlo(ordered, "t.hlo");
    std::int64_t n = -1;
    CHECK_FALSE(inline_calls(m, &n).has_value());
    CHECK(n == 0);
    HloImportStats st;
    const Trace t = hlo_to_trace(m, HloImportOptions{}, 8, &st);
    CHECK(st.inlined_calls == 0);
    CHECK(test::op_named(t, "g").kind == OpKind::Vector);
}
