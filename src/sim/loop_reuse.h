#pragma once
// Loop reuse (docs/program.md, "Loops"): a program whose loops were lowered with fewer trips
// than they run is simulated with those; the trips left out are charged exactly once a trip
// boundary repeats. Private to the sim layer (Simulator::run).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tpusim/arch/core/core_stats.h"
#include "tpusim/arch/core/tensor_core.h"
#include "tpusim/arch/ici/ici_fabric.h"
#include "tpusim/config/topology.h"
#include "tpusim/program/program.h"
#include "tpusim/stats/stats.h"

namespace tpusim {

class LoopReuse : public TripObserver {
 public:
    // Empty reason: the loops lowered short can be watched on these cores; else why not.
    static std::string refusal(const Program& program, const std::vector<std::int64_t>& sim);
    // Watches trips 1 .. lowered - 1 of every loop lowered short, on the simulated cores `sim`
    // (ids, ascending; `cores` and the per-core vectors of charge() in the same order).
    // `fabric`: its links' busy time is a raw figure, not a counter; charged apart (ici_json).
    LoopReuse(const Program& program, const std::vector<std::int64_t>& sim,
              const StatGroup& board_stats, std::vector<TensorCore*> cores, const IciFabric& fabric,
              std::size_t links);

    void reached(std::int64_t core, std::size_t k, bool released) override;
    void issued(std::int64_t core, std::size_t k, bool clean) override;

    // After the simulation: finds each loop's steady boundary and charges the trips left out
    // into the stat counters, `timing` (per core, per op) and `ends` (per core). Returns an
    // empty string, or why the trips could not be charged (then nothing is changed).
    std::string charge(std::vector<std::vector<OpTiming>>& timing, std::vector<Cycle>& ends);
    // The stats tree's ICI links after charge(): busy_cycles and busy_fraction from the links'
    // charged busy ticks, by the fabric's own formulas (ici_fabric.cpp), over `elapsed` ticks.
    void ici_json(nlohmann::json& stats, const std::vector<Topology::Link>& links,
                  Tick elapsed) const;
    std::int64_t simulated_trips() const { return simulated_; }
    std::int64_t charged_trips() const { return charged_; }

 private:
    struct Boundary {
        std::size_t loop = 0;
        std::int64_t trip = 0;
        std::int64_t reached = 0;
        Cycle global = 0;  // cycle the last core reached it
        bool dirty = false;
        std::vector<Cycle> issue;  // per core
        std::vector<bool> issued, clean, released;
        std::vector<std::uint64_t> counters;
        std::vector<Tick> link_ticks;
        std::vector<std::vector<OpTiming>> timing;  // per core, at `global`
    };
    std::int64_t first_alike(std::size_t loop) const;  // the latest over the simulated cores

    const Program& program_;
    std::int64_t nsim_;
    std::vector<std::int64_t> sim_;       // the simulated cores' ids
    std::vector<std::int64_t> position_;  // per core id: its place in sim_, or -1
    std::vector<const std::uint64_t*> counters_;
    std::vector<TensorCore*> cores_;
    const IciFabric& fabric_;
    std::size_t links_;
    std::vector<Tick> link_ticks_;  // charged busy ticks per link (charge())
    std::vector<Boundary> bounds_;
    std::int64_t simulated_ = 0, charged_ = 0;
};

}  // namespace tpusim
