#include "common.h"

#include <fmt/format.h>

#include <iostream>

#include "tpusim/sim/simulator.h"

namespace tpusim::cli {

void add_common_options(CLI::App* cmd, CommonOptions& opts, bool with_json) {
    cmd->add_option("--config,-c", opts.config,
                    "board configuration (JSON), e.g. configs/tpu_v3_8.json")
        ->required();
    cmd->add_option("--set", opts.sets,
                    "override a config value, e.g. --set mxu.rows=256 (repeatable)")
        ->take_all();
    if (with_json) cmd->add_flag("--json", opts.json, "print JSON instead of text");
}

void print_symmetry_info(const RunResult& r, const TpuConfig& cfg) {
    if (r.symmetry.used || r.cores <= cfg.chip.cores_per_chip ||
        r.symmetry.reason == "--no-symmetry")
        return;
    std::cerr << fmt::format("info: SPMD symmetry not used: {}; all {} cores simulated\n",
                             r.symmetry.reason, r.cores);
}

}  // namespace tpusim::cli
