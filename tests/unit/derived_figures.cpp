// Figures derived from the board configs: expected values are computed here from the config
// fields, and also compared with the published numbers (validation/README.md) they must match.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "../test_util.h"
#include "tpusim/common/types.h"
#include "tpusim/config/tpu_config.h"
#include "tpusim/sim/derived.h"

using Catch::Detail::Approx;
using tpusim::derive;
using tpusim::info_json;
using tpusim::load_config;
using tpusim::test::config_path;

namespace {

// Peak FLOP/s of one core: every PE of every MXU does one multiply-add (2 FLOP) per cycle.
double core_peak(const tpusim::TpuConfig& c) {
    return static_cast<double>(c.core.mxus) * static_cast<double>(c.mxu.rows) *
           static_cast<double>(c.mxu.cols) * 2.0 * c.chip.clock_mhz * 1e6;
}
// HBM peak: every channel moves its bus width once per transfer (data rate counts both edges).
double hbm_peak(const tpusim::TpuConfig& c) {
    return static_cast<double>(c.hbm.stacks * c.hbm.channels_per_stack) *
           static_cast<double>(c.hbm.channel_width_bits) / 8.0 * c.hbm.data_rate_mtps * 1e6;
}
// Capacity: channels x pseudo-channels x bank groups x banks x rows x row size.
double hbm_capacity(const tpusim::TpuConfig& c) {
    const auto& h = c.hbm;
    return static_cast<double>(h.stacks * h.channels_per_stack * h.pseudo_channels * h.bank_groups *
                               h.banks_per_group) *
           static_cast<double>(h.rows) * static_cast<double>(h.row_bytes);
}

void check_against_config(const tpusim::TpuConfig& c) {
    const auto d = derive(c);
    const double chips = static_cast<double>(c.board.chips_x * c.board.chips_y);
    CHECK(d.peak_flops_per_core == Approx(core_peak(c)));
    CHECK(d.peak_flops_per_chip ==
          Approx(core_peak(c) * static_cast<double>(c.chip.cores_per_chip)));
    CHECK(d.peak_flops_total ==
          Approx(core_peak(c) * static_cast<double>(c.chip.cores_per_chip) * chips));
    CHECK(d.hbm_bytes_per_s_per_chip == Approx(hbm_peak(c)));
    CHECK(d.hbm_capacity_bytes_per_chip == Approx(hbm_capacity(c)));
    CHECK(d.ici_link_bytes_per_s == Approx(c.ici.link_bandwidth_gbps * 1e9));
    // The clock at which the derived board peak equals the quoted one.
    const double per_mhz_board = d.peak_flops_total / c.chip.clock_mhz;
    CHECK(d.quoted_implied_clock_mhz == Approx(c.board.quoted_peak_tflops * 1e12 / per_mhz_board));

    const auto j = info_json(c);
    CHECK(j["name"] == c.name);
    CHECK(j["chips"] == c.chips());
    CHECK(j["cores"] == c.cores());
    CHECK(j["clock_mhz"].get<double>() == c.chip.clock_mhz);
    CHECK(j["peak_bf16_tflops"]["per_core"].get<double>() == Approx(core_peak(c) / 1e12));
    CHECK(j["peak_bf16_tflops"]["per_chip"].get<double>() == Approx(d.peak_flops_per_chip / 1e12));
    CHECK(j["peak_bf16_tflops"]["total"].get<double>() == Approx(d.peak_flops_total / 1e12));
    CHECK(j["quoted_peak_tflops"].get<double>() == c.board.quoted_peak_tflops);
    CHECK(j["hbm"]["bandwidth_gbps_per_chip"].get<double>() == Approx(hbm_peak(c) / 1e9));
    CHECK(j["hbm"]["capacity_gib_per_chip"].get<double>() ==
          Approx(hbm_capacity(c) / 1073741824.0));
    CHECK(j["hbm"]["capacity_gib_total"].get<double>() ==
          Approx(hbm_capacity(c) * chips / 1073741824.0));
    CHECK(j["ici"]["links_per_chip"] == c.ici.links_per_chip);
    CHECK(j["ici"]["link_bandwidth_gbps"].get<double>() == c.ici.link_bandwidth_gbps);
}

}  // namespace

TEST_CASE("derived: v2-8 figures follow from its config and match the published ones",
          "[derived]") {
    const auto c = load_config(config_path("tpu_v2_8.json"));
    check_against_config(c);
    // Published figures are rounded: 22.9376 TF per core x 2 = 45.8752 TF per chip.
    // Published: 45.875 TF per chip (quoted 45-46), 183.5 TF per board (quoted 180),
    // 700 GB/s and 16 GiB of HBM per chip [NORn], [DOC3].
    const auto j = info_json(c);
    CHECK(j["peak_bf16_tflops"]["per_chip"].get<double>() ==
          Approx(45.875).epsilon(0).margin(0.001));
    CHECK(j["peak_bf16_tflops"]["total"].get<double>() == Approx(183.5).epsilon(0).margin(0.001));
    CHECK(j["hbm"]["bandwidth_gbps_per_chip"].get<double>() == Approx(700.0).margin(1e-9));
    CHECK(j["hbm"]["capacity_gib_per_chip"].get<double>() == 16.0);
    CHECK(j["quoted_peak_tflops"].get<double>() == 180.0);
}

TEST_CASE("derived: v3-8 figures follow from its config and match the published ones",
          "[derived]") {
    const auto c = load_config(config_path("tpu_v3_8.json"));
    check_against_config(c);
    // Published: 123.2 TF per chip at 940 MHz, 492.8 TF per board (quoted 420, i.e. ~800
    // MHz), 900 GB/s and 32 GiB of HBM per chip.
    const auto j = info_json(c);
    CHECK(j["peak_bf16_tflops"]["per_chip"].get<double>() == Approx(123.2).epsilon(0).margin(0.01));
    // 4 x 123.20768 = 492.83072: the published 492.8 is rounded from the per-chip figure.
    CHECK(j["peak_bf16_tflops"]["total"].get<double>() == Approx(492.8).epsilon(0).margin(0.05));
    CHECK(j["hbm"]["bandwidth_gbps_per_chip"].get<double>() == Approx(900.0).margin(1e-9));
    CHECK(j["hbm"]["capacity_gib_per_chip"].get<double>() == 32.0);
    CHECK(j["quoted_peak_tflops"].get<double>() == 420.0);
    // 420 TF over 8 cores x 2 MXUs x 128 x 128 x 2 FLOP is ~801 MHz.
    CHECK(j["quoted_implied_clock_mhz"].get<double>() == Approx(801.1).margin(0.1));
}

TEST_CASE("derived: figures follow overrides (nothing is a literal)", "[derived]") {
    const auto c = load_config(config_path("tpu_v3_8.json"),
                               {"mxu.rows=256", "chip.clock_mhz=1000", "hbm.stacks=2"});
    check_against_config(c);
    const auto base = derive(load_config(config_path("tpu_v3_8.json")));
    const auto d = derive(c);
    // 256 rows doubles the array, 1000/940 raises the clock; half the stacks halve HBM.
    CHECK(d.peak_flops_total == Approx(base.peak_flops_total * 2.0 * 1000.0 / 940.0));
    CHECK(d.hbm_bytes_per_s_per_chip == Approx(base.hbm_bytes_per_s_per_chip / 2.0));
    CHECK(d.hbm_capacity_bytes_per_chip == Approx(base.hbm_capacity_bytes_per_chip / 2.0));
    check_against_config(load_config(config_path("tpu_v3_8_mxu256.json")));
}
