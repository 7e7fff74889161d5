#pragma once
// SystemC wrapper of the ICI model: TensorCores start collectives and are told when they end.
// One SystemC ns == one core cycle (common/sim_time.h). The timing lives in IciEngine (plain
// C++); this module only advances it with SystemC time. Several collectives may be in flight
// at once and share links, routers and the cores' reduction units.
#include <memory>
#include <systemc>

#include "tpusim/arch/ici/ici_engine.h"
#include "tpusim/config/topology.h"

namespace tpusim {

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

 private:
    void loop();

    const Topology& topo_;
    IciConfig cfg_;
    IciEngine engine_;
    sc_core::sc_event wake_;
};

}  // namespace tpusim
