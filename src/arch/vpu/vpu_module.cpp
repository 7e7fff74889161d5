#include "arch/vpu/vpu_module.h"

#include "tpusim/common/sim_time.h"

namespace tpusim {

Vpu::Vpu(sc_core::sc_module_name name, const VpuConfig& vpu, const VmemConfig& vmem)
    : sc_module(name), timing_(vpu, vmem), costs_(vpu, vmem) {
    SC_HAS_PROCESS(Vpu);
    SC_THREAD(run);
}

const VectorOpCost& Vpu::op_cost(const VectorOpDesc& op) { return costs_.cost(op); }

void Vpu::execute(const VectorProgram& prog, sc_core::sc_event* done) {
    queue_.push_back(Job{prog, now_cycles(), done});
    wake_.notify(sc_core::SC_ZERO_TIME);
}

void Vpu::run() {
    for (;;) {
        while (queue_.empty()) wait(wake_);
        running_ = true;
        Job job = std::move(queue_.front());
        queue_.pop_front();
        // The whole program is timed at once (its issue is decided by the static schedule),
        // then the thread sleeps until its completion cycle.
        timing_.advance_to(job.submitted);
        timing_.run(job.prog);
        const Cycle end = timing_.finish_cycle();
        const Cycle now = now_cycles();
        if (end > now) wait(cycles(end - now));
        if (job.done) job.done->notify(sc_core::SC_ZERO_TIME);
        running_ = false;
    }
}

}  // namespace tpusim
