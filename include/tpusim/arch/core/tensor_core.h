#pragma once
// TensorCore: its child modules are the Sequencer (scalar unit) issuing the core's instruction
// stream in order, the units it drives (Mxu x core.mxus, the Vpu), the Vmem and the core's
// DmaEngine; through its ports it reaches the chip's HBM, the ICI (collectives)
// and the host link.
//
// Timing: the sequencer issues at most one instruction per slot class per cycle (a VLIW
// bundle), after the instructions it waits on have completed (sync flags) and when the target
// unit's queue has room. Units run their queue in order; their timing comes from the plain
// C++ models inside the unit modules: each Mxu (its fidelity's block timer), the Vpu
// (vector_op_cost), the DMA engines and the HBM behind them, the ICI network behind ici_out.
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <systemc>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "tpusim/arch/core/core_ports.h"
#include "tpusim/arch/core/core_stats.h"
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
    MxuFidelity mxu_fidelity = MxuFidelity::tile;
    std::int64_t cores_per_chip = 1;  // a core's index on its chip is id % cores_per_chip
    Bytes hbm_capacity_bytes = 0;     // the chip's HBM: the DMA engines' range check
    // How the chip's HBM answers the DMA engines (sim.hbm_model: burst blocks, calibrated
    // annotates).
    DmaEngine::HbmTiming hbm_timing = DmaEngine::HbmTiming::blocking;
};

class TensorCore : public sc_core::sc_module, public CompletionIf {
 public:
    // Bound by the chip before the simulation starts (core_ports.h has the contracts);
    // dma_out by the core itself to its DmaEngine when it has one.
    sc_core::sc_port<DmaIf> dma_out{"dma_out"};
    sc_core::sc_port<CollectiveIf> ici_out{"ici_out"};
    sc_core::sc_port<HostIf> host_out{"host_out"};
    // Where the targets of those ports send completions: every request carries
    // ReplyTo{&*done_in, instruction index}.
    sc_core::sc_export<CompletionIf> done_in{"done_in"};

    SC_HAS_PROCESS(TensorCore);
    TensorCore(sc_core::sc_module_name name, std::int64_t id, const TensorCoreConfigs& cfg,
               Timeline* timeline);

    // Contract: called before sc_start; `program` and `ops` outlive the simulation.
    void load(const CoreProgram& program, const std::vector<OpInfo>& ops);
    // Writes the timeline spans still open; call once after the simulation.
    void flush_timeline();

    ~TensorCore() override;
    bool finished() const { return finished_; }
    std::size_t completed() const { return done_.size() - remaining_; }  // instructions
    Cycle end_cycle() const { return end_cycle_; }
    const CoreStats& stats() const { return stats_; }
    DmaEngine& dma_engine() { return *dma_; }

 private:
    struct Lane {  // one unit's queue
        std::deque<std::uint32_t> queue;
        sc_core::sc_event pushed, popped;
    };
    class IssueTarget;  // the sequencer's view of the core (IssueIf)
    void mxu_lane(std::size_t x);
    void vpu_lane();
    void on_completion();
    void issue(std::uint32_t idx, Cycle stall);
    void complete_at(std::uint32_t idx, Cycle t, Unit unit, Cycle busy);
    // CompletionIf: a DMA, ICI or host instruction (tag: its index) completed at `at`.
    void complete(std::uint64_t tag, Cycle at) override;
    ReplyTo reply_to(std::uint32_t idx, Cycle now);
    // Records [start, end) of `op` on one unit's timeline track (an index into open_spans_).
    void span(std::size_t lane, std::uint32_t op, Cycle start, Cycle end);
    std::size_t add_track(const std::string& process, const std::string& thread);
    bool lane_full(Unit u, const Instr& in) const;

    std::int64_t id_;
    TensorCoreConfigs cfg_;
    Timeline* timeline_;
    const CoreProgram* program_ = nullptr;
    std::unique_ptr<IssueTarget> issue_target_;
    std::unique_ptr<Sequencer> sequencer_;
    sc_core::sc_vector<Mxu> mxus_;  // core.mxus of them: mxu_0, mxu_1, ...
    std::unique_ptr<Vpu> vpu_;
    std::unique_ptr<Vmem> vmem_;
    std::unique_ptr<DmaEngine> dma_;
    std::vector<std::unique_ptr<Lane>> mxu_lanes_;
    Lane vpu_lane_;
    std::vector<std::uint8_t> done_;
    std::unordered_map<std::uint32_t, Cycle> issued_at_;  // DMA, ICI, host instructions
    // Lowest instruction not yet completed: the core reads none below it again, so a streamed
    // program may free them (SharedInstrs::release).
    std::size_t first_pending_ = 0;
    std::size_t reader_ = 0;
    sc_core::sc_event progress_;
    sc_core::sc_event_queue completion_q_;
    struct Pending {
        Cycle t;
        std::uint32_t idx;
        bool operator>(const Pending& o) const { return t > o.t; }
    };
    std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> pending_;
    const std::vector<OpInfo>* ops_ = nullptr;
    std::int64_t dma_in_flight_ = 0;
    Cycle dma_busy_since_ = 0;
    sc_core::sc_event dma_slot_free_;
    bool finished_ = false;
    Cycle end_cycle_ = 0;
    std::size_t remaining_ = 0;
    CoreStats stats_;
    // Timeline: one open (mergeable) span per unit track, found by name below.
    struct OpenSpan {
        std::uint32_t track = 0;  // Timeline handle
        std::uint32_t op = ~0u;
        Cycle start = 0, end = 0;
    };
    std::size_t dma_track_ = 0, vpu_track_ = 0, ici_track_ = 0, host_track_ = 0;
    std::vector<std::size_t> mxu_tracks_;
    std::vector<OpenSpan> open_spans_;
};

}  // namespace tpusim
