// `tpusim compare A.json B.json`: two run reports side by side, for what-if studies: the
// step, each unit's busy time, each kernel's self time (an op with the ops fused into it, its
// share of the step on the critical path, so the kernels' differences add up to the step's)
// and the config keys that differ, the kernels sorted by how much they moved. Reports written
// before kernels had self times (no "kernels" array) are compared by the kernels' spans.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common.h"
#include "tpusim/common/error.h"
#include "tpusim/common/json_io.h"

namespace tpusim::cli {

namespace {

using nlohmann::json;

struct CompareOptions {
    std::string a, b;
    bool json = false;
    int top = 15;
};

// A kernel: an op of the report and the ops fused into it (their "bottleneck" says "fused
// into X", along a chain): its self time in us, or its span from the first start to the last
// end in a report without "kernels".
struct Kernel {
    double start = 0, end = 0;
    int ops = 0;
    double us() const { return end - start; }
};

json read_report(const std::string& path) {
    json r = read_json_file(path, kMaxProgramFileBytes);
    if (!r.is_object() || r.value("command", "") != "run" || !r.contains("ops") ||
        !r.contains("config") || !r.contains("seconds"))
        throw InputError(path, "", "not a tpusim run report (write one with run --report)");
    return r;
}

std::map<std::string, Kernel> kernels(const json& r, bool self) {
    if (self) {
        std::map<std::string, Kernel> out;
        for (const auto& k : r["kernels"])
            out[k["name"].get<std::string>()] =
                Kernel{0, k["self_us"].get<double>(), static_cast<int>(k["members"].size())};
        return out;
    }
    const auto roots = kernel_roots(r["ops"]);
    const double mhz = r["config"]["chip"]["clock_mhz"].get<double>();
    std::map<std::string, Kernel> out;
    for (const auto& op : r["ops"]) {
        const double s = op["start_cycle"].get<double>() / mhz,
                     e = op["end_cycle"].get<double>() / mhz;
        auto [it, fresh] = out.try_emplace(roots.at(op["id"].get<std::string>()), Kernel{s, e, 0});
        it->second.start = std::min(it->second.start, s);
        it->second.end = std::max(it->second.end, e);
        ++it->second.ops;
    }
    return out;
}

// Every leaf of a JSON object as "a.b.c" -> value.
void flatten(const json& j, const std::string& prefix, std::map<std::string, json>& out) {
    if (j.is_object()) {
        for (auto it = j.begin(); it != j.end(); ++it)
            flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    } else {
        out[prefix] = j;
    }
}

int compare(const CompareOptions& o) {
    const json a = read_report(o.a), b = read_report(o.b);
    const double ta = a["seconds"].get<double>() * 1e6, tb = b["seconds"].get<double>() * 1e6;
    auto pct = [](double x, double y) { return x != 0 ? 100.0 * (y - x) / x : 0.0; };

    // Units: busy time = busy fraction x step (the cores' average).
    const std::pair<const char*, const char*> units[] = {
        {"MXU", "mxu_busy"},      {"VPU", "vpu_busy"}, {"DMA", "dma_busy"},
        {"HBM", "hbm_bandwidth"}, {"ICI", "ici_busy"}, {"host", "host_busy"}};
    json ju = json::array();
    for (const auto& [name, key] : units) {
        const double ua = a["utilization"].value(key, 0.0) * ta,
                     ub = b["utilization"].value(key, 0.0) * tb;
        ju.push_back({{"unit", name}, {"a_us", ua}, {"b_us", ub}, {"diff_us", ub - ua}});
    }

    // Kernels, matched by their root op's id; sorted by how much they moved.
    const bool self = a.contains("kernels") && b.contains("kernels");
    const auto ka = kernels(a, self), kb = kernels(b, self);
    std::vector<json> jk;
    auto add = [&](const std::string& id, const Kernel* x, const Kernel* y) {
        const double da = x ? x->us() : 0, db = y ? y->us() : 0;
        jk.push_back({{"kernel", id},
                      {"ops", std::max(x ? x->ops : 0, y ? y->ops : 0)},
                      {"a_us", da},
                      {"b_us", db},
                      {"diff_us", db - da},
                      {"in", x && y ? "both"
                             : x    ? "a"
                                    : "b"}});
    };
    for (const auto& [id, k] : ka) {
        const auto it = kb.find(id);
        add(id, &k, it == kb.end() ? nullptr : &it->second);
    }
    for (const auto& [id, k] : kb)
        if (!ka.count(id)) add(id, nullptr, &k);
    std::stable_sort(jk.begin(), jk.end(), [](const json& x, const json& y) {
        return std::abs(x["diff_us"].get<double>()) > std::abs(y["diff_us"].get<double>());
    });

    // Config keys that differ (the report echoes the config in effect).
    std::map<std::string, json> ca, cb;
    flatten(a["config"], "", ca);
    flatten(b["config"], "", cb);
    json jc = json::array();
    for (const auto& [k, v] : ca) {
        const auto it = cb.find(k);
        if (it == cb.end() || it->second != v)
            jc.push_back({{"key", k}, {"a", v}, {"b", it == cb.end() ? json() : it->second}});
    }
    for (const auto& [k, v] : cb)
        if (!ca.count(k)) jc.push_back({{"key", k}, {"a", json()}, {"b", v}});

    if (o.json) {
        json out = {
            {"a", o.a},
            {"b", o.b},
            {"step",
             {{"a_us", ta}, {"b_us", tb}, {"diff_us", tb - ta}, {"diff_percent", pct(ta, tb)}}},
            {"units", ju},
            {"kernel_time", self ? "self" : "span"},
            {"kernels", jk},
            {"config_differences", jc}};
        std::cout << out.dump(2) << "\n";
        return 0;
    }
    std::cout << fmt::format("A {}\nB {}\n", o.a, o.b);
    std::cout << fmt::format("  step       {:.1f} us -> {:.1f} us ({:+.1f} us, {:+.1f}%)\n", ta, tb,
                             tb - ta, pct(ta, tb));
    std::cout << "  config     ";
    if (jc.empty()) std::cout << "the same";
    auto shown = [](const json& v) {  // a long note cut short; --json has it whole
        const std::string t = v.dump();
        return t.size() > 40 ? t.substr(0, 37) + "..." : t;
    };
    for (std::size_t i = 0; i < jc.size(); ++i)
        std::cout << (i ? ", " : "") << jc[i]["key"].get<std::string>() << " " << shown(jc[i]["a"])
                  << " -> " << shown(jc[i]["b"]);
    std::cout << "\n  unit busy  (us, the cores' average)\n";
    for (const auto& u : ju)
        std::cout << fmt::format("    {:<6} {:>12.1f} {:>12.1f} {:>+12.1f}\n",
                                 u["unit"].get<std::string>(), u["a_us"].get<double>(),
                                 u["b_us"].get<double>(), u["diff_us"].get<double>());
    std::cout << fmt::format(
        "  kernels    (an op and the ops fused into it; {} in us, by how much "
        "it moved; {} of {})\n",
        self ? "self time on the critical path" : "span (a report without self times)",
        std::min<std::size_t>(jk.size(), static_cast<std::size_t>(o.top)), jk.size());
    for (std::size_t i = 0; i < jk.size() && i < static_cast<std::size_t>(o.top); ++i) {
        const json& k = jk[i];
        const std::string id = k["kernel"].get<std::string>();
        std::cout << fmt::format(
            "    {:<30} {:>12.1f} {:>12.1f} {:>+12.1f}{}\n", id.substr(0, 30),
            k["a_us"].get<double>(), k["b_us"].get<double>(), k["diff_us"].get<double>(),
            k["in"] == "both" ? "" : fmt::format("  (only in {})", k["in"].get<std::string>()));
    }
    return 0;
}

}  // namespace

void add_compare_command(CLI::App& app) {
    const auto o = std::make_shared<CompareOptions>();
    auto* cmd = app.add_subcommand(
        "compare",
        "two run reports side by side: step, unit busy time, kernels by how much they "
        "moved, config keys that differ");
    cmd->add_option("a", o->a, "the base run's report (run --report)")->required();
    cmd->add_option("b", o->b, "the other run's report")->required();
    cmd->add_flag("--json", o->json, "print JSON instead of text");
    cmd->add_option("--top", o->top, "kernels listed in the text (default 15)")
        ->check(CLI::Range(1, 1000000));
    cmd->callback([o] { compare(*o); });
}

}  // namespace tpusim::cli
