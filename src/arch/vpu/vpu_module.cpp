#include "arch/vpu/vpu_module.h"

#include "tpusim/arch/core/core_stats.h"
#include "tpusim/common/sim_time.h"

namespace tpusim {

Vpu::Vpu(sc_core::sc_module_name name, const VpuConfig& vpu, const VmemConfig& vmem,
         std::int64_t queue_depth)
    : sc_module(name), depth_(static_cast<std::size_t>(queue_depth)), costs_(vpu, vmem) {
    core_in.bind(*this);
    SC_THREAD(run);
}

const VectorOpCost& Vpu::op_cost(const VectorOpDesc& op) { return costs_.cost(op); }

bool Vpu::full(const Instr&) const { return queue_.size() >= depth_; }

void Vpu::issue(const Instr& in, const UnitRequest& req) {
    queue_.push_back(Op{&in, req});
    pushed_.notify(sc_core::SC_ZERO_TIME);
}

void Vpu::run() {
    for (;;) {
        while (queue_.empty()) wait(pushed_);
        const Op& o = queue_.front();
        const VectorInstr& v = o.in->vec();
        const VectorOpCost& cost =
            op_cost(VectorOpDesc{v.op, v.saved_mask, v.rows, v.cols, v.in_bytes, v.out_bytes});
        const Cycle now = now_cycles();
        if (CoreStats* s = o.req.issuer.stats) {
            s->vpu_busy_cycles += cost.cycles;
            s->vpu_instructions += cost.instructions;
        }
        wait(cycles(cost.cycles));
        o.req.reply(UnitDone{now, now + cost.cycles, cost.cycles});
        queue_.pop_front();
        popped_.notify(sc_core::SC_ZERO_TIME);
    }
}

}  // namespace tpusim
