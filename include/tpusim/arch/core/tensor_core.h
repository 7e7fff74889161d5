#pragma once
// TensorCore: its child modules are the Sequencer (scalar unit) issuing the core's instruction
// stream in order, the Vmem and the units it holds (the DmaEngine, Mxu x core.mxus, the Vpu);
// through unit_out it reaches every unit, its own and the chip's (the collective rendezvous of
// the ICI, the host link), alike: one port per Unit, one interface (UnitIf, unit_if.h).
//
// Timing: the sequencer issues at most one instruction per slot class per cycle (a VLIW
// bundle), after the instructions it waits on have completed (sync flags) and when the target
// unit is not full. Each unit owns its queue and its SystemC process and runs its queue in
// order, timed by the plain C++ models inside it: each Mxu (its fidelity's block timer), the
// Vpu (vector_op_cost), the DMA engines and the HBM behind them, the ICI network behind the
// rendezvous. A unit tells the core what each instruction did (UnitDone); the core delivers
// the completion at its cycle, counts it in the op's timing and draws it on the unit's track.
#include <array>
#include <cstdint>
#include <memory>
#include <queue>
#include <string>
#include <systemc>
#include <vector>

#include "tpusim/arch/core/core_stats.h"
#include "tpusim/arch/core/unit_if.h"
#include "tpusim/arch/event_queue.h"
#include "tpusim/arch/memory/dma_engine.h"
#include "tpusim/arch/memory/vmem_module.h"
#include "tpusim/arch/mxu/mxu.h"
#include "tpusim/arch/vpu/vector_cost.h"
#include "tpusim/config/core_config.h"
#include "tpusim/config/memory_config.h"
#include "tpusim/config/mxu_config.h"
#include "tpusim/config/sequencer_config.h"
#include "tpusim/config/vpu_config.h"
#include "tpusim/program/program.h"
#include "tpusim/program/vector_lowering.h"
#include "tpusim/stats/timeline.h"

namespace tpusim {

class Vpu;
class Sequencer;

struct TensorCoreConfigs {
    const CoreConfig& core;
    const SequencerConfig& sequencer;
    const MxuConfig& mxu;
    const VpuConfig& vpu;
    const VmemConfig& vmem;
    const DmaConfig& dma;
    MxuFidelity mxu_fidelity = MxuFidelity::Tile;
    std::int64_t cores_per_chip = 1;  // a core's index on its chip is id % cores_per_chip
    Bytes hbm_capacity_bytes = 0;     // the chip's HBM: the DMA engines' range check
    // How the chip's HBM answers the DMA engines (sim.hbm_model: burst blocks, calibrated
    // annotates).
    DmaEngine::HbmTiming hbm_timing = DmaEngine::HbmTiming::Blocking;
};

// Loop reuse (docs/program.md, "Loops") watches trip boundaries: instruction indices, each
// the first of a loop trip. Boundary k is reached on a core when every instruction below it
// has completed there; it issues when that instruction does.
class TripObserver {
 public:
    virtual ~TripObserver() = default;
    // Every instruction below boundary k completed on `core`, at the current cycle; `released`:
    // one of the instructions that completed in this cycle is among the boundary's data waits.
    virtual void reached(std::int64_t core, std::size_t k, bool released) = 0;
    // Boundary k's instruction issued on `core` at the current cycle; `clean`: every
    // instruction before it had completed and none issued earlier in this cycle.
    virtual void issued(std::int64_t core, std::size_t k, bool clean) = 0;
};

class TensorCore : public sc_core::sc_module, public UnitDoneIf {
 public:
    // One port per unit, indexed by Unit: dma_out, mxu_out (one binding per MXU, in
    // MatmulInstr::mxu order), vpu_out, ici_out, host_out. The core binds those of the units it
    // holds; the chip binds ici_out and host_out before the simulation starts (unit_if.h has
    // the contract).
    sc_core::sc_vector<sc_core::sc_port<UnitIf, 0>> unit_out;
    // Where the units send completions: every request carries UnitReply{&*done_in,
    // instruction index}.
    sc_core::sc_export<UnitDoneIf> done_in{"done_in"};

