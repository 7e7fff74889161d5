#pragma once
// Energy and power from activity counts (docs/energy.md). Plain C++: the model reads what a
// run counted (MXU MACs and passes, VPU busy cycles, VMEM, HBM, ICI and host-link bytes) and
// the `energy.*` keys, and never changes what is simulated.
#include <array>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <vector>

#include "tpusim/config/tpu_config.h"

namespace tpusim {

// What a run did, totalled over the board.
struct EnergyActivity {
    double seconds = 0;          // simulated time
    std::int64_t chips = 0;      // chips powered (the board's, used or not)
    double mxu_array_macs = 0;   // MACs the arrays performed, padding included
    double mxu_passes = 0;       // weight tiles loaded into an array
    double vpu_busy_cycles = 0;  // summed over cores
    double vmem_dma_bytes = 0;   // through the VMEM DMA ports
    double hbm_bytes = 0;        // read + written
    double ici_bytes = 0;        // over all links
    double host_bytes = 0;       // over the host links, both directions
};

// Energy by part (J). dynamic = mxu + vpu + vmem + hbm + ici_data + host; static =
// logic_static + hbm_background + hbm_refresh + ici_idle.
struct EnergyParts {
    double mxu = 0, vpu = 0, vmem = 0, hbm = 0, ici_data = 0, host = 0;
    double logic_static = 0, hbm_background = 0, hbm_refresh = 0, ici_idle = 0;
    double dynamic() const { return mxu + vpu + vmem + hbm + ici_data + host; }
    double static_() const { return logic_static + hbm_background + hbm_refresh + ici_idle; }
    double total() const { return dynamic() + static_(); }
};

// The per-operation energies in effect (pJ) after scaling to the chip's node and voltage.
struct EnergyCoefficients {
    double scale = 0;       // (node / source node) x (V / source V)^2
    double vdd_v = 0;       // supply in effect (the clock rule, when on)
    double mxu_mac_pj = 0;  // bf16 multiply + f32 add + RF + 2 PE transfers
    double vpu_op_pj = 0;   // mean of f32 add and multiply + 3 RF accesses
    double vmem_pj_per_byte = 0;
    double static_w_per_chip = 0;  // logic + HBM background + refresh + ICI idle
};

EnergyCoefficients energy_coefficients(const TpuConfig& cfg);

// VMEM bytes the MXUs move for `array_macs` MACs in `passes` passes: LHS (bf16) in, results
// (f32) out, one weight tile (bf16) per pass.
double mxu_vmem_bytes(const TpuConfig& cfg, double array_macs, double passes);

EnergyParts energy_of(const EnergyActivity& a, const TpuConfig& cfg);

// The classes of dynamic energy a span carries: each unit's with the VMEM traffic it drives.
enum class EnergyClass { Mxu, Vpu, Hbm, Ici, Host };
inline constexpr std::size_t kEnergyClasses = 5;

// One op's share of a class of the run's dynamic energy, spread evenly over [start_s, end_s).
struct EnergySpan {
    double start_s = 0, end_s = 0;
    double joules = 0;
    EnergyClass cls = EnergyClass::Mxu;
};

// Each class's power with its units at their peak rate (W per chip, full_load_power_per_chip's
// terms): no window can draw more from a class than that.
std::array<double, kEnergyClasses> class_full_load_w_per_chip(const TpuConfig& cfg);

// The highest average power of the board over the windows of `window_s` from the start (W,
// whole board): the static power plus the spans' energy in the window, each class's capped at
// `class_max_w` x window (spans spread evenly over an op's interval overlap where ops do). A
// run shorter than the window gives its average. A run of more than kMaxPeakWindows windows is
// cut into that many (the window used is returned).
inline constexpr std::size_t kMaxPeakWindows = std::size_t{1} << 22;
struct PeakPower {
    double watts = 0;
    double window_s = 0;
};
PeakPower peak_power(const std::vector<EnergySpan>& spans, double static_w, double seconds,
                     double window_s, const std::array<double, kEnergyClasses>& class_max_w);

// The board's average power in each window of `window_s` from the start, as peak_power
// computes it (W, whole board; the last window may be shorter), widened so that there are at
// most `max_windows`; peak_power is the highest of them. A run no longer than one window is
// one window of its own length; a run of no time has none.
struct PowerWindows {
    double window_s = 0;
    std::vector<double> board_w;
};
PowerWindows power_windows(const std::vector<EnergySpan>& spans, double static_w, double seconds,
                           double window_s, const std::array<double, kEnergyClasses>& class_max_w,
                           std::size_t max_windows = kMaxPeakWindows);

// Modelled chip power with nothing running, and with every unit at its peak rate at once
// (every MXU MAC every cycle, VPU every cycle, HBM at peak bandwidth, links at line rate).
double idle_power_per_chip(const TpuConfig& cfg);
double full_load_power_per_chip(const TpuConfig& cfg);

// The report's "energy" object.
nlohmann::json energy_json(const EnergyParts& e, const EnergyActivity& a, double peak_board_w,
                           double flops, const TpuConfig& cfg);

}  // namespace tpusim
