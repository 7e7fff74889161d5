#pragma once
// The vector unit of a TensorCore. Two entries, the same timing (VpuTiming):
//  - execute(program): instruction by instruction, notifying the caller's event when the
//    last instruction of each program has completed (1 SystemC ns = 1 cycle);
//  - op_cost(op): a whole lowered vector op, by the steady-state fast path (vector_cost.h),
//    exactly the cycles of executing its program; the TensorCore's vector lane uses this.
#include <cstdint>
#include <deque>
#include <systemc>

#include "tpusim/arch/vpu/vector_cost.h"
#include "tpusim/arch/vpu/vpu.h"

namespace tpusim {

class Vpu : public sc_core::sc_module {
 public:
    Vpu(sc_core::sc_module_name name, const VpuConfig& vpu, const VmemConfig& vmem);

    // Contract: programs run in the order they are handed over; a program starts issuing no
    // earlier than the cycle execute() is called and may overlap the previous program's
    // drain (in-order issue, slots and vregs carry over). `done` (may be null) is notified
    // at the cycle the program's last instruction completes. `prog` is copied.
    void execute(const VectorProgram& prog, sc_core::sc_event* done);

    // The cost of one vector op on this VPU. A pure function of the op's shape and the fixed
    // config, computed once per shape by the VPU's own cost model.
    const VectorOpCost& op_cost(const VectorOpDesc& op);

    bool busy() const { return running_ || !queue_.empty(); }
    const VpuCounters& counters() const { return timing_.counters(); }

 private:
    struct Job {
        VectorProgram prog;
        Cycle submitted;
        sc_core::sc_event* done;
    };
    void run();

    VpuTiming timing_;
    VectorCostModel costs_;
    std::deque<Job> queue_;
    sc_core::sc_event wake_;
    bool running_ = false;
};

}  // namespace tpusim