    SC_HAS_PROCESS(TensorCore);
    TensorCore(sc_core::sc_module_name name, std::int64_t id, const TensorCoreConfigs& cfg,
               Timeline* timeline);

    sc_core::sc_port<UnitIf, 0>& unit_port(Unit u) { return unit_out[static_cast<std::size_t>(u)]; }

    // Contract: called before sc_start; `program` and `ops` outlive the simulation.
    void load(const CoreProgram& program, const std::vector<OpInfo>& ops);
    // Tells `observer` of the boundaries (ascending instruction indices, none 0), each with
    // the sorted waits of its instruction that are data dependencies; before sc_start.
    void watch(std::vector<std::size_t> boundaries,
               std::vector<std::vector<std::uint32_t>> data_waits, TripObserver* observer) {
        boundaries_ = std::move(boundaries);
        data_waits_ = std::move(data_waits);
        observer_ = observer;
    }
    // Writes the timeline spans still open; call once after the simulation.
    void flush_timeline();

    ~TensorCore() override;
    bool finished() const { return finished_; }
    std::size_t completed() const { return done_.size() - remaining_; }  // instructions
    Cycle end_cycle() const { return end_cycle_; }
    const CoreStats& stats() const { return stats_; }
    DmaEngine& dma_engine() { return *dma_; }

 private:
    class IssueTarget;  // the sequencer's view of the core (IssueIf)
    void end_of_elaboration() override;
    UnitIf& unit(const Instr& in) const {
        return *units_[static_cast<std::size_t>(in.unit)][unit_instance(in)];
    }
    void on_completion();
    void issue(std::uint32_t idx, Cycle stall);
    // UnitDoneIf: instruction `tag` (its index) completed.
    void done(std::uint64_t tag, const UnitDone& d) override;
    // Records [start, end) of `op` on one unit's timeline track (an index into open_spans_).
    void span(std::size_t track, std::uint32_t op, Cycle start, Cycle end);

    std::int64_t id_;
    TensorCoreConfigs cfg_;
    Timeline* timeline_;
    const CoreProgram* program_ = nullptr;
    Issuer issuer_;
    std::unique_ptr<IssueTarget> issue_target_;
    std::unique_ptr<Vmem> vmem_;
    std::unique_ptr<DmaEngine> dma_;
    std::unique_ptr<Sequencer> sequencer_;
    sc_core::sc_vector<Mxu> mxus_;  // core.mxus of them: mxu_0, mxu_1, ...
    std::unique_ptr<Vpu> vpu_;
    // Per Unit, the units bound to its port (known once elaborated), and the first of their
    // timeline tracks (one track per unit, in unit_out order).
    std::array<std::vector<UnitIf*>, kUnitCount> units_;
    std::array<std::size_t, kUnitCount> first_track_{};
    std::vector<std::uint8_t> done_;
    // Lowest instruction not yet completed: the core reads none below it again, so a streamed
    // program may free them (SharedInstrs::release).
    std::size_t first_pending_ = 0;
    std::size_t reader_ = 0;
    sc_core::sc_event progress_;
    EventQueue completion_q_;
    struct Pending {
        Cycle t;
        std::uint32_t idx;
        bool operator>(const Pending& o) const { return t > o.t; }
    };
    std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> pending_;
    const std::vector<OpInfo>* ops_ = nullptr;
    bool finished_ = false;
    Cycle end_cycle_ = 0;
    std::size_t remaining_ = 0;
    CoreStats stats_;
    // Timeline: one open (mergeable) span per unit track.
    struct OpenSpan {
        std::uint32_t track = 0;  // Timeline handle
        std::uint32_t op = ~0u;
        Cycle start = 0, end = 0;
    };
    std::vector<OpenSpan> open_spans_;
    // Trip boundaries (watch()): the next to be reached and the next to issue.
    std::vector<std::size_t> boundaries_;
    std::vector<std::vector<std::uint32_t>> data_waits_;
    TripObserver* observer_ = nullptr;
    std::vector<std::uint32_t> completed_now_;  // instructions completed at completed_at_
    Cycle completed_at_ = ~Cycle{0};
    std::size_t next_reached_ = 0, next_issued_ = 0;
    Cycle last_issue_ = ~Cycle{0};  // cycle of the last issue; none yet: ~0
};

}  // namespace tpusim
