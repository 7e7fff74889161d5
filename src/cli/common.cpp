#include "common.h"

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

}  // namespace tpusim::cli
