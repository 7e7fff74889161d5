// The software pipeline of a lowered vector loop: a modulo schedule derived from the VPU's own
// timing of one iteration, listed as an instruction stream for the in-order VPU.
#include <algorithm>
#include <numeric>
#include <tuple>

#include "tpusim/arch/vpu/vector_cost.h"

namespace tpusim {

void schedule_loop(VectorLoop& loop, const VpuConfig& vpu, const VmemConfig& vmem) {
    // One iteration alone on the VPU gives each instruction's earliest issue time t_j under
    // the op table, the slots and the VMEM ports (constants count as ready).
    VpuTiming one(vpu, vmem);
    std::vector<Cycle> t;
    t.reserve(loop.body.size());
    for (const VInstr& in : loop.body) t.push_back(one.issue(in));

    // The initiation interval II = ii_num / ii_den cycles, a fraction so that e.g. 9
    // slot-cycles on 2 VALU slots give 4.5 and not 5. Resource bound: the busiest unit's
    // slot-cycles per iteration over its slots. Register bound: iteration i + reg_sets reuses
    // iteration i's vregs, so it is listed only after iteration i's last instruction.
    const std::int64_t slots[kVUnits] = {vpu.valu_slots, vpu.vld_slots, vpu.vst_slots,
                                         vpu.xlu.units, vpu.eup_units};
    Cycle num = 1, den = 1;
    auto at_least = [&](Cycle n, Cycle d) {
        if (n * den > num * d) {
            num = n;
            den = d;
        }
    };
    for (std::size_t u = 0; u < kVUnits; ++u) {
        at_least(one.counters().busy_cycles[u], static_cast<Cycle>(slots[u]));
    }
    const Cycle span = t.empty() ? 0 : t.back() + 1;  // in-order: the last issues last
    at_least(span, static_cast<Cycle>(loop.reg_sets));
    const Cycle g = std::gcd(num, den);
    loop.ii_num = num / g;
    loop.ii_den = den / g;

    // Instruction j of iteration i sits at kernel position i * num + t_j * den (in units of
    // 1/den cycle); stage_j = floor(t_j / II), its offset in the chunk the remainder.
    std::vector<Cycle> offset(loop.body.size());
    loop.stage.resize(loop.body.size());
    for (std::size_t j = 0; j < t.size(); ++j) {
        loop.stage[j] = static_cast<int>(t[j] * loop.ii_den / loop.ii_num);
        offset[j] = t[j] * loop.ii_den - static_cast<Cycle>(loop.stage[j]) * loop.ii_num;
    }
    loop.kernel_order.resize(loop.body.size());
    std::iota(loop.kernel_order.begin(), loop.kernel_order.end(), 0);
    std::stable_sort(loop.kernel_order.begin(), loop.kernel_order.end(), [&](int a, int b) {
        // Kernel position first; at the same position the older iteration (larger stage)
        // first, which keeps every iteration's own instructions in their original order.
        return std::make_tuple(offset[a], -loop.stage[a], a) <
               std::make_tuple(offset[b], -loop.stage[b], b);
    });
}

VectorLoop scheduled_vector_loop(const VectorOpDesc& d, const VpuConfig& vpu,
                                 const VmemConfig& vmem) {
    VectorLoop loop = lower_vector_loop(d, vpu);
    schedule_loop(loop, vpu, vmem);
    return loop;
}

std::vector<VInstr> emit_chunk(const VectorLoop& loop, std::int64_t g, std::int64_t iterations) {
    Bytes load_bytes = 0, store_bytes = 0;
    for (const VInstr& in : loop.body) {
        if (in.op == VOp::Load) load_bytes += in.bytes;
        if (in.op == VOp::Store) store_bytes += in.bytes;
    }
    std::vector<VInstr> out;
    out.reserve(loop.body.size());
    for (int j : loop.kernel_order) {
        const std::int64_t i = g - loop.stage[j];
        if (i < 0 || i >= iterations) continue;
        VInstr x = loop.body[j];
        const auto off = static_cast<std::int16_t>((i % loop.reg_sets) * loop.body_regs);
        if (x.dst >= loop.const_regs) x.dst = static_cast<std::int16_t>(x.dst + off);
        for (auto& r : x.src) {
            if (r >= loop.const_regs) r = static_cast<std::int16_t>(r + off);
        }
        if (x.op == VOp::Load) x.addr += static_cast<Addr>(i) * load_bytes;
        if (x.op == VOp::Store) x.addr += static_cast<Addr>(i) * store_bytes;
        out.push_back(x);
    }
    return out;
}

VectorProgram lower_vector_op(const VectorOpDesc& d, const VpuConfig& vpu, const VmemConfig& vmem) {
    const VectorLoop loop = scheduled_vector_loop(d, vpu, vmem);
    VectorProgram p;
    p.instrs = loop.prologue;
    for (std::int64_t g = 0; g < loop.chunks(); ++g) {
        std::vector<VInstr> c = emit_chunk(loop, g, loop.iterations);
        p.instrs.insert(p.instrs.end(), c.begin(), c.end());
    }
    return p;
}

}  // namespace tpusim
