// bf16 on the VPU: the vector unit computes only in 32-bit lanes, so a bf16 vector op does the
// f32 op's arithmetic on unpacked f32 vregs; bf16 only halves the bytes moved (VMEM here, HBM
// in the program layer) and adds the unpack / pack conversions (JAX Pallas TPU guide,
// "Elementwise operations"; docs/vpu.md, "bf16").
#include <algorithm>
#include <catch2/catch.hpp>

#include "tpusim/arch/vpu/vector_cost.h"
#include "tpusim/program/vector_lowering.h"

using namespace tpusim;

namespace {

constexpr std::size_t kValu = static_cast<std::size_t>(VUnit::Valu);

struct Pair {
    VectorOpCost f32, bf16;
};

Pair both(VectorOp op, std::int64_t rows, std::int64_t cols, const VpuConfig& vpu,
          const VmemConfig& vmem) {
    return {vector_op_cost({op, false, rows, cols, 4, 4}, vpu, vmem),
            vector_op_cost({op, false, rows, cols, 2, 2}, vpu, vmem)};
}

}  // namespace

TEST_CASE("a bf16 elementwise op is the f32 op plus bytes and pack/unpack", "[vpu][dtype]") {
    const VpuConfig vpu;
    const VmemConfig vmem;
    const std::int64_t rows = 4096, cols = 1024;
    const std::int64_t elements = rows * cols, per_vreg = vpu.elements_per_vreg();
    const std::int64_t f32_vregs = elements / per_vreg;
    // A packed bf16 vreg holds two f32 vregs' elements (16 rows of 128 lanes).
    const std::int64_t packed_vregs = f32_vregs / 2;
    const std::int64_t cvt = vpu.ops.cvt.issue_interval_cycles;
    for (VectorOp op : {VectorOp::Gelu, VectorOp::Exp, VectorOp::Add, VectorOp::Div}) {
        const int ins = op == VectorOp::Add || op == VectorOp::Div ? 2 : 1;
        INFO(vector_op_info(op).name);
        const Pair p = both(op, rows, cols, vpu, vmem);
        // Bytes: half.
        CHECK(p.bf16.vmem_bytes_loaded * 2 == p.f32.vmem_bytes_loaded);
        CHECK(p.bf16.vmem_bytes_stored * 2 == p.f32.vmem_bytes_stored);
        // Arithmetic: the same slot-cycles on every unit but the VALU, which adds two unpacks
        // per packed input vreg and one pack per packed output vreg.
        for (std::size_t u = 0; u < kVUnits; ++u) {
            if (u == kValu || u == static_cast<std::size_t>(VUnit::Vld) ||
                u == static_cast<std::size_t>(VUnit::Vst))
                continue;
            CHECK(p.bf16.busy_cycles[u] == p.f32.busy_cycles[u]);
        }
        const auto conversions = static_cast<std::uint64_t>(packed_vregs * (2 * ins + 1) * cvt);
        CHECK(p.bf16.busy_cycles[kValu] == p.f32.busy_cycles[kValu] + conversions);
        // Time: an op bound by arithmetic (VALU or EUP) runs at the f32 element rate, slowed
        // by at most the conversions on the VALU slots (plus the greedy bundle packer's loss,
        // up to ~10% for bf16: docs/vpu.md); an op bound by its VMEM port (add: two loads per
        // f32 vreg) gains only what the halved bytes give.
        const double extra = double(conversions) / double(vpu.valu_slots);
        CHECK(double(p.bf16.cycles) <= 1.10 * (double(p.f32.cycles) + extra));
        const double port =
            double(p.f32.busy_cycles[static_cast<std::size_t>(VUnit::Vld)]) / double(vpu.vld_slots);
        const double arith =
            std::max(double(p.f32.busy_cycles[kValu]) / double(vpu.valu_slots),
                     double(p.f32.busy_cycles[static_cast<std::size_t>(VUnit::Eup)]) /
                         double(vpu.eup_units));
        if (arith >= port) {
            CHECK(double(p.bf16.cycles) >= 0.97 * double(p.f32.cycles));
        } else {
            CHECK(double(p.bf16.cycles) >= std::max(arith, port / 2));
        }
    }
}

TEST_CASE("a bf16 row op is the f32 row op plus bytes and pack/unpack", "[vpu][dtype]") {
    const VpuConfig vpu;
    const VmemConfig vmem;
    for (VectorOp op : {VectorOp::Softmax, VectorOp::Layernorm}) {
        INFO(vector_op_info(op).name);
        const Pair p = both(op, 4096, 1024, vpu, vmem);
        CHECK(p.bf16.busy_cycles[static_cast<std::size_t>(VUnit::Eup)] ==
              p.f32.busy_cycles[static_cast<std::size_t>(VUnit::Eup)]);
        CHECK(p.bf16.busy_cycles[kValu] > p.f32.busy_cycles[kValu]);
        // Never faster than f32 per element: bf16 computes at the f32 rate.
        CHECK(double(p.bf16.cycles) >= 0.97 * double(p.f32.cycles));
    }
}
