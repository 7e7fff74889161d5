#pragma once
// The vector unit of a TensorCore as the unit the core, and the tests, issue vector
// instructions to through core_in (UnitIf, tpusim/arch/core/unit_if.h). It owns its queue
// (sequencer.unit_queue_depth instructions) and one SystemC thread that runs them in order:
// a vector instruction is a whole lowered vector op over a VMEM-resident chunk, its cycles
// those of its loop on VpuTiming by the steady-state fast path (vector_cost.h), exactly the
// cycles of executing its program; the thread sleeps that long, then tells the completion
// and frees the slot.
#include <cstdint>
#include <deque>
#include <string>
#include <systemc>

#include "tpusim/arch/core/unit_if.h"
#include "tpusim/arch/vpu/vector_cost.h"
#include "tpusim/arch/vpu/vpu.h"

namespace tpusim {

class Vpu : public sc_core::sc_module, public UnitIf {
 public:
    sc_core::sc_export<UnitIf> core_in{"core_in"};

    // `queue_depth`: instructions issued and not yet completed (sequencer.unit_queue_depth).
    SC_HAS_PROCESS(Vpu);
    Vpu(sc_core::sc_module_name name, const VpuConfig& vpu, const VmemConfig& vmem,
        std::int64_t queue_depth);

    // UnitIf: a vector instruction (VectorInstr).
    bool full(const Instr& in) const override;
    const sc_core::sc_event& freed(const Instr&) const override { return popped_; }
    void issue(const Instr& in, const UnitRequest& req) override;
    std::string track_name() const override { return "VPU"; }

    // The cost of one vector op on this VPU. A pure function of the op's shape and the fixed
    // config, computed once per shape by the VPU's own cost model (a program repeats a few
    // chunk shapes thousands of times).
    const VectorOpCost& op_cost(const VectorOpDesc& op);

 private:
    struct Op {
        const Instr* in;
        UnitRequest req;
    };
    void run();

    std::size_t depth_;
    VectorCostModel costs_;
    std::deque<Op> queue_;
    sc_core::sc_event pushed_, popped_;
};

}  // namespace tpusim
