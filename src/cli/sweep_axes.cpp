// Sweep spec axes (docs/sweep.md): values, ranges, scales, zips and variants, each value
// checked against the config key's type before any point runs.
#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "sweep_spec_ctx.h"
#include "tpusim/common/json_io.h"
#include "tpusim/config/tpu_config.h"

namespace tpusim::cli::sweep {

using nlohmann::json;

void check_keys(const Ctx& c, const json& obj, const std::string& where,
                std::initializer_list<const char*> allowed) {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
        bool ok = false;
        for (const char* a : allowed) ok = ok || it.key() == a;
        if (!ok) {
            std::string list;
            for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
            c.fail(json_pointer_child(where, it.key()),
                   fmt::format("unknown key \"{}\" (expected one of: {})", it.key(), list));
        }
    }
}

const json& need(const Ctx& c, const json& obj, const std::string& where, const char* key) {
    if (!obj.contains(key)) c.fail(where, fmt::format("missing \"{}\"", key));
    return obj.at(key);
}

std::string need_string(const Ctx& c, const json& v, const std::string& where) {
    if (!v.is_string() || v.get<std::string>().empty())
        c.fail(where, "expected a non-empty string, got " + json_type_name(v));
    return v.get<std::string>();
}

// A config key's value must have the type of the key's default ("integer", "number", ...).
namespace {

constexpr std::size_t kMaxAxisValues = 100000;

// The JSON pointer of a dotted config key ("mxu.rows" -> /mxu/rows). Each part is escaped, so
// that a '~' or '/' in a key names no other key and cannot make an invalid pointer.
json::json_pointer key_pointer(const std::string& key) {
    std::string ptr;
    std::size_t start = 0;
    for (;;) {
        const std::size_t dot = key.find('.', start);
        ptr = json_pointer_child(ptr, key.substr(start, dot - start));
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return json::json_pointer(ptr);
}

void check_config_value(const Ctx& c, const std::string& key, const json& v,
                        const std::string& where) {
    const json::json_pointer jp = key_pointer(key);
    if (key.empty() || !c.base_config.contains(jp))
        c.fail(where,
               fmt::format("unknown config key \"{}\" (tpusim config --keys lists them)", key));
    const json& def = c.base_config.at(jp);
    bool ok = false;
    std::string want;
    if (def.is_boolean()) {
        ok = v.is_boolean(), want = "a boolean";
    } else if (def.is_number_integer() || def.is_number_unsigned()) {
        ok = v.is_number_integer() || v.is_number_unsigned(), want = "an integer";
    } else if (def.is_number()) {
        ok = v.is_number(), want = "a number";
    } else if (def.is_string()) {
        ok = v.is_string(), want = "a string";
    } else {
        c.fail(where, fmt::format("\"{}\" is a config section, not a value", key));
    }
    if (!ok)
        c.fail(where,
               fmt::format("{} takes {}, got {} {}", key, want, json_type_name(v), v.dump()));
}

}  // namespace

// A value for `key`: a config key, or "workload.<param>" (checked against the workloads).
void check_assign(const Ctx& c, const std::vector<Workload>& wls, const std::string& key,
                  const json& v, const std::string& where) {
    if (key.rfind("workload.", 0) != 0) return check_config_value(c, key, v, where);
    // A workload that does not declare the parameter ignores it; none declaring it is a typo.
    const std::string param = key.substr(9);
    bool declared = false;
    for (const auto& w : wls) declared = declared || w.params.contains(param);
    if (!declared)
        c.fail(where, fmt::format("no workload has a parameter \"{}\" (declare it in a "
                                  "workload's \"params\" with a default)",
                                  param));
    if (!(v.is_number() || v.is_string() || v.is_boolean()))
        c.fail(where,
               "a workload parameter takes a number, string or boolean, got " + json_type_name(v));
}

namespace {

std::vector<json> range_values(const Ctx& c, const json& r, const std::string& where) {
    if (!r.is_object()) c.fail(where, "expected {\"from\", \"to\", \"step\" or \"factor\"}");
    check_keys(c, r, where, {"from", "to", "step", "factor"});
    const json& from = need(c, r, where, "from");
    const json& to = need(c, r, where, "to");
    if (!from.is_number() || !to.is_number()) c.fail(where, "\"from\" and \"to\" take numbers");
    if (r.contains("step") == r.contains("factor"))
        c.fail(where, "give exactly one of \"step\" (arithmetic) or \"factor\" (geometric)");
    const bool geometric = r.contains("factor");
    const json& inc = geometric ? r.at("factor") : r.at("step");
    const std::string iw = json_pointer_child(where, geometric ? "factor" : "step");
    if (!inc.is_number()) c.fail(iw, "expected a number, got " + json_type_name(inc));
    const double a = from.get<double>(), b = to.get<double>(), d = inc.get<double>();
    if (geometric ? !(d > 1 && a > 0) : !(d > 0))
        c.fail(iw, geometric ? "factor must be > 1 and from > 0" : "step must be > 0");
    const bool integral = from.is_number_integer() && inc.is_number_integer();
    std::vector<json> out;
    for (double x = a; x <= b * (1 + 1e-12); x = geometric ? x * d : x + d) {
        if (out.size() == kMaxAxisValues) c.fail(where, "more than 100000 values");
        if (integral) {
            out.emplace_back(static_cast<std::int64_t>(std::llround(x)));
        } else {
            out.emplace_back(x);
        }
    }
    return out;
}

// {"key": K, "values" | "range" | "scale": ...} -> the values of K.
std::vector<json> key_values(const Ctx& c, const json& a, const std::string& where,
                             std::string& key) {
    key = need_string(c, need(c, a, where, "key"), json_pointer_child(where, "key"));
    const int forms =
        int(a.contains("values")) + int(a.contains("range")) + int(a.contains("scale"));
    if (forms != 1) c.fail(where, "give exactly one of \"values\", \"range\" or \"scale\"");
    std::vector<json> vals;
    if (a.contains("values")) {
        const json& v = a.at("values");
        if (!v.is_array()) c.fail(json_pointer_child(where, "values"), "expected an array");
        vals.assign(v.begin(), v.end());
        if (vals.empty())
            c.fail(json_pointer_child(where, "values"), "empty axis: give at least one value");
    } else if (a.contains("range")) {
        vals = range_values(c, a.at("range"), json_pointer_child(where, "range"));
        if (vals.empty())
            c.fail(json_pointer_child(where, "range"), "empty axis: \"to\" is below \"from\"");
    } else {
        const std::string sw = json_pointer_child(where, "scale");
        const json& s = a.at("scale");
        if (!s.is_array()) c.fail(sw, "expected an array of factors");
        if (s.empty()) c.fail(sw, "empty axis: give at least one factor");
        const json::json_pointer jp = key_pointer(key);
        if (!c.base_config.contains(jp) || !c.base_config.at(jp).is_number())
            c.fail(json_pointer_child(where, "key"),
                   fmt::format("\"scale\" needs a numeric config key, not \"{}\"", key));
        const json& base = c.base_config.at(jp);
        for (std::size_t i = 0; i < s.size(); ++i) {
            const std::string iw = json_pointer_child(sw, std::to_string(i));
            if (!s[i].is_number()) c.fail(iw, "expected a number, got " + json_type_name(s[i]));
            const double x = base.get<double>() * s[i].get<double>();
            if (base.is_number_float()) {
                vals.emplace_back(x);
            } else if (x == std::floor(x) && std::fabs(x) < 9.2e18) {  // within int64
                vals.emplace_back(static_cast<std::int64_t>(x));
            } else if (x == std::floor(x)) {
                c.fail(iw, fmt::format("{} x {} is out of the integer range of {}", base.dump(),
                                       s[i].dump(), key));
            } else {
                c.fail(iw, fmt::format("{} x {} is not an integer ({} takes integers)", base.dump(),
                                       s[i].dump(), key));
            }
        }
    }
    return vals;
}

// Where the k-th value of an axis came from: its place in "values", else the axis.
std::string value_where(const json& axis, const std::string& where, std::size_t k) {
    if (!axis.contains("values")) return where;
    return json_pointer_child(json_pointer_child(where, "values"), std::to_string(k));
}

}  // namespace

std::vector<AxisValue> parse_axis(const Ctx& c, const std::vector<Workload>& wls, const json& a,
                                  const std::string& where) {
    if (!a.is_object()) c.fail(where, "an axis is an object (docs/sweep.md)");
    std::vector<AxisValue> out;
    if (a.contains("zip")) {
        check_keys(c, a, where, {"zip"});
        const std::string zw = json_pointer_child(where, "zip");
        const json& z = a.at("zip");
        if (!z.is_array() || z.empty()) c.fail(zw, "expected a non-empty array of axes");
        for (std::size_t i = 0; i < z.size(); ++i) {
            const std::string sw = json_pointer_child(zw, std::to_string(i));
            if (!z[i].is_object()) c.fail(sw, "expected an axis object");
            check_keys(c, z[i], sw, {"key", "values", "range", "scale"});
            std::string key;
            const auto vals = key_values(c, z[i], sw, key);
            if (i == 0) out.resize(vals.size());
            if (vals.size() != out.size())
                c.fail(sw, fmt::format("zipped axes need equal lengths: {} values here, {} in "
                                       "the first",
                                       vals.size(), out.size()));
            for (std::size_t k = 0; k < vals.size(); ++k) {
                check_assign(c, wls, key, vals[k], value_where(z[i], sw, k));
                out[k].assigns.emplace_back(key, vals[k]);
                out[k].coords[key] = vals[k];
            }
        }
    } else if (a.contains("variants")) {
        check_keys(c, a, where, {"variants", "name"});
        const std::string vw = json_pointer_child(where, "variants");
        const json& vs = a.at("variants");
        if (!vs.is_array()) c.fail(vw, "expected an array of variants");
        if (vs.empty()) c.fail(vw, "empty axis: give at least one variant");
        const std::string name =
            a.contains("name") ? need_string(c, a.at("name"), json_pointer_child(where, "name"))
                               : "variant";
        for (std::size_t i = 0; i < vs.size(); ++i) {
            const std::string iw = json_pointer_child(vw, std::to_string(i));
            const json& v = vs[i];
            if (!v.is_object()) c.fail(iw, "expected {\"name\", \"extends\", \"set\"}");
            check_keys(c, v, iw, {"name", "extends", "set"});
            AxisValue av;
            av.coords[name] =
                need_string(c, need(c, v, iw, "name"), json_pointer_child(iw, "name"));
            Ctx vc = c;
            if (v.contains("extends")) {
                const std::string ew = json_pointer_child(iw, "extends");
                av.base = c.resolve(need_string(c, v.at("extends"), ew));
                try {
                    vc.base_config = config_to_json(load_config(av.base));
                } catch (const InputError& e) {
                    c.fail(ew, fmt::format("config {} does not load: {}", av.base, e.what()));
                }
            }
            if (v.contains("set")) {
                const std::string sw = json_pointer_child(iw, "set");
                if (!v.at("set").is_object()) c.fail(sw, "expected an object of key: value");
                for (auto it = v.at("set").begin(); it != v.at("set").end(); ++it) {
                    check_assign(vc, wls, it.key(), it.value(), json_pointer_child(sw, it.key()));
                    av.assigns.emplace_back(it.key(), it.value());
                }
            }
            out.push_back(std::move(av));
        }
    } else {
        check_keys(c, a, where, {"key", "values", "range", "scale", "name"});
        std::string key;
        const auto vals = key_values(c, a, where, key);
        const std::string name =
            a.contains("name") ? need_string(c, a.at("name"), json_pointer_child(where, "name"))
                               : key;
        for (std::size_t k = 0; k < vals.size(); ++k) {
            const json& v = vals[k];
            check_assign(c, wls, key, v, value_where(a, where, k));
            AxisValue av;
            av.assigns.emplace_back(key, v);
            av.coords[name] = v;
            out.push_back(std::move(av));
        }
    }
    return out;
}

}  // namespace tpusim::cli::sweep
