#pragma once
// A run's energy and power: the activity the run counted (its stats tree and totals) through
// the energy model (tpusim/stats/energy.h). An observer: nothing here changes a cycle.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "tpusim/sim/simulator.h"
#include "tpusim/stats/energy.h"
#include "tpusim/stats/timeline.h"

namespace tpusim {

// The most points of the timeline's power track (its windows are widened to stay below).
inline constexpr std::size_t kPowerTrackWindows = 4096;

struct RunEnergy {
    EnergyActivity activity;
    EnergyParts parts;
    double peak_board_w = 0;  // highest average over a window (peak_window_s)
    double peak_window_s = 0;
    // The board's average power in each window of `track_window_s` from the start (W): the
    // timeline's power track, peak_power's windows widened to at most kPowerTrackWindows.
    double track_window_s = 0;
    std::vector<double> track_board_w;
    double flops = 0;
    double average_w_per_chip() const;
    double peak_w_per_chip() const;
};

// Activity totalled over the whole board (every chip powered, simulated or a symmetric copy).
EnergyActivity run_activity(const RunResult& r, const TpuConfig& cfg);
// with_track: also the timeline's power track (track_board_w).
RunEnergy run_energy(const RunResult& r, const TpuConfig& cfg, bool with_track = false);
nlohmann::json run_energy_json(const RunEnergy& e, const TpuConfig& cfg);
// "  energy     12.3 mJ: 231.4 W per chip average, 262.0 peak (1 us), idle 40.1, TDP 450; 2.10
// TFLOPS/W\n"
std::string run_energy_line(const RunEnergy& e, const TpuConfig& cfg);

// The power track on a run's timeline: the process "power", counter "W per chip", one sample
// per window of RunEnergy::track_window_s (the average power per chip over that window, as the
// peak is computed) and one at the run's end holding the last. Nothing on a disabled timeline.
void add_power_track(Timeline& tl, const RunResult& r, const TpuConfig& cfg);

}  // namespace tpusim
