// config_to_json (the config in effect, echoed in every report), config_key_table (the key
// reference in docs/config.md) and config_keys_json (`config --keys --json`): visitors over
// the structs' field lists.
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "tpusim/common/json_io.h"
#include "tpusim/config/tpu_config.h"

namespace tpusim {

using nlohmann::json;

namespace {

class Dumper : public ConfigVisitor {
 public:
    Dumper() { stack_.push_back(&root_); }
    json take() { return std::move(root_); }
    void value(const char* key, std::int64_t& v, Limits, const char*, const char*) override {
        (*stack_.back())[key] = v;
    }
    void value(const char* key, double& v, Limits, const char*, const char*) override {
        (*stack_.back())[key] = v;
    }
    void value(const char* key, bool& v, const char*) override { (*stack_.back())[key] = v; }
    void value(const char* key, std::string& v, const std::vector<std::string>&,
               const char*) override {
        (*stack_.back())[key] = v;
    }

 protected:
    bool begin_section(const char* key, const char*) override {
        json& child = (*stack_.back())[key];
        child = json::object();
        stack_.push_back(&child);
        return true;
    }
    void end_section() override { stack_.pop_back(); }

 private:
    json root_ = json::object();
    std::vector<json*> stack_;
};

class KeyTable : public DottedKeyVisitor {
 public:
    explicit KeyTable(const std::string& value_header)
        : out("| key | type | " + value_header +
              " | unit | range | meaning |\n|---|---|---|---|---|---|\n") {}
    std::string out;
    void value(const char* key, std::int64_t& v, Limits lim, const char* unit,
               const char* doc) override {
        row(key, "integer", fmt::format("{}", v), unit, range(lim, true), doc);
    }
    void value(const char* key, double& v, Limits lim, const char* unit, const char* doc) override {
        row(key, "number", fmt::format("{}", v), unit, range(lim, false), doc);
    }
    void value(const char* key, bool& v, const char* doc) override {
        row(key, "boolean", v ? "true" : "false", "", "", doc);
    }
    void value(const char* key, std::string& v, const std::vector<std::string>& choices,
               const char* doc) override {
        std::string r;
        for (const auto& c : choices) r += (r.empty() ? "" : ", ") + c;
        row(key, "string", v.empty() ? "\"\"" : "\"" + v + "\"", "", r, doc);
    }

 private:
    static std::string range(const Limits& l, bool integer) {
        auto num = [&](double x) {
            return integer ? fmt::format("{}", static_cast<long long>(x)) : fmt::format("{}", x);
        };
        std::string s = l.power_of_two ? "power of two" : "";
        const bool lo = std::isfinite(l.min), hi = std::isfinite(l.max);
        if (lo && hi) {
            s += fmt::format("{}[{}, {}]", s.empty() ? "" : " ", num(l.min), num(l.max));
        } else if (lo && !l.power_of_two) {
            s += fmt::format("{}{} {}", s.empty() ? "" : " ",
                             l.min_exclusive ? ">" : ">=", num(l.min));
        }
        return s;
    }
    void row(const char* key, const char* type, const std::string& def, const char* unit,
             const std::string& range, const char* doc) {
        out += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", dotted(key), type, def, unit,
                           range, doc);
    }
};

// `config --keys --json`: the key table as data: key, type, default, unit, range, meaning.
class KeyJson : public DottedKeyVisitor {
 public:
    json keys = json::array();
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

 private:
    static json range(const Limits& l) {
        json r = {{"min", l.min}, {"max", l.max}};
        if (l.min_exclusive) r["min_exclusive"] = true;
        if (l.power_of_two) r["power_of_two"] = true;
        return r;
    }
    json& add(const char* key, const char* type, const json& def, const char* unit,
              const char* doc) {
        keys.push_back(
            {{"key", dotted(key)}, {"type", type}, {"default", def}, {"unit", unit}, {"doc", doc}});
        return keys.back();
    }
};

}  // namespace

json config_to_json(const TpuConfig& cfg) {
    TpuConfig copy = cfg;  // visit() takes mutable references; dumping changes nothing
    Dumper d;
    copy.visit(d);
    return d.take();
}

json config_keys_json(const TpuConfig* in_effect) {
    TpuConfig defaults;
    KeyJson k;
    defaults.visit(k);
    if (in_effect) {  // "value": the config's, beside the default
        TpuConfig copy = *in_effect;
        KeyJson v;
        copy.visit(v);
        for (std::size_t i = 0; i < k.keys.size(); ++i) k.keys[i]["value"] = v.keys[i]["default"];
    }
    return std::move(k.keys);
}

std::string config_key_table(const TpuConfig* in_effect) {
    TpuConfig cfg = in_effect ? *in_effect : TpuConfig{};
    KeyTable t(in_effect ? "value in " + (cfg.name.empty() ? std::string("effect") : cfg.name)
                         : std::string("default"));
    cfg.visit(t);
    return t.out;
}

}  // namespace tpusim
