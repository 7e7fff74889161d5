#pragma once
// The board as SystemC modules, built from the config and read top to bottom: chips (HBM,
// host link, TensorCores with their DMA engines) joined by the ICI network. Private to
// src/sim.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <queue>
#include <systemc>
#include <unordered_map>
#include <vector>

#include "tpusim/arch/core/tensor_core.h"
#include "tpusim/arch/host/host_link.h"
#include "tpusim/arch/ici/ici_engine.h"
#include "tpusim/arch/ici/ici_network.h"
#include "tpusim/arch/memory/dma_engine.h"
#include "tpusim/arch/memory/hbm_calibrated.h"
#include "tpusim/arch/memory/hbm_module.h"
#include "tpusim/config/topology.h"
#include "tpusim/config/tpu_config.h"
#include "tpusim/sim/simulator.h"
#include "tpusim/stats/timeline.h"

namespace tpusim {

// sim.hbm_model = "calibrated": the chip's HBM as calibrated transfer queues
// (hbm_calibrated.h); completions are known at submission and delivered at their cycle.
class CalibratedHbm : public sc_core::sc_module {
 public:
    SC_HAS_PROCESS(CalibratedHbm);
    CalibratedHbm(sc_core::sc_module_name name, const HbmConfig& hbm, double core_clock_mhz,
                  std::int64_t cores_per_chip);
    void transfer(int core_on_chip, const DmaInstr& d, std::function<void(Cycle)> done);
    StatGroup& stats() { return model_.stats(); }

 private:
    void deliver();
    HbmCalibratedModel model_;
    std::uint64_t next_tag_ = 1;
    std::unordered_map<std::uint64_t, std::function<void(Cycle)>> waiting_;
    struct Due {
        Cycle t;
        std::uint64_t tag;
        bool operator>(const Due& o) const { return t != o.t ? t > o.t : tag > o.tag; }
    };
    std::priority_queue<Due, std::vector<Due>, std::greater<Due>> due_;
    sc_core::sc_event_queue due_q_;
};

// Collectives start when every core of the replica group has reached them; send / recv
// pair up first-in first-out per (source, destination).
class CollectiveRendezvous {
 public:
    explicit CollectiveRendezvous(IciNetwork& ici) : ici_(ici) {}
    void arrive(const CollectiveInstr& c, std::int64_t core, std::function<void(Cycle)> done);

 private:
    struct Pending {
        std::size_t arrived = 0;
        std::vector<std::function<void(Cycle)>> done;
    };
    IciNetwork& ici_;
    std::map<std::pair<std::uint64_t, std::int64_t>, Pending> pending_;
    std::map<std::pair<std::int64_t, std::int64_t>, std::deque<Cycle>> sends_done_;
    std::map<std::pair<std::int64_t, std::int64_t>, std::deque<std::function<void(Cycle)>>>
        recvs_waiting_;
};

struct Chip {
    std::unique_ptr<StatGroup> stats;  // "chipN": its HBM, host link and cores
    std::unique_ptr<HbmModule> hbm;    // burst-level model behind a TLM-2.0 target
    std::unique_ptr<CalibratedHbm> calibrated;
    std::unique_ptr<HostLink> host;
    const StatGroup& hbm_stats() const;
};

class Board : public sc_core::sc_module {
 public:
    Board(sc_core::sc_module_name name, const TpuConfig& cfg, Timeline* timeline);
    ~Board() override;
    TensorCore& core(std::int64_t c) { return *cores_[static_cast<std::size_t>(c)]; }
    // Adds the memory and interconnect totals to `r`; closes the ICI timeline tracks.
    void collect(RunResult& r);
    nlohmann::json stats_json() const;

 private:
    CorePorts ports_for(std::int64_t core);

    const TpuConfig& cfg_;
    Topology topology_;
    AnalyticalReductionCost reduction_cost_;
    std::unique_ptr<IciNetwork> ici_;
    std::unique_ptr<CollectiveRendezvous> rendezvous_;
    std::vector<Chip> chips_;
    std::vector<std::unique_ptr<DmaEngine>> dma_;  // per core (burst-level HBM only)
    std::vector<std::unique_ptr<TensorCore>> cores_;
    Timeline* timeline_;
    StatGroup stats_{"board", "the whole board"};
};

}  // namespace tpusim
