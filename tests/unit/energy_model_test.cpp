// The energy model (tpusim/stats/energy.h): expected values are computed here from the
// `energy.*` keys and the board config; the physical properties (sum of parts, linearity in
// the work, monotone in activity, idle below full load) hold for any config.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "../test_util.h"
#include "tpusim/config/tpu_config.h"
#include "tpusim/stats/energy.h"

using Catch::Detail::Approx;
using tpusim::EnergyActivity;
using tpusim::EnergySpan;
using tpusim::load_config;
using tpusim::test::config_path;

namespace {

EnergyActivity some_work(const tpusim::TpuConfig& c) {
    EnergyActivity a;
    a.seconds = 1e-3;
    a.chips = c.chips();
    a.mxu_array_macs = 5e12;
    a.mxu_passes = 1e4;
    a.vpu_busy_cycles = 3e5;
    a.vmem_dma_bytes = 2e8;
    a.hbm_bytes = 2e8;
    a.ici_bytes = 1e7;
    a.host_bytes = 1e6;
    return a;
}

}  // namespace

TEST_CASE("energy: every part from its keys, and the parts sum to the total", "[energy]") {
    const auto c = load_config(config_path("tpu_v3_8.json"));
    const auto& e = c.energy;
    const EnergyActivity a = some_work(c);
    const auto p = tpusim::energy_of(a, c);
    const double scale =
        e.node_nm / e.source_node_nm * (e.vdd_v / e.source_vdd_v) * (e.vdd_v / e.source_vdd_v);
    const double mac_pj = (e.mult_bf16_pj + e.add_fp32_pj) * scale *
                          (1 + e.rf_access_ratio + 2 * e.pe_transfer_ratio);
    CHECK(p.mxu == Approx(a.mxu_array_macs * mac_pj * 1e-12));
    const double rows = static_cast<double>(c.mxu.rows), cols = static_cast<double>(c.mxu.cols);
    const double vmem_bytes = a.vmem_dma_bytes + a.mxu_array_macs / cols * 2 +
                              a.mxu_array_macs / rows * 4 + a.mxu_passes * rows * cols * 2;
    CHECK(p.vmem == Approx(vmem_bytes * e.vmem_pj_per_64bit * scale / 8 * 1e-12));
    const double vpu_ops =
        a.vpu_busy_cycles * static_cast<double>(c.vpu.sublanes * c.vpu.lanes * c.vpu.alus_per_lane);
    CHECK(p.vpu == Approx(vpu_ops * (e.add_fp32_pj + e.mult_fp32_pj) / 2 * scale *
                          (1 + 3 * e.rf_access_ratio) * 1e-12));
    CHECK(p.hbm == Approx(a.hbm_bytes * 8 * e.hbm_pj_per_bit * 1e-12));
    CHECK(p.host == Approx(a.host_bytes * 8 * e.pcie_pj_per_bit * 1e-12));
    const double chip_s = static_cast<double>(a.chips) * a.seconds;
    const double channels = static_cast<double>(c.hbm.stacks * c.hbm.channels_per_stack);
    CHECK(p.hbm_background == Approx(channels * e.hbm_vdd_v * e.hbm_idd3n_ma * 1e-3 * chip_s));
    CHECK(p.hbm_refresh == Approx(channels * e.hbm_vdd_v * (e.hbm_idd5ab_ma - e.hbm_idd3n_ma) *
                                  1e-3 * static_cast<double>(c.hbm.timing.tRFC) /
                                  static_cast<double>(c.hbm.timing.tREFI) * chip_s));
    REQUIRE(e.ici_always_on);
    CHECK(p.ici_data == 0);
    CHECK(p.ici_idle ==
          Approx(static_cast<double>(c.ici.links_per_chip) * c.ici.link_bandwidth_gbps * 8e9 *
                 e.ici_pj_per_bit * 1e-12 * chip_s));
    CHECK(p.total() == Approx(p.mxu + p.vpu + p.vmem + p.hbm + p.ici_data + p.host +
                              p.logic_static + p.hbm_background + p.hbm_refresh + p.ici_idle));
    CHECK(p.total() == Approx(p.dynamic() + p.static_()));
}

