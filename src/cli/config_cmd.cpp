// `tpusim config`: the configuration in effect, or the reference of every key.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "common.h"
#include "tpusim/common/error.h"

namespace tpusim::cli {

namespace {

struct ConfigCmdOptions {
    CommonOptions common;
    bool dump = false;
    bool keys = false;
    bool json = false;
};

}  // namespace

void add_config_command(CLI::App& app) {
    const auto o = std::make_shared<ConfigCmdOptions>();
    auto* cmd = app.add_subcommand(
        "config", "check a configuration; --dump prints it in effect, --keys lists every key");
    cmd->add_option("--config,-c", o->common.config, "board configuration (JSON)");
    cmd->add_option("--set", o->common.sets, "override a config value (repeatable)")->take_all();
    cmd->add_flag("--dump", o->dump, "print the full configuration in effect as JSON");
    cmd->add_flag("--keys", o->keys,
                  "print a Markdown table of every key with its default (with --config: its "
                  "value in that configuration)");
    cmd->add_flag("--json", o->json, "with --keys: the keys as a JSON array");
    cmd->callback([o] {
        const CommonOptions& opts = o->common;
        if (o->keys) {
            // With --config (and --set): the values in effect, not only the defaults, which
            // differ from the shipped boards'.
            std::optional<TpuConfig> cfg;
            if (!opts.config.empty()) cfg = opts.load();
            const TpuConfig* in_effect = cfg ? &*cfg : nullptr;
            if (o->json) {
                std::cout << config_keys_json(in_effect).dump(2) << "\n";
            } else {
                std::cout << config_key_table(in_effect);
            }
            return;
        }
        if (!opts.sets.empty() && opts.config.empty())
            throw InputError("tpusim config", "", "--set needs --config");
        if (opts.config.empty()) throw InputError("tpusim config", "", "--config is required");
        const TpuConfig cfg = opts.load();
        if (o->dump) {
            std::cout << config_to_json(cfg).dump(2) << "\n";
        } else {
            std::cout << opts.config << ": ok\n";
        }
    });
}

}  // namespace tpusim::cli
