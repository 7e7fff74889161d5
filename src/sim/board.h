#pragma once
// The board as SystemC modules, built from the config and read top to bottom: chips of
// TensorCores sharing the chip's HBM and host link, joined by the ICI. Private to src/sim.
#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>
#include <systemc>

#include "tpusim/arch/hbm_calibrated.h"
#include "tpusim/arch/hbm_system.h"
#include "tpusim/arch/host_link.h"
#include "tpusim/arch/tensor_core.h"
#include "tpusim/config/tpu_config.h"
#include "tpusim/sim/simulator.h"
#include "tpusim/stats/timeline.h"

namespace tpusim {

// The chip's HBM, driven in simulated time: DMA transfers of both cores are submitted to the
// HBM controller model, which interleaves their bursts; one thread advances the model to
// its next event and reports completions. No SystemC event per burst.
// With sim.hbm_model = "calibrated" the calibrated transfer queues answer instead.
class ChipMemory : public sc_core::sc_module {
 public:
    SC_HAS_PROCESS(ChipMemory);
    ChipMemory(sc_core::sc_module_name name, const HbmConfig& hbm, double core_clock_mhz,
               std::int64_t cores_per_chip, bool burst_level);
    // `done(cycle)` runs from the simulation at the completion cycle.
    void transfer(int core_on_chip, const DmaInstr& d, std::function<void(Cycle)> done);
    const StatGroup& stats() const;
    double bytes_read() const;
    double bytes_written() const;

 private:
    void run();
    void deliver();
    std::unique_ptr<HbmSystem> burst_;
    std::unique_ptr<HbmCalibratedModel> calibrated_;
    sc_core::sc_event wake_;
    std::uint64_t next_tag_ = 1;
    std::unordered_map<std::uint64_t, std::function<void(Cycle)>> waiting_;
    // Calibrated mode: completions known in advance, delivered at their cycle.
    struct Due {
        Cycle t;
        std::uint64_t tag;
        bool operator>(const Due& o) const { return t != o.t ? t > o.t : tag > o.tag; }
    };
    std::priority_queue<Due, std::vector<Due>, std::greater<Due>> due_;
    sc_core::sc_event_queue due_q_;
};

struct Chip {
    std::unique_ptr<StatGroup> stats;  // "chipN": its HBM, host link and cores
    std::unique_ptr<ChipMemory> memory;
    std::unique_ptr<HostLink> host;
};

class Board : public sc_core::sc_module {
 public:
    Board(sc_core::sc_module_name name, const TpuConfig& cfg, Timeline* timeline);
    ~Board() override;
    TensorCore& core(std::int64_t c) { return *cores_[static_cast<std::size_t>(c)]; }
    // Adds the memory and interconnect totals to `r`.
    void collect(RunResult& r) const;
    nlohmann::json stats_json() const;

 private:
    const TpuConfig& cfg_;
    std::vector<Chip> chips_;
    std::vector<std::unique_ptr<TensorCore>> cores_;
    StatGroup stats_{"board", "the whole board"};
};

}  // namespace tpusim
