// `tpusim config`: the configuration in effect, or the reference of every key.
#include <iostream>
#include <nlohmann/json.hpp>

#include "common.h"
#include "tpusim/common/error.h"
#include "tpusim/config/visitor.h"

namespace tpusim::cli {

namespace {

// `config --keys --json`: the key table as data: key, type, default, unit, range, meaning.
class KeyJson : public ConfigVisitor {
 public:
    nlohmann::json keys = nlohmann::json::array();
    void value(const char* key, std::int64_t& v, Limits lim, const char* unit,
               const char* doc) override {
        add(key, "integer", v, unit, doc).update(range(lim));
    }
    void value(const char* key, double& v, Limits lim, const char* unit, const char* doc) override {
        add(key, "number", v, unit, doc).update(range(lim));
    }
    void value(const char* key, bool& v, const char* doc) override {
        add(key, "boolean", v, "", doc);
    }
    void value(const char* key, std::string& v, const std::vector<std::string>& choices,
               const char* doc) override {
        auto& k = add(key, "string", v, "", doc);
        if (!choices.empty()) k["choices"] = choices;
    }

 protected:
    bool begin_section(const char* key, const char*) override {
        prefix_.push_back(prefix_.empty() ? std::string(key) : prefix_.back() + "." + key);
        return true;
    }
    void end_section() override { prefix_.pop_back(); }

 private:
    static nlohmann::json range(const Limits& l) {
        nlohmann::json r = {{"min", l.min}, {"max", l.max}};
        if (l.min_exclusive) r["min_exclusive"] = true;
        if (l.power_of_two) r["power_of_two"] = true;
        return r;
    }
    nlohmann::json& add(const char* key, const char* type, const nlohmann::json& def,
                        const char* unit, const char* doc) {
        keys.push_back({{"key", prefix_.empty() ? key : prefix_.back() + "." + key},
                        {"type", type},
                        {"default", def},
                        {"unit", unit},
                        {"doc", doc}});
        return keys.back();
    }
    std::vector<std::string> prefix_;
};

}  // namespace

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
            TpuConfig defaults;
            KeyJson k;
            defaults.visit(k);
            std::cout << k.keys.dump(2) << "\n";
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
