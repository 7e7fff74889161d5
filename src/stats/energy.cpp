// The energy model: activity counts x per-operation energies + static power x time.
// docs/energy.md derives every term and names each constant's source.
#include "tpusim/stats/energy.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <utility>

namespace tpusim {

namespace {

constexpr double kPico = 1e-12;

// Static power of one chip (W): logic (at the supply in effect), HBM background and refresh,
// and the ICI links at line rate when they are always on.
struct StaticPower {
    double logic = 0, hbm_background = 0, hbm_refresh = 0, ici_idle = 0;
    double total() const { return logic + hbm_background + hbm_refresh + ici_idle; }
};

StaticPower static_power_per_chip(const TpuConfig& cfg, double vdd_v) {
    const EnergyConfig& e = cfg.energy;
    StaticPower p;
    p.logic = e.logic_static_w * vdd_v / e.vdd_v;  // leakage current ~ constant: P ~ V
    const double channels = static_cast<double>(cfg.hbm.channels());
    p.hbm_background = channels * e.hbm_vdd_v * e.hbm_idd3n_ma * 1e-3;
    const double refresh_duty =
        static_cast<double>(cfg.hbm.timing.tRFC) / static_cast<double>(cfg.hbm.timing.tREFI);
    p.hbm_refresh = channels * e.hbm_vdd_v * std::max(0.0, e.hbm_idd5ab_ma - e.hbm_idd3n_ma) *
                    1e-3 * refresh_duty;
    if (e.ici_always_on) {
        // Each link's receiver on this chip takes line-rate bits whether or not data flows.
        p.ici_idle = static_cast<double>(cfg.ici.links_per_chip) * cfg.ici.link_bandwidth_gbps *
                     1e9 * 8.0 * e.ici_pj_per_bit * kPico;
    }
    return p;
}

}  // namespace

EnergyCoefficients energy_coefficients(const TpuConfig& cfg) {
    const EnergyConfig& e = cfg.energy;
    EnergyCoefficients c;
    c.vdd_v =
        e.voltage_follows_clock ? e.vdd_v * cfg.chip.clock_mhz / e.nominal_clock_mhz : e.vdd_v;
    const double v = c.vdd_v / e.source_vdd_v;
    c.scale = (e.node_nm / e.source_node_nm) * v * v;
    // Weight stationary: each MAC reads its weight from the PE's register (1 RF access) and
    // takes its LHS value and partial sum from neighbours (2 PE-to-PE transfers).
    const double mac_alu = (e.mult_bf16_pj + e.add_fp32_pj) * c.scale;
    c.mxu_mac_pj = mac_alu * (1.0 + e.rf_access_ratio + 2.0 * e.pe_transfer_ratio);
    // A vector op reads two operands and writes one result in the vreg file.
    const double vpu_alu = 0.5 * (e.add_fp32_pj + e.mult_fp32_pj) * c.scale;
    c.vpu_op_pj = vpu_alu * (1.0 + 3.0 * e.rf_access_ratio);
    c.vmem_pj_per_byte = e.vmem_pj_per_64bit * c.scale / 8.0;
    c.static_w_per_chip = static_power_per_chip(cfg, c.vdd_v).total();
    return c;
}

double mxu_vmem_bytes(const TpuConfig& cfg, double array_macs, double passes) {
    const double rows = static_cast<double>(cfg.mxu.rows), cols = static_cast<double>(cfg.mxu.cols);
    const double lhs = array_macs / cols * 2.0;     // each bf16 LHS value feeds `cols` MACs
    const double result = array_macs / rows * 4.0;  // each f32 result sums `rows` MACs
    const double weights = passes * rows * cols * 2.0;
    return lhs + result + weights;
}

EnergyParts energy_of(const EnergyActivity& a, const TpuConfig& cfg) {
    const EnergyConfig& e = cfg.energy;
    const EnergyCoefficients c = energy_coefficients(cfg);
    const double lanes_ops =
        static_cast<double>(cfg.vpu.sublanes * cfg.vpu.lanes * cfg.vpu.alus_per_lane);
    EnergyParts p;
    p.mxu = a.mxu_array_macs * c.mxu_mac_pj * kPico;
    p.vpu = a.vpu_busy_cycles * lanes_ops * c.vpu_op_pj * kPico;
    p.vmem = (a.vmem_dma_bytes + mxu_vmem_bytes(cfg, a.mxu_array_macs, a.mxu_passes)) *
             c.vmem_pj_per_byte * kPico;
    p.hbm = a.hbm_bytes * 8.0 * e.hbm_pj_per_bit * kPico;
    p.ici_data = e.ici_always_on ? 0.0 : a.ici_bytes * 8.0 * e.ici_pj_per_bit * kPico;
    p.host = a.host_bytes * 8.0 * e.pcie_pj_per_bit * kPico;
    const StaticPower s = static_power_per_chip(cfg, c.vdd_v);
    const double chip_seconds = static_cast<double>(a.chips) * a.seconds;
    p.logic_static = s.logic * chip_seconds;
    p.hbm_background = s.hbm_background * chip_seconds;
    p.hbm_refresh = s.hbm_refresh * chip_seconds;
    p.ici_idle = s.ici_idle * chip_seconds;
    return p;
}

PowerWindows power_windows(const std::vector<EnergySpan>& spans, double static_w, double seconds,
                           double window_s, const std::array<double, kEnergyClasses>& class_max_w,
                           std::size_t max_windows) {
    double dynamic = 0;
    for (const auto& s : spans) dynamic += s.joules;
    if (seconds <= 0) return {window_s, {}};
    if (window_s <= 0 || seconds <= window_s) return {seconds, {static_w + dynamic / seconds}};
    if (seconds / window_s > static_cast<double>(max_windows)) {
        window_s = seconds / static_cast<double>(max_windows);
    }
    // Whole windows up to a rounding error (10 us / 1 us is 10 windows, not 11), and a last
    // partial one.
    const auto windows = static_cast<std::size_t>(
        std::max(1.0, std::ceil(seconds / window_s * (1 - 1e-12))));
    // Per class, the dynamic power is piecewise constant: each span adds joules / length on its
    // interval (a zero-length span is its energy at its start). Sweep the steps in time order
    // and integrate over each window.
    std::vector<double> sum(windows, 0.0);
    for (std::size_t k = 0; k < kEnergyClasses; ++k) {
        std::vector<std::pair<double, double>> steps;     // (time, +/- watts)
        std::vector<std::pair<double, double>> impulses;  // (time, joules)
        for (const auto& s : spans) {
            if (static_cast<std::size_t>(s.cls) != k || s.joules <= 0) continue;
            const double len = s.end_s - s.start_s;
            if (len <= 0) {
                impulses.emplace_back(s.start_s, s.joules);
            } else {
                steps.emplace_back(s.start_s, s.joules / len);
                steps.emplace_back(s.end_s, -s.joules / len);
            }
        }
        if (steps.empty() && impulses.empty()) continue;
        std::sort(steps.begin(), steps.end());
        std::sort(impulses.begin(), impulses.end());
        double rate = 0, t = 0;
        std::size_t si = 0, ii = 0;
        for (std::size_t w = 0; w < windows; ++w) {
            const double begin = static_cast<double>(w) * window_s;
            const double end = std::min(seconds, begin + window_s);
            double joules = 0;
            while (si < steps.size() && steps[si].first <= end) {
                joules += rate * (steps[si].first - t);
                t = steps[si].first;
                rate += steps[si].second;
                ++si;
            }
            joules += rate * (end - t);
            t = end;
            while (ii < impulses.size() && impulses[ii].first <= end) {
                joules += impulses[ii++].second;
            }
            sum[w] += std::min(joules, class_max_w[k] * (end - begin));
        }
    }
    PowerWindows out{window_s, {}};
    out.board_w.reserve(windows);
    for (std::size_t w = 0; w < windows; ++w) {
        const double begin = static_cast<double>(w) * window_s;
        const double end = std::min(seconds, begin + window_s);
        if (end > begin) out.board_w.push_back(static_w + sum[w] / (end - begin));
    }
    return out;
}

PeakPower peak_power(const std::vector<EnergySpan>& spans, double static_w, double seconds,
                     double window_s, const std::array<double, kEnergyClasses>& class_max_w) {
    const PowerWindows p = power_windows(spans, static_w, seconds, window_s, class_max_w);
    double best = static_w;
    for (double w : p.board_w) best = std::max(best, w);
    return {best, p.window_s};
}

double idle_power_per_chip(const TpuConfig& cfg) {
    return energy_coefficients(cfg).static_w_per_chip;
}

namespace {

// One second of one chip with every unit at its peak rate.
EnergyActivity full_load_activity(const TpuConfig& cfg) {
    const double hz = cfg.chip.clock_mhz * 1e6;
    const double cores = static_cast<double>(cfg.chip.cores_per_chip);
    EnergyActivity a;
    a.seconds = 1.0;
    a.chips = 1;
    a.mxu_array_macs =
        cores * static_cast<double>(cfg.core.mxus * cfg.mxu.rows * cfg.mxu.cols) * hz;
    // A pass streams the lowering's largest row tile through the array.
    a.mxu_passes = a.mxu_array_macs / static_cast<double>(cfg.mxu.rows * cfg.mxu.cols *
                                                          cfg.lowering.matmul_max_tile_m);
    a.vpu_busy_cycles = cores * hz;
    a.hbm_bytes = cfg.hbm.peak_bytes_per_second();
    a.vmem_dma_bytes = a.hbm_bytes;  // every HBM byte crosses a VMEM DMA port
    a.ici_bytes = static_cast<double>(cfg.ici.links_per_chip) * cfg.ici.link_bandwidth_gbps * 1e9;
    a.host_bytes = cfg.host.pcie_bandwidth_gbps * 1e9;
    return a;
}

}  // namespace

double full_load_power_per_chip(const TpuConfig& cfg) {
    return energy_of(full_load_activity(cfg), cfg).total();
}

std::array<double, kEnergyClasses> class_full_load_w_per_chip(const TpuConfig& cfg) {
    const EnergyActivity a = full_load_activity(cfg);
    const EnergyParts p = energy_of(a, cfg);
    const double vmem_mxu = mxu_vmem_bytes(cfg, a.mxu_array_macs, a.mxu_passes) *
                            energy_coefficients(cfg).vmem_pj_per_byte * 1e-12;
    std::array<double, kEnergyClasses> w{};
    w[static_cast<std::size_t>(EnergyClass::Mxu)] = p.mxu + vmem_mxu;
    w[static_cast<std::size_t>(EnergyClass::Vpu)] = p.vpu;
    w[static_cast<std::size_t>(EnergyClass::Hbm)] = p.hbm + p.vmem - vmem_mxu;
    // ICI data energy only where the links are not always on (else it is static).
    w[static_cast<std::size_t>(EnergyClass::Ici)] = static_cast<double>(cfg.ici.links_per_chip) *
                                                    cfg.ici.link_bandwidth_gbps * 8e9 *
                                                    cfg.energy.ici_pj_per_bit * 1e-12;
    w[static_cast<std::size_t>(EnergyClass::Host)] = p.host;
    return w;
}

nlohmann::json energy_json(const EnergyParts& e, const EnergyActivity& a, double peak_board_w,
                           double flops, const TpuConfig& cfg) {
    const double chips = static_cast<double>(std::max<std::int64_t>(a.chips, 1));
    const double avg_board_w = a.seconds > 0 ? e.total() / a.seconds : 0.0;
    nlohmann::json j;
    j["joules"] = e.total();
    j["dynamic_joules"] = e.dynamic();
    j["static_joules"] = e.static_();
    j["parts_joules"] = {{"mxu", e.mxu},
                         {"vpu", e.vpu},
                         {"vmem", e.vmem},
                         {"hbm", e.hbm},
                         {"ici_data", e.ici_data},
                         {"host_link", e.host},
                         {"logic_static", e.logic_static},
                         {"hbm_background", e.hbm_background},
                         {"hbm_refresh", e.hbm_refresh},
                         {"ici_idle", e.ici_idle}};
    j["chips"] = a.chips;
    j["average_watts_per_chip"] = avg_board_w / chips;
    j["peak_watts_per_chip"] = peak_board_w / chips;
    j["peak_window_us"] = cfg.energy.peak_window_us;
    j["idle_watts_per_chip"] = idle_power_per_chip(cfg);
    j["tdp_watts_per_chip"] = cfg.energy.tdp_w;
    j["tflops_per_watt"] = e.total() > 0 ? flops / e.total() / 1e12 : 0.0;
    j["vdd_v"] = energy_coefficients(cfg).vdd_v;
    return j;
}

}  // namespace tpusim
