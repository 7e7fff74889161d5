// `tpusim info`: figures derived from the config (no simulation); `--modules`: the module tree.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common.h"
#include "tpusim/config/topology.h"
#include "tpusim/sim/derived.h"
#include "tpusim/sim/simulator.h"

namespace tpusim::cli {

namespace {

void print_info_text(const TpuConfig& cfg) {
    const nlohmann::json j = info_json(cfg);
    const auto& p = j["peak_bf16_tflops"];
    const auto& h = j["hbm"];
    std::cout << fmt::format("{}: {}\n", cfg.name, cfg.description);
    std::cout << fmt::format(
        "  board      {} chips ({} x {} {}{}), {} TensorCores ({} per chip), clock {} MHz\n",
        cfg.chips(), cfg.board.chips_x, cfg.board.chips_y,
        grid_kind(cfg.board.wraps(0), cfg.board.wraps(1)),
        cfg.board.pod_chips_x || cfg.board.pod_chips_y
            ? fmt::format(cfg.board.pod_chips_x == cfg.board.chips_x &&
                                  cfg.board.pod_chips_y == cfg.board.chips_y
                              ? ", the whole {} x {} pod"
                              : ", cut from a {} x {} pod",
                          cfg.board.pod_chips_x, cfg.board.pod_chips_y)
            : std::string(),
        cfg.cores(), cfg.chip.cores_per_chip, cfg.chip.clock_mhz);
    std::cout << fmt::format(
        "  peak bf16  {:.3f} TFLOPS per core ({} MXU{} of {} x {} x 2 FLOP x {} MHz)\n",
        p["per_core"].get<double>(), cfg.core.mxus, cfg.core.mxus > 1 ? "s" : "", cfg.mxu.rows,
        cfg.mxu.cols, cfg.chip.clock_mhz);
    std::cout << fmt::format("             {:.3f} TFLOPS per chip, {:.3f} TFLOPS total\n",
                             p["per_chip"].get<double>(), p["total"].get<double>());
    if (cfg.board.quoted_peak_tflops > 0) {
        std::cout << fmt::format(
            "  quoted     {} TFLOPS for the board (documents); that is the derived peak at "
            "{:.0f} MHz\n",
            cfg.board.quoted_peak_tflops, j["quoted_implied_clock_mhz"].get<double>());
    } else {
        std::cout << "  quoted     none (no published figure for this configuration)\n";
    }
    if (!cfg.board.quoted_note.empty()) {
        std::cout << fmt::format("             {}\n", cfg.board.quoted_note);
    }
    std::cout << fmt::format(
        "  HBM        {:.1f} GB/s per chip ({} stacks x {} channels x {} bit x {} MT/s), "
        "{:.0f} GiB per chip, {:.0f} GiB total\n",
        h["bandwidth_gbps_per_chip"].get<double>(), cfg.hbm.stacks, cfg.hbm.channels_per_stack,
        cfg.hbm.channel_width_bits, cfg.hbm.data_rate_mtps,
        h["capacity_gib_per_chip"].get<double>(), h["capacity_gib_total"].get<double>());
    std::cout << fmt::format("  VMEM       {} MiB per core; VPU {} x {} lanes\n",
                             cfg.vmem.capacity_mib, cfg.vpu.sublanes, cfg.vpu.lanes);
    std::cout << fmt::format("  ICI        {} links per chip, {} GB/s per link and direction\n",
                             cfg.ici.links_per_chip, cfg.ici.link_bandwidth_gbps);
    const auto& e = j["energy"];
    std::cout << fmt::format(
        "  power      modelled {:.1f} W per chip idle, {:.1f} W with every unit at its peak "
        "rate; TDP {:g} W (docs/energy.md)\n",
        e["idle_watts_per_chip"].get<double>(), e["full_load_watts_per_chip"].get<double>(),
        e["tdp_watts_per_chip"].get<double>());
}

struct InfoOptions {
    CommonOptions common;
    bool modules = false;
};

}  // namespace

void add_info_command(CLI::App& app) {
    const auto o = std::make_shared<InfoOptions>();
    auto* cmd = app.add_subcommand("info", "print the figures derived from a configuration");
    add_common_options(cmd, o->common);
    cmd->add_flag("--modules", o->modules,
                  "print the SystemC module hierarchy that `tpusim run` builds for this config "
                  "(modules, ports, exports, sockets)");
    cmd->callback([o] {
        const CommonOptions& opts = o->common;
        const TpuConfig cfg = opts.load();
        if (o->modules) {
            std::cout << Simulator(cfg, RunOptions{}).module_tree();
        } else if (opts.json) {
            std::cout << info_json(cfg).dump(2) << "\n";
        } else {
            print_info_text(cfg);
        }
    });
}

}  // namespace tpusim::cli
