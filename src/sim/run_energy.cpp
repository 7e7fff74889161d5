// A run's energy: activity from the run's counters, spans from its ops (docs/energy.md).
#include "tpusim/sim/run_energy.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace tpusim {

namespace {

// Sum of every number named `key` anywhere in the stats tree (each chip and core, copies
// included: a symmetric copy is listed under its own name).
double sum_key(const nlohmann::json& j, const std::string& key) {
    double s = 0;
    if (!j.is_object()) return 0;
    for (auto it = j.begin(); it != j.end(); ++it) {
        if (it->is_object()) {
            s += sum_key(*it, key);
        } else if (it.key() == key && it->is_number()) {
            s += it->get<double>();
        }
    }
    return s;
}

}  // namespace

double RunEnergy::average_w_per_chip() const {
    if (activity.seconds <= 0 || activity.chips <= 0) return 0;
    return parts.total() / activity.seconds / static_cast<double>(activity.chips);
}

double RunEnergy::peak_w_per_chip() const {
    return activity.chips > 0 ? peak_board_w / static_cast<double>(activity.chips) : 0;
}

EnergyActivity run_activity(const RunResult& r, const TpuConfig& cfg) {
    EnergyActivity a;
    a.seconds = r.seconds;
    a.chips = cfg.chips();
    a.mxu_array_macs = sum_key(r.stats, "mxu_array_macs");
    a.mxu_passes = sum_key(r.stats, "mxu_passes");
    a.vpu_busy_cycles = sum_key(r.stats, "vpu_busy_cycles");
    a.vmem_dma_bytes = sum_key(r.stats, "dma_port_bytes");
    a.hbm_bytes = static_cast<double>(r.hbm_bytes_read + r.hbm_bytes_written);
    a.ici_bytes = static_cast<double>(r.ici_bytes);
    a.host_bytes = sum_key(r.stats, "bytes_to_device") + sum_key(r.stats, "bytes_to_host");
    return a;
}

