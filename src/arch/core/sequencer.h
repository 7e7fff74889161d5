#pragma once
// The TensorCore's sequencer (scalar unit): issues the core's instruction stream in order,
// one VLIW bundle per cycle. Internal to the TensorCore, which it reaches through `core_out`.
//
// Timing: an instruction issues after every instruction it waits on has completed (plus
// sequencer.sync_latency_cycles when it had to wait), when its unit has room, and when its
// slot class still has a free slot in the current bundle; otherwise in the next cycle.
#include <cstdint>
#include <systemc>

#include "tpusim/common/types.h"
#include "tpusim/config/sequencer_config.h"
#include "tpusim/program/program.h"

namespace tpusim {

// What the sequencer sees of its core: completion flags, unit queues, the issue itself.
// Contract: the events are notified whenever the answer of the matching query may change.
class IssueIf : public virtual sc_core::sc_interface {
 public:
    virtual bool completed(std::uint32_t idx) const = 0;
    virtual const sc_core::sc_event& progress_event() const = 0;  // an instruction completed
    virtual bool unit_full(const Instr& in) const = 0;
    virtual const sc_core::sc_event& unit_freed(const Instr& in) const = 0;
    // Hands instruction `idx` to its unit at the current cycle; `stall`: cycles it waited.
    virtual void issue(std::uint32_t idx, Cycle stall) = 0;
};

class Sequencer : public sc_core::sc_module {
 public:
    sc_core::sc_port<IssueIf> core_out{"core_out"};

    SC_HAS_PROCESS(Sequencer);
    Sequencer(sc_core::sc_module_name name, const SequencerConfig& cfg);
    // Contract: called before sc_start; `program` outlives the simulation.
    void load(const CoreProgram& program) { program_ = &program; }

 private:
    // The SC_THREAD: issues the program, then parks on `never_` instead of returning. SystemC
    // 2.3.4 leaves a thread process that ends without telling AddressSanitizer about the switch
    // away from its stack (include/tpusim/common/sanitizer.h), so ASan would take the ended
    // thread's stack for the next thread's and warn "ignoring requested
    // __asan_handle_no_return" inside the simulation; a parked thread switches with yield(),
    // which is annotated. Parking changes no cycle: nothing waits for the thread to end.
    void run();
    void issue_program();

    SequencerConfig cfg_;
    const CoreProgram* program_ = nullptr;
    sc_core::sc_event never_;  // never notified
};

}  // namespace tpusim
