#include "tpusim/sim/derived.h"

#include <nlohmann/json.hpp>

#include "tpusim/common/types.h"
#include "tpusim/config/topology.h"
#include "tpusim/stats/energy.h"

namespace tpusim {

DerivedFigures derive(const TpuConfig& cfg) {
    DerivedFigures d{};
    const double macs_per_cycle_per_core =
        static_cast<double>(cfg.core.mxus * cfg.mxu.rows * cfg.mxu.cols);
    d.peak_flops_per_core = macs_per_cycle_per_core * 2.0 * cfg.chip.clock_mhz * 1e6;
    d.peak_flops_per_chip = d.peak_flops_per_core * static_cast<double>(cfg.chip.cores_per_chip);
    d.peak_flops_total = d.peak_flops_per_chip * static_cast<double>(cfg.chips());
    d.hbm_bytes_per_s_per_chip = cfg.hbm.peak_bytes_per_second();
    d.hbm_capacity_bytes_per_chip = static_cast<double>(cfg.hbm.capacity_bytes());
    d.ici_link_bytes_per_s = cfg.ici.link_bandwidth_gbps * 1e9;
    d.quoted_implied_clock_mhz =
        cfg.board.quoted_peak_tflops * 1e12 /
        (macs_per_cycle_per_core * 2.0 * static_cast<double>(cfg.cores())) / 1e6;
    return d;
}

nlohmann::json info_json(const TpuConfig& cfg) {
    const DerivedFigures d = derive(cfg);
    const double gib = static_cast<double>(kGiB);
    nlohmann::json j;
    j["name"] = cfg.name;
    j["description"] = cfg.description;
    j["chips"] = cfg.chips();
    j["topology"] = {{"chips_x", cfg.board.chips_x},
                     {"chips_y", cfg.board.chips_y},
                     {"wraparound", cfg.board.wraparound},
                     {"pod_chips", {cfg.board.pod_chips_x, cfg.board.pod_chips_y}},
                     {"wraps", {cfg.board.wraps(0), cfg.board.wraps(1)}},
                     {"kind", grid_kind(cfg.board.wraps(0), cfg.board.wraps(1))}};
    j["cores"] = cfg.cores();
    j["cores_per_chip"] = cfg.chip.cores_per_chip;
    j["mxus_per_core"] = cfg.core.mxus;
    j["mxu_shape"] = {cfg.mxu.rows, cfg.mxu.cols};
    j["clock_mhz"] = cfg.chip.clock_mhz;
    j["peak_bf16_tflops"] = {{"per_core", d.peak_flops_per_core / 1e12},
                             {"per_chip", d.peak_flops_per_chip / 1e12},
                             {"total", d.peak_flops_total / 1e12},
                             {"derivation", "MXUs per core x rows x cols x 2 FLOP x clock"}};
    j["quoted_peak_tflops"] = cfg.board.quoted_peak_tflops;
    j["quoted_implied_clock_mhz"] = d.quoted_implied_clock_mhz;
    j["quoted_note"] = cfg.board.quoted_note;
    j["hbm"] = {{"bandwidth_gbps_per_chip", d.hbm_bytes_per_s_per_chip / 1e9},
                {"capacity_gib_per_chip", d.hbm_capacity_bytes_per_chip / gib},
                {"capacity_gib_total",
                 d.hbm_capacity_bytes_per_chip * static_cast<double>(cfg.chips()) / gib},
                {"stacks", cfg.hbm.stacks},
                {"channels_per_chip", cfg.hbm.channels()},
                {"data_rate_mtps", cfg.hbm.data_rate_mtps},
                {"derivation", "stacks x channels x channel width x data rate"}};
    j["ici"] = {{"links_per_chip", cfg.ici.links_per_chip},
                {"link_bandwidth_gbps", cfg.ici.link_bandwidth_gbps}};
    j["vmem_mib_per_core"] = cfg.vmem.capacity_mib;
    j["energy"] = {{"idle_watts_per_chip", idle_power_per_chip(cfg)},
                   {"full_load_watts_per_chip", full_load_power_per_chip(cfg)},
                   {"tdp_watts_per_chip", cfg.energy.tdp_w}};
    return j;
}

}  // namespace tpusim
