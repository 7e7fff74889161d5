#pragma once
// Vector unit (VPU) and cross-lane unit (XLU) of a TensorCore. Figures: 8 sublanes x 128 lanes
// of 32-bit ALUs, 2 ALUs per lane-sublane, 32 vregs, a VLIW bundle with 2 vector ALU slots,
// 1 vector load and 1 vector store slot [HC20]. Per-op issue intervals and latencies are not
// published: the defaults are documented assumptions (docs/vpu.md, "Op table").
#include <cstdint>

#include "tpusim/config/visitor.h"

namespace tpusim {

// Timing of one vector op class: `issue_interval_cycles` is how long the op holds the slot
// (or unit) it issues on before that slot accepts the next op; `latency_cycles` is the time
// from issue until a dependent op may issue.
struct VpuOpTiming {
    std::int64_t issue_interval_cycles = 1;
    std::int64_t latency_cycles = 2;

    void visit(ConfigVisitor& v) {
        v.value("issue_interval_cycles", issue_interval_cycles, Limits::range(1, 1024), "cycles",
                "cycles between two issues of this op on one slot");
        v.value("latency_cycles", latency_cycles, Limits::range(1, 4096), "cycles",
                "issue to result ready for a dependent op");
    }
};

// One entry per op class the lowering emits. Simple ALU ops are single-issue, short-latency
// pipelines on a vector ALU slot. Transcendentals (exp, log, rsqrt, reciprocal, tanh) go to
// the EUP, a separate function unit that a VALU slot feeds (one push cycle) and whose results
// are popped back into a vreg; their interval is the EUP's, their latency push to pop.
struct VpuOpTable {
    VpuOpTiming add{1, 2};         // add, sub, and integer/logic ops (and, xor, shift)
    VpuOpTiming mul{1, 2};         // f32 multiply
    VpuOpTiming fma{1, 4};         // fused multiply-add (used only when has_fma)
    VpuOpTiming max{1, 2};         // max, min
    VpuOpTiming cmp_select{1, 2};  // compare, select, splat of a scalar into a vreg
    VpuOpTiming exp{4, 16};        // EUP
    VpuOpTiming log{4, 16};
    VpuOpTiming rsqrt{2, 12};
    VpuOpTiming reciprocal{2, 12};
    VpuOpTiming tanh{4, 16};
    VpuOpTiming cvt{1, 2};  // bf16 <-> f32 pack / unpack

    void visit(ConfigVisitor& v) {
        v.section("add", add, "add / sub / integer and logic ops");
        v.section("mul", mul, "multiply");
        v.section("fma", fma, "fused multiply-add");
        v.section("max", max, "max / min");
        v.section("cmp_select", cmp_select, "compare, select, scalar splat");
        v.section("exp", exp, "exponential (transcendental unit)");
        v.section("log", log, "logarithm (transcendental unit)");
        v.section("rsqrt", rsqrt, "reciprocal square root (transcendental unit)");
        v.section("reciprocal", reciprocal, "reciprocal (transcendental unit)");
        v.section("tanh", tanh, "hyperbolic tangent (transcendental unit)");
        v.section("cvt", cvt, "bf16 <-> f32 conversion (pack / unpack)");
    }
};

// Cross-lane unit: reductions across the 128 lanes of each sublane, lane broadcasts and
// 8 x 128 block transposes.
struct XluConfig {
    std::int64_t units = 1;
    VpuOpTiming reduce{4, 16};     // 128-lane reduction of every sublane of one vreg
    VpuOpTiming broadcast{1, 4};   // replicate lane 0 of every sublane across the lanes
    VpuOpTiming transpose{8, 32};  // one 8 x 128 block into the transpose network

    void visit(ConfigVisitor& v) {
        v.value("units", units, Limits::range(1, 16), "units", "cross-lane units per core");
        v.section("reduce", reduce, "lane reduction of one vreg");
        v.section("broadcast", broadcast, "lane broadcast of one vreg");
        v.section("transpose", transpose, "transpose of one 8 x 128 block");
    }
};

// Vector unit: sublanes x lanes of 32-bit ALUs [HC20].
struct VpuConfig {
    std::int64_t sublanes = 8;
    std::int64_t lanes = 128;
    std::int64_t alus_per_lane = 2;
    std::int64_t vregs = 32;
    std::int64_t valu_slots = 2;  // vector ALU slots per VLIW bundle [HC20]
    std::int64_t vld_slots = 1;
    std::int64_t vst_slots = 1;
    std::int64_t eup_units = 1;
    std::int64_t vld_latency_cycles = 4;  // assumption: VMEM is an SRAM next to the VPU
    // No fused multiply-add: a TPU v4 VPU was observed to have none (vmul then vadd); v2/v3 are
    // assumed alike. With has_fma the lowering emits fma where a*b+c appears.
    bool has_fma = false;
    // The VPU is statically scheduled (VLIW): the compiler packs instructions into bundles.
    // VpuTiming models that packing as a list scheduler that may move an instruction ahead of
    // at most this many older ones (1: strictly in-order issue).
    std::int64_t schedule_window_instrs = 64;
    VpuOpTable ops;
    XluConfig xlu;

    std::int64_t elements_per_vreg() const { return sublanes * lanes; }

    void visit(ConfigVisitor& v) {
        v.value("sublanes", sublanes, Limits::pow2_max(64), "sublanes", "vector sublanes");
        v.value("lanes", lanes, Limits::pow2_max(1024), "lanes", "vector lanes");
        v.value("alus_per_lane", alus_per_lane, Limits::range(1, 8), "ALUs",
                "32-bit ALUs per lane and sublane");
        v.value("vregs", vregs, Limits::range(8, 1024), "registers", "vector registers");
        v.value("valu_slots", valu_slots, Limits::range(1, 8), "slots",
                "vector ALU slots per bundle");
        v.value("vld_slots", vld_slots, Limits::range(1, 8), "slots",
                "vector load slots per bundle");
        v.value("vst_slots", vst_slots, Limits::range(1, 8), "slots",
                "vector store slots per bundle");
        v.value("eup_units", eup_units, Limits::range(1, 8), "units",
                "transcendental (EUP) units fed by the vector ALU slots");
        v.value("has_fma", has_fma, "vector ALUs have a fused multiply-add");
        v.value("schedule_window_instrs", schedule_window_instrs, Limits::range(1, 4096),
                "instructions", "how far the bundle packer may hoist an instruction");
        v.value("vld_latency_cycles", vld_latency_cycles, Limits::range(1, 1024), "cycles",
                "vector load issue to data in the vreg");
        v.section("ops", ops, "per-op issue interval and latency");
        v.section("xlu", xlu, "cross-lane unit");
    }
};

}  // namespace tpusim
