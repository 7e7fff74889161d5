#pragma once
// A run's energy and power: the activity the run counted (its stats tree and totals) through
// the energy model (tpusim/stats/energy.h). An observer: nothing here changes a cycle.
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "tpusim/sim/simulator.h"
#include "tpusim/stats/energy.h"

namespace tpusim {

struct RunEnergy {
    EnergyActivity activity;
    EnergyParts parts;
    double peak_board_w = 0;  // highest average over a window (peak_window_s)
    double peak_window_s = 0;
    double flops = 0;
    double average_w_per_chip() const;
    double peak_w_per_chip() const;
};

// Activity totalled over the whole board (every chip powered, simulated or a symmetric copy).
EnergyActivity run_activity(const RunResult& r, const TpuConfig& cfg);
RunEnergy run_energy(const RunResult& r, const TpuConfig& cfg);
nlohmann::json run_energy_json(const RunEnergy& e, const TpuConfig& cfg);
// "  energy     12.3 mJ: 231.4 W per chip average, 262.0 peak (1 us), idle 40.1, TDP 450; 2.10
// TFLOPS/W\n"
std::string run_energy_line(const RunEnergy& e, const TpuConfig& cfg);

}  // namespace tpusim