TEST_CASE("energy: doubling the work doubles the dynamic energy; static follows time", "[energy]") {
    const auto c = load_config(config_path("tpu_v3_8.json"), {"energy.logic_static_w=50"});
    const EnergyActivity a = some_work(c);
    EnergyActivity twice = a;
    twice.mxu_array_macs *= 2;
    twice.mxu_passes *= 2;
    twice.vpu_busy_cycles *= 2;
    twice.vmem_dma_bytes *= 2;
    twice.hbm_bytes *= 2;
    twice.ici_bytes *= 2;
    twice.host_bytes *= 2;
    const auto p1 = tpusim::energy_of(a, c), p2 = tpusim::energy_of(twice, c);
    CHECK(p2.dynamic() == Approx(2 * p1.dynamic()));
    CHECK(p2.static_() == Approx(p1.static_()));
    EnergyActivity longer = a;
    longer.seconds *= 2;
    const auto p3 = tpusim::energy_of(longer, c);
    CHECK(p3.static_() == Approx(2 * p1.static_()));
    CHECK(p3.dynamic() == Approx(p1.dynamic()));
    CHECK(p1.logic_static == Approx(50.0 * static_cast<double>(a.chips) * a.seconds));
}

TEST_CASE("energy: more of any activity never lowers the energy", "[energy]") {
    const auto c = load_config(config_path("tpu_v3_8.json"), {"energy.ici_always_on=false"});
    const EnergyActivity a = some_work(c);
    const double base = tpusim::energy_of(a, c).total();
    double EnergyActivity::*fields[] = {
        &EnergyActivity::mxu_array_macs,  &EnergyActivity::mxu_passes,
        &EnergyActivity::vpu_busy_cycles, &EnergyActivity::vmem_dma_bytes,
        &EnergyActivity::hbm_bytes,       &EnergyActivity::ici_bytes,
        &EnergyActivity::host_bytes,      &EnergyActivity::seconds};
    for (auto f : fields) {
        EnergyActivity more = a;
        more.*f *= 1.5;
        CHECK(tpusim::energy_of(more, c).total() > base);
    }
}

TEST_CASE("energy: idle below full load, both per chip, full load from the peak rates",
          "[energy]") {
    for (const char* board : {"tpu_v2_8.json", "tpu_v3_8.json"}) {
        const auto c = load_config(config_path(board));
        const double idle = tpusim::idle_power_per_chip(c);
        const double full = tpusim::full_load_power_per_chip(c);
        CHECK(idle > 0);
        CHECK(full > idle);
        // One second of one chip at peak: the MXU part alone is the peak MAC rate x energy.
        EnergyActivity mxu_only;
        mxu_only.seconds = 1;
        mxu_only.chips = 1;
        mxu_only.mxu_array_macs =
            static_cast<double>(c.chip.cores_per_chip * c.core.mxus * c.mxu.rows * c.mxu.cols) *
            c.chip.clock_mhz * 1e6;
        CHECK(full > tpusim::energy_of(mxu_only, c).total());
    }
    // A larger array draws more at full load (more MACs per cycle).
    const auto v3 = load_config(config_path("tpu_v3_8.json"));
    const auto big = load_config(config_path("tpu_v3_8_mxu256.json"));
    CHECK(tpusim::full_load_power_per_chip(big) > tpusim::full_load_power_per_chip(v3));
    CHECK(tpusim::idle_power_per_chip(big) == Approx(tpusim::idle_power_per_chip(v3)));
}

