#pragma once
// Runs lowered collectives (program/collectives.h) on the ICI fabric: each participant core
// walks its steps, sends its blocks, reduces what it receives on its VPU (cost behind
// ReductionCostModel) and moves on when a step has all its data. Several collectives may be
// in flight at once; they share links, routers and each core's reduction unit. Plain C++,
// steppable without SystemC; IciNetwork (ici_network.h) wraps it for TensorCores.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "tpusim/arch/completion.h"
#include "tpusim/arch/ici/ici_fabric.h"
#include "tpusim/program/collectives.h"

namespace tpusim {

struct VpuConfig;
struct HbmConfig;
struct ChipConfig;
struct TorusTile;

// Contract: the time, in core cycles (fractional: a throughput, so that reducing a buffer
// train by train costs what reducing it at once does), for one core to reduce `bytes` it has
// received into its buffer. Reductions of one core run one after another.
class ReductionCostModel {
 public:
    virtual ~ReductionCostModel() = default;
    virtual double cycles(Bytes bytes, Bytes element_bytes) const = 0;
};

// Analytical term (named so in docs/ici.md): the VPU adds sublanes x lanes x alus_per_lane
// elements per cycle while the core's share of HBM bandwidth reads both operands and writes
// the sum (3 x bytes); the two overlap, so the slower one decides.
class AnalyticalReductionCost final : public ReductionCostModel {
 public:
    AnalyticalReductionCost(const VpuConfig& vpu, const HbmConfig& hbm, const ChipConfig& chip);
    double cycles(Bytes bytes, Bytes element_bytes) const override;
    double elements_per_cycle() const { return elements_per_cycle_; }
    double hbm_bytes_per_cycle() const { return hbm_bytes_per_cycle_; }

 private:
    double elements_per_cycle_;
    double hbm_bytes_per_cycle_;
};

class IciEngine final : private IciDeliveryIf {
 public:
    // Contract: topo and cost outlive the engine.
    IciEngine(const Topology& topo, const IciConfig& cfg, double clock_mhz,
              const ReductionCostModel& cost);
    ~IciEngine();

    // Starts a lowered collective at cycle `at` (>= now()); `done` is told, from inside run*(),
    // when its last participant has finished, with that cycle. Its complete() may start more
    // work.
    void start(Schedule schedule, Cycle at, ReplyTo done);
    // Starts every stream of a lowered collective at `at`; `done` is told when the last ends.
    void start(LoweredCollective collective, Cycle at, ReplyTo done);
    // The same, for a lowering the caller may start again (IciNetwork's cache): the engine
    // only reads a schedule, and holds it until its collective has ended.
    void start(std::shared_ptr<const LoweredCollective> collective, Cycle at, ReplyTo done);
    // Processes every event due at or before cycle `c`.
    void run_until(Cycle c);
    // Runs until nothing is left to do; returns the cycle of the last event.
    Cycle run();
    std::optional<Cycle> next_event_cycle() const;
    Cycle now() const { return ticks_to_cycles(now_); }
    bool idle() const;
    std::size_t in_flight() const;
    // Throws std::logic_error if collectives are in flight but no event is left.
    void check_progress() const;

    // The fabric's figures (link bytes, trains, busy time) include the collectives still in
    // flight on a tile only up to the last one that ended; every figure is complete once the
    // engine is idle.
    IciFabric& fabric() { return *fabric_; }
    const IciFabric& fabric() const { return *fabric_; }
    // Sum of the bytes every core reduced (complete once the engine is idle).
    Bytes reduced_bytes() const { return reduced_bytes_; }

    // Symmetric collectives (docs/ici.md): a collective that repeats a tile of the torus
    // starts a phase simulated on the tile alone, which collectives repeating the same tile
    // join until the engine is idle again. ici.fold_symmetric sets whether it is used (false:
    // every link is simulated). Counts: collectives started on a tile, and phases run again
    // on every link because a collective that does not repeat the tile joined them.
    void set_fold_symmetric(bool on) { fold_ = on; }
    std::size_t folded_collectives() const { return folded_; }
    std::size_t unfolded_phases() const { return replays_; }

 private:
    struct Phase;
    using Lowered = std::shared_ptr<const LoweredCollective>;
    void start_full(Lowered collective, Cycle at, ReplyTo done);
    void run_to(Tick limit);
    void run_full_to(Tick limit);
    bool begin_phase(const TorusTile& tile);
    bool make_sub(Phase& phase, const TorusTile& tile);
    void run_tile_to(Tick limit);
    // `repeats`: the collective is known to repeat the phase's tile.
    void phase_start(Lowered collective, Cycle at, ReplyTo done, bool repeats = false);
    void start_entry(std::size_t entry);
    void phase_done(std::size_t entry, Cycle at);
    void tell_entry(std::size_t entry, Cycle at);
    void sync_counters();
    void replay();
    void end_phase();

    // What a participant has received for one step, beside the step's own `reduce` (so that
    // a delivery reads one small record, not the schedule's step).
    struct StepState {
        Bytes arrived = 0;
        std::uint32_t pending = 0;  // reductions queued or running
        bool reduce = false;        // Step::reduce
    };
    struct Part {
        std::size_t first = 0;  // its steps' states: Active::states[first ...]
        std::size_t step = 0;
        std::size_t issued = 0;  // steps whose sends have gone out
    };
    // A stream in flight. Retired ones are kept for reuse (spare_), their lists' storage with
    // them: a pod's all-reduce has thousands of participants and hundreds of thousands of
    // steps, allocated once rather than at every start.
    struct Active {
        Lowered owner;                       // holds `schedule`
        const Schedule* schedule = nullptr;  // one of owner's streams
        std::vector<Part> parts;
        std::vector<StepState> states;  // every participant's steps, participant by participant
        std::size_t parts_left = 0;
        std::uint32_t group = 0;  // index into groups_
        StepState& state(const Part& p, std::size_t step) { return states[p.first + step]; }
    };
    // The streams of one start(): `done` is told when the last of `left` has ended.
    struct Group {
        std::size_t left = 0;
        ReplyTo done;
    };
    enum Kind : std::uint8_t { kStart = IciFabric::kFabricEventKinds, kReduced };

    void dispatch(const IciEvent& e);
    void deliver(std::uint64_t tag, Bytes bytes, Tick when) override;  // IciDeliveryIf
    std::uint32_t new_group(std::size_t streams, ReplyTo done);
    void start_stream(const Lowered& owner, const Schedule& schedule, Cycle at,
                      std::uint32_t group);
    void retire(std::uint32_t coll);
    void advance(std::uint32_t coll, std::uint32_t part);

    const Topology& topo_;
    const ReductionCostModel& cost_;
    IciConfig cfg_;
    double clock_mhz_;
    IciEventQueue queue_;
    std::unique_ptr<IciFabric> fabric_;
    std::vector<std::unique_ptr<Active>> active_;
    std::vector<std::unique_ptr<Active>> spare_;  // retired, for reuse
    std::vector<std::uint32_t> free_slots_;
    std::vector<Group> groups_;
    std::vector<std::uint32_t> free_groups_;
    std::vector<Tick> vpu_free_;  // per core: when its reduction unit is next free
    std::size_t active_count_ = 0;
    Tick now_ = 0;
    Bytes reduced_bytes_ = 0;
    bool fold_ = true;
    std::unique_ptr<Phase> phase_;  // the symmetric phase in flight, if any
    std::size_t folded_ = 0, replays_ = 0;
};

}  // namespace tpusim
