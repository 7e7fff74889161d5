// `tpusim config`: the configuration in effect, or the reference of every key.
#include <iostream>
#include <nlohmann/json.hpp>

#include "common.h"
#include "tpusim/common/error.h"

namespace tpusim::cli {

void add_config_command(CLI::App& app) {
    static CommonOptions opts;
    static bool dump = false;
    static bool keys = false;
    static bool json = false;
    auto* cmd = app.add_subcommand(
        "config", "check a configuration; --dump prints it in effect, --keys lists every key");
    cmd->add_option("--config,-c", opts.config, "board configuration (JSON)");
    cmd->add_option("--set", opts.sets, "override a config value (repeatable)")->take_all();
    cmd->add_flag("--dump", dump, "print the full configuration in effect as JSON");
    cmd->add_flag("--keys", keys, "print a Markdown table of every key with its default");
    cmd->add_flag("--json", json, "with --keys: the keys as a JSON array");
    cmd->callback([] {
        if (keys && json) {
            std::cout << config_keys_json().dump(2) << "\n";
            return;
        }
        if (keys) {
            std::cout << config_key_table();
            return;
        }
        if (opts.config.empty()) throw InputError("tpusim config", "", "--config is required");
        const TpuConfig cfg = opts.load();
        if (dump) {
            std::cout << config_to_json(cfg).dump(2) << "\n";
        } else {
            std::cout << opts.config << ": ok\n";
        }
    });
}

}  // namespace tpusim::cli
