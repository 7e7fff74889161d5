// Sweep spec -> points (docs/sweep.md). Every mistake a spec can hold is found here, before
// any simulation starts, as one located error: the spec file and the JSON pointer of the value.
#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "sweep_spec_ctx.h"
#include "tpusim/common/error.h"
#include "tpusim/common/json_io.h"
#include "tpusim/config/tpu_config.h"

namespace tpusim::cli::sweep {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

Workload parse_workload(const Ctx& c, const json& w, const std::string& where) {
    if (!w.is_object()) c.fail(where, "a workload is an object (docs/sweep.md)");
    check_keys(c, w, where, {"name", "trace", "hlo", "generate", "params"});
    Workload out;
    out.name = need_string(c, need(c, w, where, "name"), json_pointer_child(where, "name"));
    const int forms =
        int(w.contains("trace")) + int(w.contains("hlo")) + int(w.contains("generate"));
    if (forms != 1) c.fail(where, "give exactly one of \"trace\", \"hlo\" or \"generate\"");
    if (w.contains("trace"))
        out.trace = need_string(c, w.at("trace"), json_pointer_child(where, "trace"));
    if (w.contains("hlo")) out.hlo = need_string(c, w.at("hlo"), json_pointer_child(where, "hlo"));
    if (w.contains("generate")) {
        const std::string gw = json_pointer_child(where, "generate");
        const json& g = w.at("generate");
        if (!g.is_array() || g.empty()) c.fail(gw, "expected a non-empty array (argv)");
        bool has_output = false;
        for (std::size_t i = 0; i < g.size(); ++i) {
            out.generate.push_back(need_string(c, g[i], json_pointer_child(gw, std::to_string(i))));
            has_output = has_output || out.generate.back().find("{output}") != std::string::npos;
        }
        if (!has_output) c.fail(gw, "the generator's argv must name \"{output}\", its trace file");
    }
    if (w.contains("params")) {
        const std::string pw = json_pointer_child(where, "params");
        if (!w.at("params").is_object()) c.fail(pw, "expected an object of name: default");
        out.params = w.at("params");
        if (out.params.contains("output"))
            c.fail(json_pointer_child(pw, "output"), "\"output\" is reserved for the generator");
    }
    return out;
}

std::string value_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

std::string fnv1a_hex(const std::string& text) {
    std::uint64_t h = 1469598103934665603ULL;
    for (unsigned char ch : text) {
        h ^= ch;
        h *= 1099511628211ULL;
    }
    return fmt::format("{:016x}", h);
}

std::string substitute(const std::string& text, const json& params) {
    std::string out = text;
    for (auto it = params.begin(); it != params.end(); ++it) {
        const std::string pat = "{" + it.key() + "}";
        const std::string val = value_text(it.value());
        for (auto pos = out.find(pat); pos != std::string::npos;
             pos = out.find(pat, pos + val.size()))
            out.replace(pos, pat.size(), val);
    }
    return out;
}

std::string workload_source(const Spec& spec, const Point& p) {
    const Workload& w = spec.workloads[p.workload];
    if (!w.trace.empty()) return substitute(w.trace, p.params);
    if (!w.hlo.empty()) return substitute(w.hlo, p.params);
    std::string s;
    for (const auto& a : w.generate) s += (s.empty() ? "" : " ") + substitute(a, p.params);
    return s;
}

Spec load_spec(const std::string& path) {
    return parse_spec(read_input_file(path, kMaxConfigFileBytes, "a JSON sweep spec"), path,
                      fs::absolute(fs::path(path)).parent_path().string());
}

Spec parse_spec(const std::string& text, const std::string& path, const std::string& dir,
                std::size_t max_points) {
    Spec spec;
    spec.path = path;
    spec.dir = dir;
    const json doc = parse_json_text(text, path);
    Ctx c{path, spec.dir, json()};
    if (!doc.is_object()) c.fail("", "a sweep spec is a JSON object (docs/sweep.md)");
    check_keys(c, doc, "", {"name", "description", "base", "set", "workloads", "axes"});
    spec.name = doc.contains("name") ? need_string(c, doc.at("name"), "/name")
                                     : fs::path(path).stem().string();
    spec.canonical = doc;
    spec.hash = fnv1a_hex(doc.dump());

    const std::string base = c.resolve(need_string(c, need(c, doc, "", "base"), "/base"));
    try {
        c.base_config = config_to_json(load_config(base));
    } catch (const InputError& e) {
        c.fail("/base", fmt::format("config {} does not load: {}", base, e.what()));
    }

    const json& wls = need(c, doc, "", "workloads");
    if (!wls.is_array() || wls.empty()) c.fail("/workloads", "expected a non-empty array");
    for (std::size_t i = 0; i < wls.size(); ++i) {
        spec.workloads.push_back(parse_workload(c, wls[i], "/workloads/" + std::to_string(i)));
        for (std::size_t k = 0; k < i; ++k)
            if (spec.workloads[k].name == spec.workloads[i].name)
                c.fail("/workloads/" + std::to_string(i) + "/name", "duplicate workload name");
    }

    std::vector<std::pair<std::string, json>> fixed;
    if (doc.contains("set")) {
        if (!doc.at("set").is_object()) c.fail("/set", "expected an object of key: value");
        for (auto it = doc.at("set").begin(); it != doc.at("set").end(); ++it) {
            const std::string w = json_pointer_child("/set", it.key());
            check_assign(c, spec.workloads, it.key(), it.value(), w);
            fixed.emplace_back(it.key(), it.value());
        }
    }
    std::vector<std::vector<AxisValue>> axes;
    if (doc.contains("axes")) {
        const json& ax = doc.at("axes");
        if (!ax.is_array()) c.fail("/axes", "expected an array of axes");
        for (std::size_t i = 0; i < ax.size(); ++i)
            axes.push_back(parse_axis(c, spec.workloads, ax[i], "/axes/" + std::to_string(i)));
    }

    // Workloads outermost, then the axes in order, the last one varying fastest.
    std::size_t total = spec.workloads.size();
    for (const auto& a : axes) {
        total *= a.size();
        if (total > max_points) c.fail("/axes", fmt::format("more than {} points", max_points));
    }
    std::vector<std::size_t> odo(axes.size(), 0);
    for (std::size_t n = 0; n < total; ++n) {
        std::size_t rest = n;
        for (std::size_t k = axes.size(); k-- > 0;) {
            odo[k] = rest % axes[k].size();
            rest /= axes[k].size();
        }
        Point p;
        p.index = static_cast<std::int64_t>(n);
        p.workload = rest;
        p.base = base;
        const Workload& w = spec.workloads[p.workload];
        p.params = w.params;
        auto apply = [&](const std::string& key, const json& v) {
            if (key.rfind("workload.", 0) == 0) {
                if (p.params.contains(key.substr(9))) p.params[key.substr(9)] = v;
            } else {
                p.sets.emplace_back(key, v);
            }
        };
        for (const auto& [k, v] : fixed) apply(k, v);
        p.label = w.name;
        for (std::size_t k = 0; k < axes.size(); ++k) {
            const AxisValue& av = axes[k][odo[k]];
            if (!av.base.empty()) p.base = av.base;
            for (const auto& [key, v] : av.assigns) apply(key, v);
            for (auto it = av.coords.begin(); it != av.coords.end(); ++it) {
                p.coords[it.key()] = it.value();
                p.label += " " + it.key() + "=" + value_text(it.value());
            }
        }
        spec.points.push_back(std::move(p));
    }
    return spec;
}

}  // namespace tpusim::cli::sweep