TEST_CASE("energy: the voltage rule scales dynamic energy with V^2 and leaves it off by default",
          "[energy]") {
    const auto base = load_config(config_path("tpu_v3_8.json"));
    const auto slow = load_config(config_path("tpu_v3_8.json"), {"chip.clock_mhz=470"});
    const auto slow_v = load_config(config_path("tpu_v3_8.json"),
                                    {"chip.clock_mhz=470", "energy.voltage_follows_clock=true"});
    const EnergyActivity a = some_work(base);
    const double d = tpusim::energy_of(a, base).dynamic();
    CHECK(tpusim::energy_of(a, slow).dynamic() == Approx(d));  // same work, same V
    const double ratio = 470.0 / base.energy.nominal_clock_mhz;
    // The off-chip parts (HBM, links) do not follow the core supply.
    const auto pb = tpusim::energy_of(a, base), pv = tpusim::energy_of(a, slow_v);
    CHECK(pv.mxu == Approx(pb.mxu * ratio * ratio));
    CHECK(pv.vpu == Approx(pb.vpu * ratio * ratio));
    CHECK(pv.vmem == Approx(pb.vmem * ratio * ratio));
    CHECK(pv.hbm == Approx(pb.hbm));
    CHECK(tpusim::energy_coefficients(slow_v).vdd_v == Approx(base.energy.vdd_v * ratio));
}

TEST_CASE("energy: peak power is the busiest window's average plus the static power", "[energy]") {
    using tpusim::EnergyClass;
    std::array<double, tpusim::kEnergyClasses> no_cap;
    no_cap.fill(std::numeric_limits<double>::infinity());
    auto peak = [&](const std::vector<EnergySpan>& s, double static_w, double seconds,
                    double window) {
        return tpusim::peak_power(s, static_w, seconds, window, no_cap).watts;
    };
    // 10 us run; 1 J spread over [0, 10) us and 1 J more in [2, 3) us.
    const std::vector<EnergySpan> spans = {{0, 10e-6, 1.0, EnergyClass::Mxu},
                                           {2e-6, 3e-6, 1.0, EnergyClass::Hbm}};
    const double static_w = 100;
    const double p = peak(spans, static_w, 10e-6, 1e-6);
    CHECK(p == Approx(static_w + 1.0 / 10e-6 + 1.0 / 1e-6));
    // The average over the run is below the peak; a window as long as the run gives it.
    const double avg = peak(spans, static_w, 10e-6, 10e-6);
    CHECK(avg == Approx(static_w + 2.0 / 10e-6));
    CHECK(avg < p);
    // A span straddling two windows splits its energy by time.
    CHECK(peak({{0.5e-6, 1.5e-6, 1.0, EnergyClass::Vpu}}, 0, 2e-6, 1e-6) == Approx(0.5 / 1e-6));
    // A zero-length span counts its energy in its window.
    CHECK(peak({{1.2e-6, 1.2e-6, 1.0, EnergyClass::Vpu}}, 0, 2e-6, 1e-6) == Approx(1.0 / 1e-6));
    // Two overlapping ops of one class cannot draw more than the class's full-load power.
    std::array<double, tpusim::kEnergyClasses> cap = no_cap;
    cap[static_cast<std::size_t>(EnergyClass::Mxu)] = 3e5;
    const std::vector<EnergySpan> overlap = {{0, 2e-6, 0.4, EnergyClass::Mxu},
                                             {0, 2e-6, 0.4, EnergyClass::Mxu}};
    CHECK(tpusim::peak_power(overlap, 0, 4e-6, 1e-6, cap).watts == Approx(3e5));
    CHECK(tpusim::peak_power(overlap, 0, 4e-6, 1e-6, no_cap).watts == Approx(0.8 / 2e-6));
    // A very long run is cut into at most kMaxPeakWindows windows.
    const auto longrun = tpusim::peak_power(spans, 0, 100.0, 1e-6, no_cap);
    CHECK(longrun.window_s == Approx(100.0 / static_cast<double>(tpusim::kMaxPeakWindows)));
}

