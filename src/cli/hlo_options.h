#pragma once
// Options shared by the commands that read XLA HLO (run --hlo, import hlo, trace check --hlo).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "tpusim/config/tpu_config.h"
#include "tpusim/trace/hlo.h"

namespace tpusim::cli {

struct HloCliOptions {
    std::string passes = "all";
    std::int64_t while_trips = 0;
    bool unroll_loops = false;
    std::string after_passes;  // --after-passes FILE: the module as tpusim runs it, as HLO text
};

void add_hlo_options(CLI::App* cmd, HloCliOptions& o);
// Reads and imports the module; prints its warnings on stderr unless quiet.
Trace load_hlo(const std::string& path, const HloCliOptions& o, const TpuConfig& cfg,
               HloImportStats& stats, bool quiet);

}  // namespace tpusim::cli
