// config_to_json (the config in effect, echoed in every report) and config_key_table (the key
// reference in docs/config.md), both visitors over the structs' field lists.
#include <cmath>

#include <fmt/format.h>
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

class KeyTable : public ConfigVisitor {
 public:
    std::string out =
        "| key | type | default | unit | range | meaning |\n|---|---|---|---|---|---|\n";
    void value(const char* key, std::int64_t& v, Limits lim, const char* unit,
               const char* doc) override {
        row(key, "integer", fmt::format("{}", v), unit, range(lim, true), doc);
    }
    void value(const char* key, double& v, Limits lim, const char* unit,
               const char* doc) override {
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

 protected:
    bool begin_section(const char* key, const char*) override {
        prefix_.push_back(prefix_.empty() ? std::string(key) : prefix_.back() + "." + key);
        return true;
    }
    void end_section() override { prefix_.pop_back(); }

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
            s += fmt::format("{}{} {}", s.empty() ? "" : " ", l.min_exclusive ? ">" : ">=",
                             num(l.min));
        }
        return s;
    }
    void row(const char* key, const char* type, const std::string& def, const char* unit,
             const std::string& range, const char* doc) {
        const std::string k = prefix_.empty() ? key : prefix_.back() + "." + key;
        out += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", k, type, def, unit, range, doc);
    }
    std::vector<std::string> prefix_;
};

}  // namespace

json config_to_json(const TpuConfig& cfg) {
    TpuConfig copy = cfg;  // visit() takes mutable references; dumping changes nothing
    Dumper d;
    copy.visit(d);
    return d.take();
}

std::string config_key_table() {
    TpuConfig defaults;
    KeyTable t;
    defaults.visit(t);
    return t.out;
}

}  // namespace tpusim
