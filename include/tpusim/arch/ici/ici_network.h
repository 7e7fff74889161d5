#pragma once
// SystemC wrapper of the ICI model: TensorCores start collectives and are told when they end.
// One SystemC ns == one core cycle (common/sim_time.h). The timing lives in IciEngine (plain
// C++); this module only advances it with SystemC time. Several collectives may be in flight
// at once and share links, routers and the cores' reduction units.
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <systemc>
#include <unordered_map>

#include "tpusim/arch/ici/ici_engine.h"
#include "tpusim/config/topology.h"

namespace tpusim {

// lower_collective(spec) on one topology and config, remembered: a program starts the same
// collectives again and again (every trip of a loop, every step), and a pod's all-core
// all-reduce is half a million steps to lower. The most recently used lowerings are kept, up
// to `budget_steps` steps in all; a lowering is a pure function of the spec, the topology and
// the config, and the engine never changes one, so a kept one stands for a fresh one.
class LoweringCache {
 public:
    // Contract: topo outlives the cache.
    LoweringCache(const Topology& topo, const IciConfig& cfg,
                  std::size_t budget_steps = kDefaultBudgetSteps);
    // Throws as lower_collective (nothing is kept then).
    std::shared_ptr<const LoweredCollective> lowered(const CollectiveSpec& spec);
    std::size_t size() const { return kept_.size(); }
    std::size_t steps() const { return steps_; }  // of the lowerings kept
    std::size_t hits() const { return hits_; }
    // About 200 MB of steps at most (a Step is about 100 bytes).
    static constexpr std::size_t kDefaultBudgetSteps = std::size_t{1} << 21;

 private:
    struct Kept {
        CollectiveSpec spec;
        std::uint64_t hash = 0;
        std::shared_ptr<const LoweredCollective> lowered;
        std::size_t steps = 0;
    };
    const Topology& topo_;
    IciConfig cfg_;
    std::size_t budget_;
    std::list<Kept> kept_;  // most recently used first
    std::unordered_multimap<std::uint64_t, std::list<Kept>::iterator> index_;  // by spec hash
    std::size_t steps_ = 0, hits_ = 0;
};

class IciNetwork : public sc_core::sc_module {
 public:
    // Contract: topo and cost outlive the module. Core ids in specs are global:
    // chip * cores_per_chip + local core (Topology).
    IciNetwork(sc_core::sc_module_name name, const Topology& topo, const IciConfig& cfg,
               double clock_mhz, const ReductionCostModel& cost);

    // Starts `spec` at the current cycle; `done` is told from this module's process at the
    // cycle the collective ends (its complete() may notify an sc_event or start more
    // collectives).
    void start(const CollectiveSpec& spec, ReplyTo done);
    // From an SC_THREAD: starts `spec` and returns, at its end, the cycle it ended.
    Cycle run(const CollectiveSpec& spec);

    IciEngine& engine() { return engine_; }
    const IciEngine& engine() const { return engine_; }

    // The lowerings its starts reuse (LoweringCache).
    const LoweringCache& lowerings() const { return lowerings_; }

 private:
    void loop();

    IciEngine engine_;
    LoweringCache lowerings_;
    sc_core::sc_event wake_;
};

}  // namespace tpusim
