// VpuTiming: bundle slots, issue intervals, the register scoreboard and VMEM port widths.
// Expected cycles are derived from the config in each test.
#include <algorithm>
#include <catch2/catch.hpp>

#include "../test_util.h"
#include "tpusim/arch/vpu/vpu.h"
#include "tpusim/common/error.h"
#include "tpusim/config/tpu_config.h"

using namespace tpusim;

namespace {

VInstr alu(VOp op, int dst, int a = -1, int b = -1) {
    VInstr i;
    i.op = op;
    i.dst = static_cast<std::int16_t>(dst);
    i.src = {static_cast<std::int16_t>(a), static_cast<std::int16_t>(b), -1};
    return i;
}

VInstr mem(VOp op, int reg, std::uint32_t bytes) {
    VInstr i;
    i.op = op;
    if (op == VOp::Load) i.dst = static_cast<std::int16_t>(reg);
    if (op == VOp::Store) i.src[0] = static_cast<std::int16_t>(reg);
    i.bytes = bytes;
    return i;
}

// n independent ops of one kind: sources v0, v1 (never written), destinations rotate v2..v31.
VectorProgram independent(VOp op, int n) {
    VectorProgram p;
    for (int i = 0; i < n; ++i) p.instrs.push_back(alu(op, 2 + i % 30, 0, 1));
    return p;
}

}  // namespace

TEST_CASE("independent adds issue valu_slots per cycle", "[vpu]") {
    for (std::int64_t slots : {1, 2, 4}) {
        VpuConfig vpu;
        vpu.valu_slots = slots;
        VpuTiming t(vpu, VmemConfig{});
        const int n = 64;
        t.run(independent(VOp::Add, n));
        // Bundles of `slots` adds at cycles 0, 1, ...; the last result lands one add latency
        // after the last bundle.
        const Cycle expected = ceil_div(n, slots) - 1 + vpu.ops.add.latency_cycles;
        CHECK(t.finish_cycle() == expected);
        CHECK(t.counters().instructions == static_cast<std::uint64_t>(n));
        CHECK(t.counters().busy_cycles[0] ==
              static_cast<std::uint64_t>(n * vpu.ops.add.issue_interval_cycles));
    }
}

TEST_CASE("a dependent chain takes n latencies", "[vpu]") {
    VpuConfig vpu;
    vpu.ops.mul.latency_cycles = 5;
    VpuTiming t(vpu, VmemConfig{});
    const int n = 20;
    VectorProgram p;
    for (int i = 0; i < n; ++i) p.instrs.push_back(alu(VOp::Mul, 2, 2, 1));  // v2 = v2 * v1
    t.run(p);
    CHECK(t.finish_cycle() == static_cast<Cycle>(n * vpu.ops.mul.latency_cycles));
}

TEST_CASE("transcendentals issue at the EUP's interval", "[vpu]") {
    for (std::int64_t units : {1, 2}) {
        VpuConfig vpu;
        vpu.eup_units = units;
        for (VOp op : {VOp::Exp, VOp::Tanh, VOp::Rsqrt}) {
            VpuTiming t(vpu, VmemConfig{});
            const int n = 40;
            t.run(independent(op, n));
            const VpuOpTiming& e = op == VOp::Exp    ? vpu.ops.exp
                                   : op == VOp::Tanh ? vpu.ops.tanh
                                                     : vpu.ops.rsqrt;
            // Each EUP unit takes one every issue_interval cycles (the one-cycle push on a
            // VALU slot is never the limit with intervals >= 1 and 2 VALU slots).
            const Cycle last_issue = (ceil_div(n, units) - 1) * e.issue_interval_cycles;
            CHECK(t.finish_cycle() == last_issue + e.latency_cycles);
            CHECK(t.counters().busy_cycles[static_cast<std::size_t>(VUnit::Valu)] == Cycle(n));
            CHECK(t.counters().busy_cycles[static_cast<std::size_t>(VUnit::Eup)] ==
                  Cycle(n) * e.issue_interval_cycles);
        }
    }
}

TEST_CASE("EUP pushes compete with ALU ops for the VALU slots", "[vpu]") {
    VpuConfig vpu;
    vpu.valu_slots = 1;
    vpu.ops.exp.issue_interval_cycles = 1;
    VpuTiming t(vpu, VmemConfig{});
    const int n = 30;
    VectorProgram p;
    for (int i = 0; i < n; ++i) {
        p.instrs.push_back(alu(VOp::Exp, 2 + i % 15, 0));
        p.instrs.push_back(alu(VOp::Add, 17 + i % 15, 0, 1));
    }
    Cycle last = 0;
    for (const VInstr& in : p.instrs) last = std::max(last, t.issue(in));
    // One VALU slot: the push and the add take a cycle each, 2n issues back to back.
    CHECK(last == Cycle(2 * n - 1));
}

TEST_CASE("vector loads and stores are limited by slots and VMEM port width", "[vpu]") {
    VpuConfig vpu;
    VmemConfig vmem;
    const std::uint32_t vreg_bytes = static_cast<std::uint32_t>(vpu.elements_per_vreg() * 4);
    const int n = 32;
    for (std::int64_t port : {vmem.load_bytes_per_cycle, vmem.load_bytes_per_cycle / 4}) {
        vmem.load_bytes_per_cycle = port;
        vmem.store_bytes_per_cycle = port;
        const Cycle occ = ceil_div(vreg_bytes, port);  // cycles one vreg holds the port
        VpuTiming ld(vpu, vmem);
        VectorProgram p;
        for (int i = 0; i < n; ++i) p.instrs.push_back(mem(VOp::Load, i % 32, vreg_bytes));
        ld.run(p);
        // One load slot: a load every `occ` cycles; the data arrives vld_latency after the
        // port transfer starts, plus the rest of the transfer.
        CHECK(ld.finish_cycle() == (n - 1) * occ + vpu.vld_latency_cycles + occ - 1);
        CHECK(ld.counters().vmem_bytes_loaded == Bytes{n} * vreg_bytes);

        VpuTiming st(vpu, vmem);
        VectorProgram q;
        for (int i = 0; i < n; ++i) q.instrs.push_back(mem(VOp::Store, i % 32, vreg_bytes));
        st.run(q);
        CHECK(st.finish_cycle() == n * occ);
        CHECK(st.counters().vmem_bytes_stored == Bytes{n} * vreg_bytes);
    }
}