RunEnergy run_energy(const RunResult& r, const TpuConfig& cfg, bool with_track) {
    RunEnergy e;
    e.activity = run_activity(r, cfg);
    e.parts = energy_of(e.activity, cfg);
    e.flops = r.flops;
    // Each op takes the share of a part's dynamic energy that its busy cycles (its HBM bytes
    // for HBM and the VMEM DMA traffic) are of the run's.
    const double vmem_mxu = mxu_vmem_bytes(cfg, e.activity.mxu_array_macs, e.activity.mxu_passes) *
                            energy_coefficients(cfg).vmem_pj_per_byte * 1e-12;
    const double by_mxu = e.parts.mxu + vmem_mxu;
    const double by_hbm = e.parts.hbm + (e.parts.vmem - vmem_mxu);
    double busy[kUnitCount] = {0, 0, 0, 0, 0}, hbm = 0;
    for (const auto& op : r.ops) {
        for (std::size_t u = 0; u < kUnitCount; ++u) busy[u] += static_cast<double>(op.busy[u]);
        hbm += static_cast<double>(op.hbm_bytes);
    }
    auto unit = [](Unit u) { return static_cast<std::size_t>(u); };
    // Each class: its energy, and what an op's share of it follows (its total over the ops).
    struct Class {
        EnergyClass cls;
        double joules, total;
        double (*of)(const OpResult&);
    };
    const Class classes[] = {
        {EnergyClass::Mxu, by_mxu, busy[unit(Unit::Mxu)],
         [](const OpResult& op) { return static_cast<double>(op.busy[1]); }},
        {EnergyClass::Vpu, e.parts.vpu, busy[unit(Unit::Vpu)],
         [](const OpResult& op) { return static_cast<double>(op.busy[2]); }},
        {EnergyClass::Hbm, by_hbm, hbm,
         [](const OpResult& op) { return static_cast<double>(op.hbm_bytes); }},
        {EnergyClass::Ici, e.parts.ici_data, busy[unit(Unit::Ici)],
         [](const OpResult& op) { return static_cast<double>(op.busy[3]); }},
        {EnergyClass::Host, e.parts.host, busy[unit(Unit::Host)],
         [](const OpResult& op) { return static_cast<double>(op.busy[4]); }},
    };
    static_assert(static_cast<int>(Unit::Mxu) == 1 && static_cast<int>(Unit::Vpu) == 2 &&
                      static_cast<int>(Unit::Ici) == 3 && static_cast<int>(Unit::Host) == 4,
                  "OpResult::busy is indexed by Unit");
    const double clock_hz = cfg.chip.clock_mhz * 1e6;
    std::vector<EnergySpan> spans;
    spans.reserve(r.ops.size() * kEnergyClasses);
    for (const Class& c : classes) {
        if (c.joules <= 0) continue;
        if (c.total <= 0) {  // no op claims it: spread over the run
            spans.push_back({0.0, r.seconds, c.joules, c.cls});
            continue;
        }
        for (const auto& op : r.ops) {
            const double x = c.of(op);
            if (x <= 0) continue;
            spans.push_back({static_cast<double>(op.start_cycle) / clock_hz,
                             static_cast<double>(op.end_cycle) / clock_hz, c.joules * x / c.total,
                             c.cls});
        }
    }
    const double chips = static_cast<double>(e.activity.chips);
    std::array<double, kEnergyClasses> cap = class_full_load_w_per_chip(cfg);
    for (double& w : cap) w *= chips;
    const double static_w = energy_coefficients(cfg).static_w_per_chip * chips;
    const double window_s = cfg.energy.peak_window_us * 1e-6;
    const PeakPower peak = peak_power(spans, static_w, r.seconds, window_s, cap);
    e.peak_board_w = peak.watts;
    e.peak_window_s = peak.window_s;
    if (with_track) {
        PowerWindows track =
            power_windows(spans, static_w, r.seconds, window_s, cap, kPowerTrackWindows);
        e.track_window_s = track.window_s;
        e.track_board_w = std::move(track.board_w);
    }
    return e;
}

nlohmann::json run_energy_json(const RunEnergy& e, const TpuConfig& cfg) {
    nlohmann::json j = energy_json(e.parts, e.activity, e.peak_board_w, e.flops, cfg);
    j["peak_window_us"] = e.peak_window_s * 1e6;  // the window used (longer for long runs)
    return j;
}

std::string run_energy_line(const RunEnergy& e, const TpuConfig& cfg) {
    const double j = e.parts.total();
    const double tfw = j > 0 ? e.flops / j / 1e12 : 0.0;
    return fmt::format(
        "  energy     {:.4g} J ({:.0f}% static): {:.1f} W per chip average, {:.1f} peak ({:.3g} us "
        "window), idle {:.1f}, TDP {:g}; {:.3f} TFLOPS/W\n",
        j, j > 0 ? 100.0 * e.parts.static_() / j : 0.0, e.average_w_per_chip(), e.peak_w_per_chip(),
        e.peak_window_s * 1e6, idle_power_per_chip(cfg), cfg.energy.tdp_w, tfw);
}

void add_power_track(Timeline& tl, const RunResult& r, const TpuConfig& cfg) {
    if (!tl.enabled()) return;
    const RunEnergy e = run_energy(r, cfg, true);
    if (e.track_board_w.empty() || e.activity.chips <= 0) return;
    const double chips = static_cast<double>(e.activity.chips);
    const double cycles_per_window = e.track_window_s * cfg.chip.clock_mhz * 1e6;
    for (std::size_t w = 0; w < e.track_board_w.size(); ++w) {
        const auto at =
            static_cast<Cycle>(std::llround(static_cast<double>(w) * cycles_per_window));
        tl.counter("power", "W per chip", at, e.track_board_w[w] / chips);
    }
    tl.counter("power", "W per chip", r.cycles, e.track_board_w.back() / chips);
}

}  // namespace tpusim
