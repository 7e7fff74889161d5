#pragma once
// The board as SystemC modules, built from the config and read top to bottom:
//   board
//     chip<N>          HBM (burst-level or calibrated queues, both TLM-2.0 targets), host
//                      link, TensorCores (each with its sequencer, MXUs, VPU, VMEM and DMA
//                      engines, whose hbm_out socket is bound to the HBM)
//     ici              the ICI network (links, routers) and the rendezvous the cores'
//     ici_rendezvous   ici_out ports are bound to
// Every core's ici_out and host_out port and its DMA engines' hbm_out socket are bound in Chip.
// Private to src/sim.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <systemc>
#include <vector>

#include "tpusim/arch/core/tensor_core.h"
#include "tpusim/arch/host/host_link_module.h"
#include "tpusim/arch/ici/collective_rendezvous.h"
#include "tpusim/arch/ici/ici_engine.h"
#include "tpusim/arch/ici/ici_network.h"
#include "tpusim/arch/memory/hbm_calibrated_module.h"
#include "tpusim/arch/memory/hbm_module.h"
#include "tpusim/config/topology.h"
#include "tpusim/config/tpu_config.h"
#include "tpusim/sim/simulator.h"
#include "tpusim/stats/timeline.h"

namespace tpusim {

class Chip : public sc_core::sc_module {
 public:
    // `index`: the chip's number; its cores are index * cores_per_chip + 0, 1, ...
    // `hbm_calibration`: the calibrated HBM's (sim.hbm_model = calibrated; else unused).
    Chip(sc_core::sc_module_name name, std::int64_t index, const TpuConfig& cfg, UnitIf& ici,
         Timeline* timeline, const HbmCalibration* hbm_calibration);
    ~Chip() override;
    TensorCore& core(std::size_t local) { return *cores_[local]; }
    std::size_t cores() const { return cores_.size(); }
    const StatGroup& hbm_stats() const;
    // The HBM's byte counters (either model), as registered in hbm_stats().
    const std::uint64_t& hbm_bytes_read() const;
    const std::uint64_t& hbm_bytes_written() const;
    StatGroup& stats() { return stats_; }
    // The stat group of chip `index`, which SPMD symmetry did not build because it runs as this
    // chip does: copies of this chip's groups under chip `index`'s names.
    std::unique_ptr<StatGroup> stats_as(std::int64_t index) const;

 private:
    StatGroup stats_;                            // "chipN": its HBM, host link and cores
    std::unique_ptr<BurstHbm> hbm_;              // sim.hbm_model = burst
    std::unique_ptr<CalibratedHbm> calibrated_;  // sim.hbm_model = calibrated
    std::unique_ptr<HostLinkModule> host_;
    std::vector<std::unique_ptr<TensorCore>> cores_;
};

class Board : public sc_core::sc_module {
 public:
    // Builds the whole ICI fabric and the chips that run as themselves: chip c runs as chip
    // like[c] (empty: every chip is built). Under SPMD symmetry (tpusim/sim/symmetry.h) a
    // chip that runs as another is not built: its stat group is a copy of that chip's
    // (StatGroup), so stats(), collect() and stats_json() count and report every chip of the
    // board; `image` (per core of the program: the simulated core it runs as) tells the
    // collective rendezvous which cores stand for which. Chips after the program's run
    // nothing: the first is built as it is (idle) and, under symmetry, the others copy it.
    // The calibrated HBM's calibration comes from `calibrations`, once for all chips.
    Board(sc_core::sc_module_name name, const TpuConfig& cfg, Timeline* timeline,
          HbmCalibrationCache& calibrations, const std::vector<std::int64_t>& like = {},
          const std::vector<std::int64_t>& image = {});
    ~Board() override;
    // A core of a built chip.
    TensorCore& core(std::int64_t c);
    // Adds the memory and interconnect totals to `r`; closes the ICI timeline tracks.
    void collect(RunResult& r);
    // The board's stat tree: the ICI fabric and every chip, built or copied.
    const StatGroup& stats() const { return stats_; }
    nlohmann::json stats_json() const;
    // The ICI fabric and its links (in topology order, named as in the stat tree).
    const IciFabric& ici_fabric() const { return ici_->engine().fabric(); }
    // CollectiveRendezvous::groups_apart (SPMD symmetry over replica groups).
    std::string groups_apart(std::uint32_t& op) const { return rendezvous_->groups_apart(op); }
    const Topology& topology() const { return topology_; }

 private:
    const TpuConfig& cfg_;
    Topology topology_;
    AnalyticalReductionCost reduction_cost_;
    std::unique_ptr<IciNetwork> ici_;
    std::unique_ptr<CollectiveRendezvous> rendezvous_;
    std::vector<std::unique_ptr<Chip>> chips_;  // by chip id; null for a chip stood for
    Timeline* timeline_;
    StatGroup stats_{"board", "the whole board"};
    std::vector<std::unique_ptr<StatGroup>> chip_copies_;  // the chips stood for, as copies
};

// The module hierarchy of `obj` and below, one line per module, port, export or socket: its
// full name and kind, indented by depth.
std::string module_tree(const sc_core::sc_object& obj, int depth = 0);

}  // namespace tpusim