TEST_CASE("one bundle holds a load, two ALU ops and a store", "[vpu]") {
    VpuConfig vpu;
    VpuTiming t(vpu, VmemConfig{});
    const std::uint32_t vreg_bytes = static_cast<std::uint32_t>(vpu.elements_per_vreg() * 4);
    const int n = 50;
    VectorProgram p;
    for (int i = 0; i < n; ++i) {  // all independent: loads into v2..v9, adds into v10..v29
        p.instrs.push_back(mem(VOp::Load, 2 + i % 8, vreg_bytes));
        p.instrs.push_back(alu(VOp::Add, 10 + (2 * i) % 20, 0, 1));
        p.instrs.push_back(alu(VOp::Add, 11 + (2 * i) % 20, 0, 1));
        p.instrs.push_back(mem(VOp::Store, 31, vreg_bytes));
    }
    Cycle last = 0;
    for (const VInstr& in : p.instrs) last = std::max(last, t.issue(in));
    // With 1 vld, 2 valu and 1 vst slot every group of four fits one bundle: the last one
    // issues at cycle n - 1; the load's latency is the longest.
    REQUIRE(vpu.valu_slots == 2);
    CHECK(last == static_cast<Cycle>(n - 1));
    CHECK(t.finish_cycle() == static_cast<Cycle>(n - 1 + vpu.vld_latency_cycles));
}

TEST_CASE("the bundle packer hoists independent work within its window", "[vpu]") {
    VpuConfig vpu;
    for (std::int64_t window : {std::int64_t{1}, vpu.schedule_window_instrs}) {
        vpu.schedule_window_instrs = window;
        VpuTiming t(vpu, VmemConfig{});
        t.issue(alu(VOp::Exp, 2, 0));                     // cycle 0
        const Cycle dep = t.issue(alu(VOp::Add, 3, 2));   // waits for exp's result
        const Cycle c = t.issue(alu(VOp::Add, 4, 0, 1));  // independent
        CHECK(dep == static_cast<Cycle>(vpu.ops.exp.latency_cycles));
        // Window 1 is strict in-order issue; a wider window fills the free slot at cycle 0.
        CHECK(c == (window == 1 ? dep : Cycle{0}));
    }
}

TEST_CASE("WAR: a write lands after the last read of its register", "[vpu]") {
    VpuConfig vpu;
    VpuTiming t(vpu, VmemConfig{});
    t.issue(alu(VOp::Exp, 2, 0));
    const Cycle rd = t.issue(alu(VOp::Add, 3, 2, 1));  // reads v2 and v1
    const Cycle wr = t.issue(alu(VOp::Add, 1, 0, 0));  // overwrites v1
    CHECK(wr + vpu.ops.add.latency_cycles > rd);
    CHECK(wr + vpu.ops.add.latency_cycles == rd + 1);
}

TEST_CASE("WAW: a short op does not land before an older long op on the same vreg", "[vpu]") {
    VpuConfig vpu;
    VpuTiming t(vpu, VmemConfig{});
    t.issue(alu(VOp::Tanh, 2, 0));
    const Cycle c = t.issue(alu(VOp::Add, 2, 0, 1));
    CHECK(c + vpu.ops.add.latency_cycles == static_cast<Cycle>(vpu.ops.tanh.latency_cycles));
}

TEST_CASE("vregs outside the register file are rejected", "[vpu]") {
    VpuConfig vpu;
    VpuTiming t(vpu, VmemConfig{});
    CHECK_THROWS_AS(t.issue(alu(VOp::Add, static_cast<int>(vpu.vregs), 0, 1)),
                    std::invalid_argument);
}

TEST_CASE("relative state repeats for a repeating pattern", "[vpu]") {
    VpuConfig vpu;
    vpu.schedule_window_instrs = 8;  // shorter than the pattern, so one run fills it
    VpuTiming t(vpu, VmemConfig{});
    const VectorProgram p = independent(VOp::Add, 30);
    t.run(p);
    t.run(p);
    const auto s1 = t.relative_state();
    const Cycle c1 = t.front_cycle();
    t.run(p);
    CHECK(t.relative_state() == s1);
    CHECK(t.front_cycle() - c1 == ceil_div(30, vpu.valu_slots));
}

TEST_CASE("bad VPU config values are rejected", "[vpu][config]") {
    const std::string cfg = tpusim::test::config_path("tpu_v3_8.json");
    for (const char* bad :
         {"vpu.valu_slots=0", "vpu.vld_slots=-1", "vpu.ops.exp.latency_cycles=0",
          "vpu.ops.tanh.issue_interval_cycles=0", "vpu.xlu.units=0",
          "vpu.xlu.transpose.latency_cycles=1.5", "vpu.vregs=4", "vpu.ops.fma.nonsense=3"}) {
        INFO(bad);
        CHECK_THROWS_AS(load_config(cfg, {bad}), InputError);
    }
    const TpuConfig ok = load_config(cfg, {"vpu.ops.exp.issue_interval_cycles=8"});
    CHECK(ok.vpu.ops.exp.issue_interval_cycles == 8);
}