TEST_CASE("energy: the power windows (the timeline's power track) hold the run's energy",
          "[energy]") {
    using tpusim::EnergyClass;
    std::array<double, tpusim::kEnergyClasses> no_cap;
    no_cap.fill(std::numeric_limits<double>::infinity());
    // As above: 10 us, 1 J over [0, 10) us and 1 J more in [2, 3) us, 100 W static.
    const std::vector<EnergySpan> spans = {{0, 10e-6, 1.0, EnergyClass::Mxu},
                                           {2e-6, 3e-6, 1.0, EnergyClass::Hbm}};
    const auto w = tpusim::power_windows(spans, 100, 10e-6, 1e-6, no_cap);
    REQUIRE(w.board_w.size() == 10);
    CHECK(w.window_s == Approx(1e-6));
    // Window 2 holds the second joule; every window its share of the first, and the static.
    for (std::size_t k = 0; k < 10; ++k)
        CHECK(w.board_w[k] == Approx(100 + 1.0 / 10e-6 + (k == 2 ? 1.0 / 1e-6 : 0.0)));
    // Energy is kept: the windows' average is the run's, the highest the peak.
    double joules = 0;
    for (double x : w.board_w) joules += x * w.window_s;
    CHECK(joules == Approx(100 * 10e-6 + 2.0));
    CHECK(*std::max_element(w.board_w.begin(), w.board_w.end()) ==
          Approx(tpusim::peak_power(spans, 100, 10e-6, 1e-6, no_cap).watts));
    // At most max_windows: here 4 windows of 2.5 us; the second joule, over [2, 3) us, is
    // split half and half between the first two.
    const auto coarse = tpusim::power_windows(spans, 100, 10e-6, 1e-6, no_cap, 4);
    REQUIRE(coarse.board_w.size() == 4);
    CHECK(coarse.window_s == Approx(2.5e-6));
    CHECK(coarse.board_w[0] == Approx(100 + 1.0 / 10e-6 + 0.5 / 2.5e-6));
    CHECK(coarse.board_w[1] == Approx(100 + 1.0 / 10e-6 + 0.5 / 2.5e-6));
    // A run shorter than the window is one window of its length; no time, no window.
    CHECK(tpusim::power_windows(spans, 100, 10e-6, 20e-6, no_cap).board_w.size() == 1);
    CHECK(tpusim::power_windows(spans, 100, 0, 1e-6, no_cap).board_w.empty());
}

TEST_CASE("energy: the class caps add up to the full-load dynamic power", "[energy]") {
    const auto c = load_config(config_path("tpu_v3_8.json"), {"energy.ici_always_on=false"});
    const auto w = tpusim::class_full_load_w_per_chip(c);
    double sum = 0;
    for (double x : w) sum += x;
    CHECK(sum + tpusim::idle_power_per_chip(c) == Approx(tpusim::full_load_power_per_chip(c)));
}

TEST_CASE("energy: the report object echoes the config's TDP and per-chip figures", "[energy]") {
    const auto c = load_config(config_path("tpu_v2_8.json"));
    const EnergyActivity a = some_work(c);
    const auto p = tpusim::energy_of(a, c);
    const nlohmann::json j = tpusim::energy_json(p, a, 2000.0, 1e12, c);
    CHECK(j["tdp_watts_per_chip"].get<double>() == c.energy.tdp_w);
    CHECK(j["joules"].get<double>() == Approx(p.total()));
    CHECK(j["average_watts_per_chip"].get<double>() ==
          Approx(p.total() / a.seconds / static_cast<double>(c.chips())));
    CHECK(j["peak_watts_per_chip"].get<double>() ==
          Approx(2000.0 / static_cast<double>(c.chips())));
    CHECK(j["tflops_per_watt"].get<double>() == Approx(1e12 / p.total() / 1e12));
    double sum = 0;
    for (auto& [k, v] : j["parts_joules"].items()) sum += v.get<double>();
    CHECK(sum == Approx(p.total()));
}
