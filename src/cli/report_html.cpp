// `tpusim report R.json -o R.html` and `tpusim run ... --html R.html`: a run report as one
// self-contained HTML page (docs/program.md, "HTML report"): the summary, a sortable kernel
// table, a per-core roofline, unit utilisation over time, the config in effect and how to open
// the timeline in Perfetto. Everything is inline (CSS, SVG, one small script); the page loads
// nothing. Every string taken from the report is escaped.
#include "report_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common.h"
#include "tpusim/common/error.h"
#include "tpusim/common/json_io.h"
#include "tpusim/common/text_output.h"

namespace tpusim::cli {

// Not an anonymous namespace: the CLI is compiled in unity batches with compare.cpp, whose
// anonymous namespace has its own Kernel and read_report.
namespace report_html_detail {

using nlohmann::json;

std::string esc(const std::string& s) {
    std::string o;
    o.reserve(s.size() + 16);
    for (const char c : s) {
        switch (c) {
            case '&':
                o += "&amp;";
                break;
            case '<':
                o += "&lt;";
                break;
            case '>':
                o += "&gt;";
                break;
            case '"':
                o += "&quot;";
                break;
            case '\'':
                o += "&#39;";
                break;
            default:
                o += c;
        }
    }
    return o;
}

// Typed reads from the report with located errors: the file and the JSON pointer.
class Fields {
 public:
    explicit Fields(std::string file) : file_(std::move(file)) {}

    [[noreturn]] void fail(const std::string& ptr, const std::string& what) const {
        throw InputError(file_, ptr, what);
    }
    const json& get(const json& obj, const std::string& ptr, const char* key) const {
        if (!obj.is_object()) fail(ptr, "expected an object, got " + json_type_name(obj));
        const auto it = obj.find(key);
        if (it == obj.end())
            fail(json_pointer_child(ptr, key), "missing (not a complete tpusim run report)");
        return *it;
    }
    double num(const json& obj, const std::string& ptr, const char* key) const {
        const json& v = get(obj, ptr, key);
        if (!v.is_number())
            fail(json_pointer_child(ptr, key), "expected a number, got " + json_type_name(v));
        return v.get<double>();
    }
    double num_or(const json& obj, const std::string& ptr, const char* key, double dflt) const {
        return obj.is_object() && obj.contains(key) ? num(obj, ptr, key) : dflt;
    }
    std::string str(const json& obj, const std::string& ptr, const char* key) const {
        const json& v = get(obj, ptr, key);
        if (!v.is_string())
            fail(json_pointer_child(ptr, key), "expected a string, got " + json_type_name(v));
        return v.get<std::string>();
    }
    std::string str_or(const json& obj, const std::string& ptr, const char* key,
                       const std::string& dflt) const {
        return obj.is_object() && obj.contains(key) ? str(obj, ptr, key) : dflt;
    }
    // A count or rate that a roof or a unit count divides or multiplies by.
    double positive(const json& obj, const std::string& ptr, const char* key) const {
        const double v = num(obj, ptr, key);
        if (!(v > 0)) fail(json_pointer_child(ptr, key), fmt::format("expected > 0, got {}", v));
        return v;
    }
    const json& array(const json& obj, const std::string& ptr, const char* key) const {
        const json& v = get(obj, ptr, key);
        if (!v.is_array())
            fail(json_pointer_child(ptr, key), "expected an array, got " + json_type_name(v));
        return v;
    }

 private:
    std::string file_;
};

// The units an op's or kernel's unit_busy_cycles name, in the report's spelling.
constexpr std::array<const char*, 5> kUnits = {"MXU", "VPU", "DMA", "ICI", "host"};

// One row of the kernel table: a kernel of the report's `kernels` (self time on the critical
// path) or, for a report without them, an op and the ops fused into it (its span).
struct Row {
    std::string name, kind, bound;
    std::vector<std::string> members;
    double time_cycles = 0;  // self time (kernels) or span (fallback)
    double share = 0;        // self_cycles / run cycles (kernels only)
    double trips = 1, per_trip_cycles = 0, span_cycles = 0;
    double start = 0, end = 0;
    double flops = 0, hbm_bytes = 0, tflops = 0;
    std::array<double, kUnits.size()> busy{};
};

// The figures every part of the page needs, read once.
struct Page {
    const json* r = nullptr;
    std::string file, timeline;
    double cycles = 0, seconds = 0, mhz = 0;
    double cores = 1, chips = 1, cores_per_chip = 1;
    // How many units of each kind an op's unit_busy_cycles add up over (docs/program.md):
    // every MXU of every core, every DMA engine of every core, the others per core.
    std::array<double, kUnits.size()> units{};
    // Per-core roofs (FLOP/s, bytes/s) and how each is derived from the config.
    double mxu_roof = 0, vpu_roof = 0, hbm_roof = 0;
    std::string mxu_how, vpu_how, hbm_how;
    bool spans = false;  // rows from ops' spans (no `kernels` in the report)
    std::vector<Row> rows;
    std::string attribution;  // what the rows' times are, in words
};

std::string num_text(double v, int decimals) { return fmt::format("{:.{}f}", v, decimals); }

// A value for the table's data-v attribute (sorting): the shortest exact text.
std::string sort_key(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "0"; }

void read_roofs(Page& p, const Fields& f) {
    const json& cfg = f.get(*p.r, "", "config");
    const json& chip = f.get(cfg, "/config", "chip");
    const json& core = f.get(cfg, "/config", "core");
    const json& mxu = f.get(cfg, "/config", "mxu");
    const json& vpu = f.get(cfg, "/config", "vpu");
    const json& dma = f.get(cfg, "/config", "dma");
    p.mhz = f.positive(chip, "/config/chip", "clock_mhz");
    p.cores_per_chip = f.positive(chip, "/config/chip", "cores_per_chip");
    const double mxus = f.positive(core, "/config/core", "mxus");
    const double rows = f.positive(mxu, "/config/mxu", "rows"),
                 cols = f.positive(mxu, "/config/mxu", "cols");
    const double lanes = f.positive(vpu, "/config/vpu", "lanes"),
                 sublanes = f.positive(vpu, "/config/vpu", "sublanes"),
                 slots = f.positive(vpu, "/config/vpu", "valu_slots");
    const double hz = p.mhz * 1e6;
    // The same derivations as `tpusim info` (MXU) and scripts/plot.py (VPU: one operation per
    // element per vector ALU slot and cycle).
    p.mxu_roof = mxus * rows * cols * 2 * hz;
    p.mxu_how = fmt::format("{:g} MXU{} x {:g} x {:g} x 2 FLOP x {:g} MHz", mxus,
                            mxus == 1 ? "" : "s", rows, cols, p.mhz);
    p.vpu_roof = lanes * sublanes * slots * hz;
    p.vpu_how = fmt::format("{:g} sublanes x {:g} lanes x {:g} ALU slot{} x {:g} MHz", sublanes,
                            lanes, slots, slots == 1 ? "" : "s", p.mhz);
    // A core's own share of its chip's HBM (a v3 core: half of the chip's), as the summary's
    // HBM line and the verdicts use it.
    const double chip_gbps =
        f.positive(f.get(*p.r, "", "hbm"), "/hbm", "peak_gbps_per_chip");  // derived by the run
    p.hbm_roof = chip_gbps * 1e9 / p.cores_per_chip;
    p.hbm_how =
        fmt::format("{:.1f} GB/s per chip / {:g} cores per chip", chip_gbps, p.cores_per_chip);
    const double engines = f.positive(dma, "/config/dma", "engines");
    p.units = {p.cores * mxus, p.cores, p.cores * engines, p.cores, p.cores};
}

std::array<double, kUnits.size()> read_busy(const json& obj, const std::string& ptr,
                                            const Fields& f) {
    std::array<double, kUnits.size()> b{};
    if (!obj.contains("unit_busy_cycles")) return b;
    const json& u = f.get(obj, ptr, "unit_busy_cycles");
    const std::string up = json_pointer_child(ptr, "unit_busy_cycles");
    for (std::size_t i = 0; i < kUnits.size(); ++i) b[i] = f.num_or(u, up, kUnits[i], 0.0);
    return b;
}

// Rows from the report's `kernels` (docs/program.md): self time on the critical path.
void kernel_rows(Page& p, const Fields& f) {
    const json& ks = f.array(*p.r, "", "kernels");
    for (std::size_t i = 0; i < ks.size(); ++i) {
        const json& k = ks[i];
        const std::string ptr = fmt::format("/kernels/{}", i);
        Row row;
        row.name = f.str(k, ptr, "name");
        row.kind = f.str_or(k, ptr, "kind", "");
        row.bound = f.str_or(k, ptr, "bound", "");
        if (k.contains("members")) {
            const json& m = f.array(k, ptr, "members");
            for (std::size_t j = 0; j < m.size(); ++j) {
                if (!m[j].is_string())
                    f.fail(fmt::format("{}/members/{}", ptr, j),
                           "expected a string, got " + json_type_name(m[j]));
                row.members.push_back(m[j].get<std::string>());
            }
        }
        if (row.members.empty()) row.members.push_back(row.name);
        row.time_cycles = f.num(k, ptr, "self_cycles");
        row.share = f.num_or(k, ptr, "share", p.cycles > 0 ? row.time_cycles / p.cycles : 0);
        row.trips = std::max(1.0, f.num_or(k, ptr, "trips", 1));
        row.per_trip_cycles = f.num_or(k, ptr, "self_cycles_per_trip", row.time_cycles / row.trips);
        row.span_cycles = f.num_or(k, ptr, "span_cycles", 0);
        row.start = f.num_or(k, ptr, "start_cycle", 0);
        row.end = f.num_or(k, ptr, "end_cycle", row.start + row.span_cycles);
        row.flops = f.num_or(k, ptr, "flops", 0);
        row.hbm_bytes = f.num_or(k, ptr, "hbm_bytes", 0);
        const double s = row.time_cycles / (p.mhz * 1e6);
        row.tflops = f.num_or(k, ptr, "tflops", s > 0 ? row.flops / s / 1e12 : 0);
        row.busy = read_busy(k, ptr, f);
        p.rows.push_back(std::move(row));
    }
    std::stable_sort(p.rows.begin(), p.rows.end(),
                     [](const Row& a, const Row& b) { return a.time_cycles > b.time_cycles; });
    std::string how = "self time on the critical path";
    if (p.r->contains("kernel_attribution") && (*p.r)["kernel_attribution"].is_object()) {
        const json& a = (*p.r)["kernel_attribution"];
        const std::string method = f.str_or(a, "/kernel_attribution", "method", "");
        if (!method.empty()) how = "self time by " + method;
        if (a.contains("core"))
            how += fmt::format(" (core {:g})", f.num(a, "/kernel_attribution", "core"));
    }
    double sum = 0;
    for (const Row& r : p.rows) sum += r.time_cycles;
    p.attribution = fmt::format(
        "{} kernel{}, each an op and the ops fused into it (its members), as the chip runs "
        "them; time is {}: the rows sum to {:.0f} of the run's {:.0f} cycles.",
        p.rows.size(), p.rows.size() == 1 ? "" : "s", how, sum, p.cycles);
}

// Rows for a report written before `kernels`: an op and the ops fused into it (an op whose
// bottleneck says "fused into X" belongs to X's kernel, along a chain, as `tpusim compare`
// groups them), timed by its span from the first member's start to the last one's end.
void span_rows(Page& p, const Fields& f) {
    const json& ops = f.array(*p.r, "", "ops");
    std::vector<std::string> ids;
    for (std::size_t i = 0; i < ops.size(); ++i) {
        const std::string ptr = fmt::format("/ops/{}", i);
        ids.push_back(f.str(ops[i], ptr, "id"));
        (void)f.str_or(ops[i], ptr, "bottleneck", "");  // a located error if not a string
    }
    const auto roots = kernel_roots(ops);      // every id checked a string above
    std::map<std::string, std::size_t> index;  // root id -> row
    for (std::size_t i = 0; i < ops.size(); ++i) {
        const json& op = ops[i];
        const std::string ptr = fmt::format("/ops/{}", i);
        const std::string id = ids[i], r = roots.at(id);
        const double s = f.num(op, ptr, "start_cycle"), e = f.num(op, ptr, "end_cycle");
        auto [it, fresh] = index.try_emplace(r, p.rows.size());
        if (fresh) {
            Row row;
            row.name = r;
            row.start = s;
            row.end = e;
            p.rows.push_back(std::move(row));
        }
        Row& row = p.rows[it->second];
        row.start = std::min(row.start, s);
        row.end = std::max(row.end, e);
        if (id == r) {  // the root: the kernel's kind, trips and verdict are its own
            row.kind = f.str_or(op, ptr, "kind", "");
            row.bound = f.str_or(op, ptr, "bottleneck", "");
            row.trips = std::max(1.0, f.num_or(op, ptr, "trips", 1));
            row.members.insert(row.members.begin(), id);
        } else {
            row.members.push_back(id);
        }
        row.flops += f.num_or(op, ptr, "flops", 0);
        row.hbm_bytes += f.num_or(op, ptr, "hbm_bytes", 0);
        const auto b = read_busy(op, ptr, f);
        for (std::size_t u = 0; u < b.size(); ++u) row.busy[u] += b[u];
    }
    for (Row& row : p.rows) {
        row.time_cycles = row.span_cycles = row.end - row.start;
        row.per_trip_cycles = row.time_cycles / row.trips;
        const double s = row.time_cycles / (p.mhz * 1e6);
        row.tflops = s > 0 ? row.flops / s / 1e12 : 0;
    }
    std::stable_sort(p.rows.begin(), p.rows.end(),
                     [](const Row& a, const Row& b) { return a.time_cycles > b.time_cycles; });
    p.attribution = fmt::format(
        "This report has no kernel rows (it was written by a tpusim without them): {} "
        "kernel{} built from its {} ops, each an op and the ops fused into it, timed by "
        "<b>spans</b> (first member's start to last member's end). Spans overlap: they do not "
        "sum to the step, and TFLOPS over a span understate a kernel that shares its time.",
        p.rows.size(), p.rows.size() == 1 ? "" : "s", ops.size());
}

Page read_page(const json& r, const std::string& file, const std::string& timeline) {
    const Fields f(file);
    if (!r.is_object() || !r.contains("command") || r["command"] != "run")
        throw InputError(file, "", "not a tpusim run report (write one with tpusim run --report)");
    if (!r.contains("ops"))
        throw InputError(file, "/ops",
                         "missing: a run report lists its ops (write one with tpusim run "
                         "--report)");
    Page p;
    p.r = &r;
    p.file = file;
    p.timeline = timeline;
    p.cycles = f.num(r, "", "cycles");
    p.seconds = f.num(r, "", "seconds");
    p.cores = std::max(1.0, f.num(r, "", "cores"));
    p.chips = std::max(1.0, f.num(r, "", "chips"));
    read_roofs(p, f);
    f.array(r, "", "ops");
    p.spans = !r.contains("kernels");
    if (p.spans)
        span_rows(p, f);
    else
        kernel_rows(p, f);
    return p;
}

// ---------------------------------------------------------------------------------------
// The page's parts.

std::string pct(double fraction) { return fmt::format("{:.1f}%", 100 * fraction); }

std::string summary_html(const Page& p, const Fields& f) {
    const json& r = *p.r;
    const json& util = f.get(r, "", "utilization");
    auto u = [&](const char* key) { return f.num_or(util, "/utilization", key, 0.0); };
    const std::string board = f.str_or(r["config"], "/config", "name", "");
    const std::string desc = f.str_or(r["config"], "/config", "description", "");
    std::string trace_name, trace_path;
    if (r.contains("trace") && r["trace"].is_object()) {
        trace_name = f.str_or(r["trace"], "/trace", "name", "");
        trace_path = f.str_or(r["trace"], "/trace", "path", "");
    }
    std::string o = "<table class=\"kv\" id=\"summary-table\">\n";
    auto row = [&](const char* key, const std::string& html, const char* id) {
        o += fmt::format("<tr><th>{}</th><td id=\"{}\">{}</td></tr>\n", key, id, html);
    };
    row("program",
        esc(trace_name) +
            (trace_path.empty() ? "" : " <span class=\"dim\">(" + esc(trace_path) + ")</span>"),
        "s-program");
    row("board", esc(board) + (desc.empty() ? "" : ": " + esc(desc)), "s-board");
    const double cores = f.num(r, "", "cores"), chips = f.num(r, "", "chips");
    std::string cores_text = fmt::format("{:g} core{} on {:g} chip{}", cores, cores == 1 ? "" : "s",
                                         chips, chips == 1 ? "" : "s");
    if (r.contains("symmetry") && r["symmetry"].is_object() && r["symmetry"].contains("used") &&
        r["symmetry"]["used"] == true)
        cores_text +=
            fmt::format(" (SPMD symmetry: {:g} simulated, the others run the same program)",
                        f.num(r["symmetry"], "/symmetry", "simulated_cores"));
    row("cores", cores_text, "s-cores");
    row("step time",
        fmt::format("<b>{:.0f} cycles = {:.6f} ms</b> at {:g} MHz", p.cycles, p.seconds * 1e3,
                    p.mhz),
        "s-time");
    row("compute",
        fmt::format("{:.2f} TFLOPS achieved of {:.2f} peak (MXU utilization {:.1f}%)",
                    f.num(r, "", "achieved_bf16_tflops"), f.num(r, "", "peak_bf16_tflops"),
                    100 * f.num(r, "", "mxu_utilization")),
        "s-compute");
    // One denominator, as in the terminal summary: GB/s per chip, and the busy share of the
    // bandwidth the program's cores can use (their shares of their chips').
    const json& hbm = f.get(r, "", "hbm");
    const double peak_chip = f.num(hbm, "/hbm", "peak_gbps_per_chip");
    const double share = std::min(1.0, cores / (chips * p.cores_per_chip));
    std::string h = fmt::format("{:.1f} MB read, {:.1f} MB written: <b>{:.1f} GB/s per chip</b>, ",
                                f.num(hbm, "/hbm", "bytes_read") / 1e6,
                                f.num(hbm, "/hbm", "bytes_written") / 1e6,
                                f.num(hbm, "/hbm", "achieved_gbps_per_chip"));
    if (share < 1.0)
        h += fmt::format("{:.1f}% of the {:.1f} its {} can use (peak {:.1f})",
                         100 * u("hbm_bandwidth"), peak_chip * share, cores == 1 ? "core" : "cores",
                         peak_chip);
    else
        h += fmt::format("{:.1f}% of the {:.1f} peak", 100 * u("hbm_bandwidth"), peak_chip);
    row("HBM", h, "s-hbm");
    row("busy",
        fmt::format("MXU {} (padding {} of its MACs), VPU {}, DMA {}, HBM {}, ICI {}, host {}",
                    pct(u("mxu_busy")), pct(u("mxu_padding_waste")), pct(u("vpu_busy")),
                    pct(u("dma_busy")), pct(u("hbm_bandwidth")), pct(u("ici_busy")),
                    pct(u("host_busy"))),
        "s-busy");
    const std::pair<const char*, const char*> top[] = {{"mxu_busy", "MXU busy"},
                                                       {"hbm_bandwidth", "HBM bandwidth"},
                                                       {"vpu_busy", "VPU busy"},
                                                       {"ici_busy", "ICI busy"},
                                                       {"host_busy", "host link busy"}};
    const auto* t = std::max_element(std::begin(top), std::end(top),
                                     [&](auto& a, auto& b) { return u(a.first) < u(b.first); });
    const std::string verdict = f.str(r, "", "bottleneck");
    row("bound by",
        fmt::format("<b>{}</b> ({}{} {})", esc(verdict),
                    verdict == "latency" ? "no unit busy half the time; the most, " : "", t->second,
                    pct(u(t->first))),
        "s-bound");
    if (r.contains("warnings") && r["warnings"].is_array() && !r["warnings"].empty()) {
        std::string w = "<ul class=\"warnings\">";
        for (const auto& x : r["warnings"])
            w += "<li>" + esc(x.is_string() ? x.get<std::string>() : x.dump()) + "</li>";
        row("warnings", w + "</ul>", "s-warnings");
    }
    o += "</table>\n";
    return o;
}

struct Column {
    const char* key;
    std::string title, tip;
    bool text;
};

std::string kernel_table_html(const Page& p) {
    // ICI and host columns only where some kernel used them.
    std::array<bool, kUnits.size()> shown{true, true, true, false, false};
    for (const Row& r : p.rows)
        for (std::size_t u = 3; u < kUnits.size(); ++u) shown[u] = shown[u] || r.busy[u] > 0;
    const std::string t = p.spans ? "span" : "self";
    std::vector<Column> cols = {
        {"name", "kernel", "the root op (the one the others are fused into) and its members", true},
        {"kind", "kind", "the root op's kind", true},
        {p.spans ? "span_us" : "self_us", t + " &micro;s",
         p.spans ? "first member's start to last member's end (spans overlap)"
                 : "this kernel's share of the run on the critical path",
         false}};
    if (!p.spans) cols.push_back({"share", "share", "self time / the run's time", false});
    cols.push_back({"trips", "trips", "loop trip count (1 outside loops)", false});
    cols.push_back({"per_trip_us", t + " &micro;s per trip", "time / trips", false});
    if (!p.spans)
        cols.push_back({"span_us", "span &micro;s",
                        "first member's start to last member's end (a loop: the whole loop)",
                        false});
    const std::string all = p.cores > 1 ? fmt::format(" of all {:g} cores", p.cores) : "";
    cols.push_back({"tflops", "TFLOPS", "FLOPs" + all + " / " + t + " time", false});
    cols.push_back({"intensity", "FLOP/B", "FLOPs per HBM byte", false});
    // Per chip, the summary's denominator: the bytes over the chips the program ran on.
    cols.push_back(
        {"gbps", "HBM GB/s per chip",
         fmt::format("HBM bytes / {:g} chip{} / {} time", p.chips, p.chips == 1 ? "" : "s", t),
         false});
    const char* unit_keys[] = {"mxu_us", "vpu_us", "dma_us", "ici_us", "host_us"};
    for (std::size_t u = 0; u < kUnits.size(); ++u)
        if (shown[u])
            cols.push_back({unit_keys[u], std::string(kUnits[u]) + " busy &micro;s",
                            fmt::format("busy cycles over the {:g} {} unit{} (their average), "
                                        "in microseconds",
                                        p.units[u], kUnits[u], p.units[u] == 1 ? "" : "s"),
                            false});
    cols.push_back({"bound", "bound by", "the kernel's verdict (docs/program.md)", true});

    std::string o = fmt::format(
        "<table id=\"kernel-table\" class=\"sortable\" data-rows=\"{}\" data-source=\"{}\">\n"
        "<thead><tr>",
        p.rows.size(), p.spans ? "spans" : "kernels");
    for (const Column& c : cols)
        o += fmt::format(
            "<th data-key=\"{}\" data-type=\"{}\" title=\"{} (click to sort)\" tabindex=\"0\" "
            "aria-sort=\"none\">{}</th>",
            c.key, c.text ? "text" : "num", c.tip, c.title);
    o += "</tr></thead>\n<tbody>\n";
    const double us_per_cycle = 1.0 / p.mhz;
    for (const Row& r : p.rows) {
        const double secs = r.time_cycles / (p.mhz * 1e6);
        o += "<tr>";
        for (const Column& c : cols) {
            const std::string k = c.key;
            std::string v, shown_text;
            if (k == "name") {
                v = esc(r.name);
                shown_text = "<span class=\"kname\">" + esc(r.name) + "</span>";
                if (r.members.size() > 1) {
                    std::string m;
                    for (std::size_t i = 1; i < r.members.size(); ++i)
                        m += (i > 1 ? ", " : "") + esc(r.members[i]);
                    shown_text += fmt::format("<div class=\"members\">+ {} fused: {}</div>",
                                              r.members.size() - 1, m);
                }
            } else if (k == "kind" || k == "bound") {
                v = esc(k == "kind" ? r.kind : r.bound);
                shown_text = v;
            } else {
                double x = 0;
                int dec = 1;
                if (k == "self_us" || (k == "span_us" && p.spans)) {
                    x = r.time_cycles * us_per_cycle;
                } else if (k == "span_us") {
                    x = r.span_cycles * us_per_cycle;
                } else if (k == "share") {
                    x = r.share;
                } else if (k == "trips") {
                    x = r.trips;
                    dec = 0;
                } else if (k == "per_trip_us") {
                    x = r.per_trip_cycles * us_per_cycle;
                } else if (k == "tflops") {
                    x = r.tflops;
                    dec = 2;
                } else if (k == "intensity") {
                    x = r.hbm_bytes > 0 ? r.flops / r.hbm_bytes : -1;
                } else if (k == "gbps") {
                    x = secs > 0 ? r.hbm_bytes / p.chips / secs / 1e9 : 0;
                } else {
                    for (std::size_t u = 0; u < kUnits.size(); ++u)
                        if (k == unit_keys[u]) x = r.busy[u] / p.units[u] * us_per_cycle;
                }
                v = sort_key(x);
                if (k == "share")
                    shown_text = pct(x);
                else if (k == "intensity" && x < 0)
                    shown_text = "<span class=\"dim\">no HBM</span>";
                else
                    shown_text = num_text(x, dec);
            }
            o += fmt::format("<td data-v=\"{}\"{}>{}</td>", v, c.text ? "" : " class=\"n\"",
                             shown_text);
        }
        o += "</tr>\n";
    }
    o += "</tbody></table>\n";
    return o;
}

// Log-scale axis helper: value -> pixel.
struct LogAxis {
    double lo, hi, p0, p1;  // value range and pixel range
    double at(double v) const {
        return p0 +
               (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) * (p1 - p0);
    }
};

std::string colour_of(const std::string& bound) {
    static const std::map<std::string, std::string> c = {
        {"compute", "#1f77b4"}, {"hbm", "#d62728"},  {"vector", "#2ca02c"},
        {"ici", "#9467bd"},     {"host", "#8c564b"}, {"latency", "#7f7f7f"}};
    const auto it = c.find(bound);
    return it == c.end() ? "#444" : it->second;
}

std::string roofline_svg(const Page& p) {
    struct Pt {
        const Row* row;
        double x, y;
    };
    std::vector<Pt> pts;
    std::size_t left_out = 0;
    for (const Row& r : p.rows) {
        const double s = r.time_cycles / (p.mhz * 1e6);
        if (r.flops > 0 && r.hbm_bytes > 0 && s > 0)
            pts.push_back({&r, r.flops / r.hbm_bytes, r.flops / p.cores / s});
        else
            ++left_out;
    }
    const double ridge_mxu = p.mxu_roof / p.hbm_roof, ridge_vpu = p.vpu_roof / p.hbm_roof;
    double xlo = std::min(ridge_vpu, ridge_mxu), xhi = std::max(ridge_vpu, ridge_mxu);
    double ylo = std::min(p.vpu_roof, p.mxu_roof), yhi = std::max(p.vpu_roof, p.mxu_roof);
    for (const Pt& q : pts) {
        xlo = std::min(xlo, q.x);
        xhi = std::max(xhi, q.x);
        ylo = std::min(ylo, q.y);
        yhi = std::max(yhi, q.y);
    }
    // Whole decades around everything.
    xlo = std::pow(10, std::floor(std::log10(xlo / 2)));
    xhi = std::pow(10, std::ceil(std::log10(xhi * 4)));
    ylo = std::pow(10, std::floor(std::log10(ylo / 2)));
    yhi = std::pow(10, std::ceil(std::log10(yhi * 2)));
    const double W = 760, H = 440, L = 70, R = 20, T = 20, B = 50;
    const LogAxis ax{xlo, xhi, L, W - R}, ay{ylo, yhi, H - B, T};
    std::string o = fmt::format(
        "<svg id=\"roofline-svg\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" "
        "role=\"img\" aria-label=\"roofline per core\" data-points=\"{2}\" "
        "data-mxu-roof=\"{3}\" data-vpu-roof=\"{4}\" data-hbm-roof=\"{5}\">\n",
        W, H, pts.size(), sort_key(p.mxu_roof), sort_key(p.vpu_roof), sort_key(p.hbm_roof));
    o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"plot\"/>\n", L, T,
                     W - L - R, H - T - B);
    for (double d = xlo; d <= xhi * 1.0001; d *= 10) {
        const double x = ax.at(d);
        o += fmt::format(
            "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" class=\"grid\"/>"
            "<text x=\"{0:.1f}\" y=\"{3}\" class=\"tick\" text-anchor=\"middle\">{4:g}</text>\n",
            x, T, H - B, H - B + 16, d);
    }
    for (double d = ylo; d <= yhi * 1.0001; d *= 10) {
        const double y = ay.at(d);
        o += fmt::format(
            "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" class=\"grid\"/>"
            "<text x=\"{3}\" y=\"{4:.1f}\" class=\"tick\" text-anchor=\"end\">{5:g}</text>\n",
            L, W - R, y, L - 6, y + 4, d / 1e12);
    }
    o += fmt::format(
        "<text x=\"{}\" y=\"{}\" class=\"axis\" text-anchor=\"middle\">arithmetic intensity "
        "(FLOP per HBM byte)</text>\n",
        (L + W - R) / 2, H - 12);
    o += fmt::format(
        "<text x=\"16\" y=\"{0}\" class=\"axis\" text-anchor=\"middle\" "
        "transform=\"rotate(-90 16 {0})\">TFLOPS per core, over {1} time</text>\n",
        (T + H - B) / 2, p.spans ? "span" : "self");
    // The roofs: min(peak, intensity x the core's HBM bandwidth), drawn from the left edge
    // through the ridge to the right edge.
    auto roof = [&](double peak, const char* cls, const char* name) {
        const double ridge = peak / p.hbm_roof;
        std::string pts_text;
        const double x0 = xlo, y0 = x0 * p.hbm_roof;
        const double xs = std::max(x0, ylo / p.hbm_roof);  // where the slope enters the plot
        pts_text += fmt::format("{:.1f},{:.1f} ", ax.at(xs), ay.at(std::max(y0, ylo)));
        if (ridge > xlo && ridge < xhi)
            pts_text += fmt::format("{:.1f},{:.1f} ", ax.at(ridge), ay.at(peak));
        pts_text +=
            fmt::format("{:.1f},{:.1f}", ax.at(xhi), ay.at(std::min(peak, xhi * p.hbm_roof)));
        return fmt::format("<polyline class=\"{}\" points=\"{}\"><title>{}</title></polyline>\n",
                           cls, pts_text, name);
    };
    o += roof(p.mxu_roof, "roof", "MXU roof");
    o += roof(p.vpu_roof, "roof vpu", "VPU roof");
    o += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"rooflabel\" text-anchor=\"end\">MXU {:.1f} "
        "TFLOPS</text>\n",
        W - R - 4, ay.at(p.mxu_roof) - 5, p.mxu_roof / 1e12);
    o += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"rooflabel\" text-anchor=\"end\">VPU {:.2f} "
        "TFLOPS</text>\n",
        W - R - 4, ay.at(p.vpu_roof) - 5, p.vpu_roof / 1e12);
    // Points, the largest first so that the small ones stay on top; the largest few named.
    std::vector<const Pt*> by_time;
    for (const Pt& q : pts) by_time.push_back(&q);
    std::stable_sort(by_time.begin(), by_time.end(), [](const Pt* a, const Pt* b) {
        return a->row->time_cycles > b->row->time_cycles;
    });
    for (const Pt* q : by_time) {
        const double frac = p.cycles > 0 ? q->row->time_cycles / p.cycles : 0;
        o += fmt::format(
            "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{:.1f}\" fill=\"{}\" class=\"pt\" "
            "data-kernel=\"{}\" data-x=\"{}\" data-y=\"{}\"><title>{}: {:.2f} FLOP/B, {:.2f} "
            "TFLOPS per core, {:.1f} &micro;s, bound by {}</title></circle>\n",
            ax.at(q->x), ay.at(q->y), 3 + 9 * std::sqrt(std::min(1.0, frac)),
            colour_of(q->row->bound), esc(q->row->name), sort_key(q->x), sort_key(q->y),
            esc(q->row->name), q->x, q->y / 1e12, q->row->time_cycles / p.mhz, esc(q->row->bound));
    }
    // Names of the largest kernels, each where it overlaps no name placed before it (above
    // right, below right, above left or below left of its point), or not at all.
    struct Box {
        double x0, y0, x1, y1;
    };
    std::vector<Box> placed;
    for (std::size_t i = 0, named = 0; i < by_time.size() && named < 8; ++i) {
        const Pt* q = by_time[i];
        std::string name = q->row->name;
        if (name.size() > 28) name = name.substr(0, 27) + "~";
        const double w = 5.6 * static_cast<double>(name.size()), h = 11;
        const double cx = ax.at(q->x), cy = ay.at(q->y);
        const std::pair<double, double> at[] = {
            {cx + 7, cy - 6}, {cx + 7, cy + 14}, {cx - 7 - w, cy - 6}, {cx - 7 - w, cy + 14}};
        for (const auto& [x, y] : at) {
            const Box b{x, y - h, x + w, y + 2};
            const bool clash = b.x0 < L || b.x1 > W - R || b.y0 < T || b.y1 > H - B ||
                               std::any_of(placed.begin(), placed.end(), [&](const Box& c) {
                                   return b.x0 < c.x1 && c.x0 < b.x1 && b.y0 < c.y1 && c.y0 < b.y1;
                               });
            if (clash) continue;
            placed.push_back(b);
            ++named;
            o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"ptlabel\">{}</text>\n", x, y,
                             esc(name));
            break;
        }
    }
    // Legend: the verdicts present.
    std::vector<std::string> bounds;
    for (const Pt& q : pts)
        if (std::find(bounds.begin(), bounds.end(), q.row->bound) == bounds.end())
            bounds.push_back(q.row->bound);
    std::sort(bounds.begin(), bounds.end());
    double ly = T + 14;
    for (const std::string& b : bounds) {
        o += fmt::format(
            "<circle cx=\"{}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\"/><text x=\"{}\" y=\"{:.1f}\" "
            "class=\"tick\">{}</text>\n",
            L + 14, ly - 4, colour_of(b), L + 24, ly, esc(b.empty() ? "(no verdict)" : b));
        ly += 16;
    }
    o += "</svg>\n";
    o += fmt::format(
        "<p class=\"note\">Per core: each kernel is placed by FLOPs / HBM bytes and by one "
        "core's FLOPs{} / {}, under one core's roofs. MXU roof {:.2f} TFLOPS ({}); VPU roof "
        "{:.3f} TFLOPS ({}, one operation per element per slot); HBM slope {:.1f} GB/s, the "
        "core's own share ({}). A point's area shows the kernel's share of the step.{}</p>\n",
        p.cores > 1 ? fmt::format(" (the report's figures are the {:g} cores' together: / {:g})",
                                  p.cores, p.cores)
                    : "",
        p.spans ? "its <b>span</b> (no kernel rows in this report)" : "its self time",
        p.mxu_roof / 1e12, esc(p.mxu_how), p.vpu_roof / 1e12, esc(p.vpu_how), p.hbm_roof / 1e9,
        esc(p.hbm_how),
        left_out ? fmt::format(" {} kernel{} without FLOPs, HBM bytes or time left out.", left_out,
                               left_out == 1 ? "" : "s")
                 : "");
    return o;
}

// Unit utilisation over time: each op's busy cycles spread evenly over its span (a loop op's
// over the whole loop), summed per bin, over the units of each kind; HBM as bytes over the
// bandwidth of the cores' shares of their chips. The line's mean is the run's figure for MXU,
// VPU and HBM (data-mean; tests/cli/html_report.sh checks it).
std::string utilization_svg(const Page& p, const Fields& f) {
    if (!(p.cycles > 0)) return "<p class=\"note\">The step took no time: nothing to show.</p>\n";
    const json& ops = (*p.r)["ops"];
    const std::size_t bins =
        static_cast<std::size_t>(std::max(1.0, std::min(200.0, std::floor(p.cycles))));
    const double width = p.cycles / static_cast<double>(bins);
    constexpr std::size_t kLines = kUnits.size() + 1;  // the units and HBM
    std::vector<std::array<double, kLines>> acc(bins, std::array<double, kLines>{});
    for (std::size_t i = 0; i < ops.size() && width > 0; ++i) {
        const std::string ptr = fmt::format("/ops/{}", i);
        const double s = f.num(ops[i], ptr, "start_cycle"), e = f.num(ops[i], ptr, "end_cycle");
        if (!(e > s)) continue;
        const auto busy = read_busy(ops[i], ptr, f);
        std::array<double, kLines> rate{};
        for (std::size_t u = 0; u < kUnits.size(); ++u) rate[u] = busy[u] / (e - s);
        rate[kUnits.size()] = f.num_or(ops[i], ptr, "hbm_bytes", 0.0) / (e - s);
        const auto b0 = static_cast<std::size_t>(std::max(0.0, std::floor(s / width)));
        const auto b1 = std::min(bins, static_cast<std::size_t>(std::ceil(e / width)));
        for (std::size_t b = b0; b < b1; ++b) {
            const double lo = static_cast<double>(b) * width, hi = lo + width;
            const double overlap = std::min(e, hi) - std::max(s, lo);
            if (overlap <= 0) continue;
            for (std::size_t u = 0; u < kLines; ++u) acc[b][u] += rate[u] * overlap;
        }
    }
    // The bytes per cycle the program's cores can move: their shares of their chips' HBM.
    const double hbm_bytes_per_cycle = p.hbm_roof * p.cores / (p.mhz * 1e6);
    const std::array<std::string, kLines> names = {"MXU", "VPU",  "DMA engines",
                                                   "ICI", "host", "HBM bandwidth"};
    const std::array<std::string, kLines> keys = {"MXU", "VPU", "DMA", "ICI", "host", "HBM"};
    const std::array<const char*, kLines> colours = {"#1f77b4", "#2ca02c", "#ff7f0e",
                                                     "#9467bd", "#8c564b", "#d62728"};
    const double W = 760, H = 320, L = 50, R = 20, T = 16, B = 66;
    const double ms = p.seconds * 1e3;
    auto X = [&](double cyc) { return L + cyc / p.cycles * (W - L - R); };
    auto Y = [&](double frac) { return H - B - std::min(1.0, frac) * (H - T - B); };
    std::string o = fmt::format(
        "<svg id=\"utilization-svg\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" "
        "role=\"img\" aria-label=\"unit utilisation over time\" data-bins=\"{2}\">\n"
        "<rect x=\"{3}\" y=\"{4}\" width=\"{5}\" height=\"{6}\" class=\"plot\"/>\n",
        W, H, bins, L, T, W - L - R, H - T - B);
    for (int k = 0; k <= 4; ++k) {
        const double y = Y(k / 4.0);
        o += fmt::format(
            "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" class=\"grid\"/><text "
            "x=\"{3}\" y=\"{4:.1f}\" class=\"tick\" text-anchor=\"end\">{5}%</text>\n",
            L, W - R, y, L - 6, y + 4, k * 25);
    }
    for (int k = 0; k <= 5; ++k) {
        const double x = L + k / 5.0 * (W - L - R);
        o += fmt::format(
            "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" class=\"grid\"/><text "
            "x=\"{0:.1f}\" y=\"{3}\" class=\"tick\" text-anchor=\"middle\">{4:.3g}</text>\n",
            x, T, H - B, H - B + 16, ms * k / 5.0);
    }
    o += fmt::format(
        "<text x=\"{}\" y=\"{}\" class=\"axis\" text-anchor=\"middle\">simulated time "
        "(ms)</text>\n",
        (L + W - R) / 2, H - B + 32);
    double lx = L + 8;
    for (std::size_t u = 0; u < kLines; ++u) {
        const double per_cycle = u < kUnits.size() ? p.units[u] : hbm_bytes_per_cycle;
        double sum = 0;
        bool any = false;
        std::string pts_text;
        for (std::size_t b = 0; b < bins; ++b) {
            const double v = per_cycle > 0 ? acc[b][u] / (width * per_cycle) : 0;
            any = any || v > 0;
            sum += v;
            const double x0 = static_cast<double>(b) * width, x1 = x0 + width;
            pts_text += fmt::format("{:.1f},{:.1f} {:.1f},{:.1f} ", X(x0), Y(v), X(x1), Y(v));
        }
        if (!any) continue;
        const double mean = sum / static_cast<double>(bins);
        o += fmt::format(
            "<polyline class=\"uline\" stroke=\"{}\" data-unit=\"{}\" data-mean=\"{}\" "
            "points=\"{}\"><title>{}: {:.1f}% on average</title></polyline>\n",
            colours[u], keys[u], sort_key(mean), pts_text, names[u], 100 * mean);
        o += fmt::format(
            "<rect x=\"{:.1f}\" y=\"{}\" width=\"12\" height=\"3\" fill=\"{}\"/><text x=\"{:.1f}\" "
            "y=\"{}\" class=\"tick\">{} {:.1f}%</text>\n",
            lx, H - 14, colours[u], lx + 16, H - 10, names[u], 100 * mean);
        lx += 6.2 * static_cast<double>(names[u].size() + 7) + 30;
    }
    o += "</svg>\n";
    o += fmt::format(
        "<p class=\"note\">{} bins of {:.2f} &micro;s. Each op's busy cycles are spread evenly "
        "over its span (a loop op's over the whole loop) and divided by the units of their kind: "
        "MXU over {:g} MXU{}, DMA over {:g} engine{} (the summary's DMA figure counts a core's "
        "DMA busy while any engine works, so it differs), the others over {:g} core{}; HBM is "
        "bytes over the bandwidth the cores can use ({:.1f} GB/s). The legend gives each "
        "line's mean over the step.</p>\n",
        bins, width / p.mhz, p.units[0], p.units[0] == 1 ? "" : "s", p.units[2],
        p.units[2] == 1 ? "" : "s", p.cores, p.cores == 1 ? "" : "s", p.hbm_roof * p.cores / 1e9);
    return o;
}

std::string timeline_html(const Page& p) {
    std::string o =
        "<p>The timeline shows every unit's work as slices. To open it: go to <a "
        "href=\"https://ui.perfetto.dev\" target=\"_blank\" rel=\"noopener noreferrer\">"
        "ui.perfetto.dev</a> (it runs in the browser; the file is not uploaded), choose "
        "<b>Open trace file</b> in the left menu and pick ";
    if (!p.timeline.empty()) {
        o += fmt::format("<code id=\"timeline-file\">{}</code>, the timeline this run wrote.",
                         esc(p.timeline));
    } else {
        o += "the run's timeline. This page names none: write one with <code>tpusim run ... "
             "--timeline T.json</code> (core 0 and the first 75,000 slices by default; "
             "<code>--timeline-cores</code>, <code>--timeline-window</code>), and name it "
             "with <code>tpusim report R.json -o R.html --timeline T.json</code> or "
             "<code>tpusim run ... --timeline T.json --html R.html</code>.";
    }
    return o + "</p>\n";
}

constexpr const char* kStyle = R"CSS(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto;
       max-width: 1200px; padding: 0 20px 40px; color: #222; background: #fff; }
h1 { font-size: 22px; margin: 18px 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px;
     border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.dim, .note, .members { color: #666; } .note { font-size: 13px; max-width: 900px; }
.members { font-size: 12px; }
table { border-collapse: collapse; }
table.kv th { text-align: left; padding: 3px 14px 3px 0; vertical-align: top; white-space: nowrap;
              font-weight: 600; }
table.kv td { padding: 3px 0; }
#kernel-table { font-size: 13px; width: 100%; }
#kernel-table th { position: sticky; top: 0; background: #f3f3f3; cursor: pointer; padding: 5px 7px;
                   border-bottom: 2px solid #bbb; text-align: left; user-select: none; }
#kernel-table th[aria-sort="ascending"]::after { content: " \25B2"; }
#kernel-table th[aria-sort="descending"]::after { content: " \25BC"; }
#kernel-table td { padding: 3px 7px; border-bottom: 1px solid #eee; vertical-align: top; }
#kernel-table td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
#kernel-table tbody tr:hover { background: #f7faff; }
.kname { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.scroll { max-height: 560px; overflow: auto; border: 1px solid #ddd; }
.banner { background: #fff6d6; border: 1px solid #e6cf7a; padding: 6px 10px; }
svg { max-width: 100%; height: auto; font-family: inherit; }
svg .plot { fill: #fcfcfc; stroke: #999; } svg .grid { stroke: #e4e4e4; }
svg .tick { font-size: 11px; fill: #444; } svg .axis { font-size: 12px; fill: #222; }
svg .roof { fill: none; stroke: #111; stroke-width: 1.6; }
svg .roof.vpu { stroke-dasharray: 6 4; } svg .rooflabel { font-size: 11px; fill: #111; }
svg .pt { fill-opacity: 0.75; stroke: #fff; } svg .ptlabel { font-size: 10px; fill: #333; }
svg .uline { fill: none; stroke-width: 1.4; }
pre { background: #f6f6f6; padding: 10px; overflow: auto; max-height: 600px; font-size: 12px; }
#js-errors { color: #b00; font-weight: 600; }
)CSS";

// Installed first, so that an error anywhere later (the sorting script included) is shown on
// the page and counted in #js-errors's data-count, which the browser test checks.
constexpr const char* kErrorScript = R"JS(
(function () {
  function record(msg) {
    var el = document.getElementById('js-errors');
    if (!el) { window.__pendingErrors = (window.__pendingErrors || []).concat([msg]); return; }
    el.hidden = false;
    el.setAttribute('data-count', String(Number(el.getAttribute('data-count') || 0) + 1));
    var li = document.createElement('div');
    li.textContent = 'script error: ' + msg;
    el.appendChild(li);
  }
  window.__recordError = record;
  window.addEventListener('error', function (e) {
    record(e.message || ('could not load ' + ((e.target && (e.target.src || e.target.href)) || 'a resource')));
  }, true);
  window.addEventListener('unhandledrejection', function (e) { record(String(e.reason)); });
})();
)JS";

// Sorting: a click (or Enter) on a header sorts by that column, numbers largest first and
// text A to Z, a second click the other way, ties in the first order; "#sort=KEY" or
// "#sort=KEY:asc|desc" in the URL sorts on load. The table's data-sorted says what is in effect.
constexpr const char* kSortScript = R"JS(
(function () {
  var pending = window.__pendingErrors || [];
  for (var i = 0; i < pending.length; i++) window.__recordError(pending[i]);
  var table = document.getElementById('kernel-table');
  var heads = table.tHead.rows[0].cells;
  for (var n = 0; n < table.tBodies[0].rows.length; n++) table.tBodies[0].rows[n].__i = n;
  function sortBy(key, dir) {
    var idx = -1, type = 'num';
    for (var i = 0; i < heads.length; i++) {
      if (heads[i].getAttribute('data-key') === key) { idx = i; type = heads[i].getAttribute('data-type'); }
    }
    if (idx < 0) return false;
    if (dir !== 'asc' && dir !== 'desc') dir = type === 'text' ? 'asc' : 'desc';
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[idx].getAttribute('data-v'), y = b.cells[idx].getAttribute('data-v');
      var c = type === 'text' ? (x < y ? -1 : x > y ? 1 : 0) : parseFloat(x) - parseFloat(y);
      // Ties keep the page's first order (largest first), whatever was clicked before.
      return (dir === 'asc' ? c : -c) || a.__i - b.__i;
    });
    for (var r = 0; r < rows.length; r++) body.appendChild(rows[r]);
    for (var h = 0; h < heads.length; h++) {
      heads[h].setAttribute('aria-sort', h === idx ? (dir === 'asc' ? 'ascending' : 'descending') : 'none');
    }
    table.setAttribute('data-sorted', key + ':' + dir);
    return true;
  }
  function fromHash() {
    var m = /(?:^#|&)sort=([A-Za-z_]+)(?::(asc|desc))?/.exec(window.location.hash);
    if (m) sortBy(m[1], m[2]);
  }
  for (var i = 0; i < heads.length; i++) {
    (function (th) {
      function go() {
        var key = th.getAttribute('data-key'), cur = table.getAttribute('data-sorted');
        var dir = cur === key + ':desc' ? 'asc' : cur === key + ':asc' ? 'desc' : null;
        sortBy(key, dir);
      }
      th.addEventListener('click', go);
      th.addEventListener('keydown', function (e) { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); go(); } });
    })(heads[i]);
  }
  sortBy(table.getAttribute('data-default-sort'), null);
  fromHash();
  window.addEventListener('hashchange', fromHash);
  window.tpusimSortBy = sortBy;
  document.body.setAttribute('data-ready', '1');
})();
)JS";

std::string page_html(const Page& p, const Fields& f) {
    const json& r = *p.r;
    std::string trace_name;
    if (r.contains("trace") && r["trace"].is_object())
        trace_name = f.str_or(r["trace"], "/trace", "name", "");
    const std::string board = f.str_or(r["config"], "/config", "name", "");
    const std::string title =
        (trace_name.empty() ? std::string("run") : trace_name) + " on " + board;
    std::string o;
    o += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
    o += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
    o += "<title>tpusim report: " + esc(title) + "</title>\n";
    o += std::string("<style>") + kStyle + "</style>\n";
    o += std::string("<script>") + kErrorScript + "</script>\n";
    o += "</head>\n<body data-ready=\"0\">\n";
    o += "<div id=\"js-errors\" data-count=\"0\" hidden></div>\n";
    o += "<h1>tpusim report: " + esc(title) + "</h1>\n";
    o += fmt::format("<p class=\"dim\">from {} &middot; tpusim {} ({})</p>\n", esc(p.file),
                     esc(f.str_or(r, "", "version", "?")),
                     esc(f.str_or(r, "", "git_revision", "?")));
    o += "<nav class=\"dim\"><a href=\"#summary\">summary</a> &middot; <a "
         "href=\"#kernels\">kernels</a> &middot; <a href=\"#roofline\">roofline</a> &middot; "
         "<a href=\"#utilization\">utilisation over time</a> &middot; <a "
         "href=\"#timeline\">timeline</a> &middot; <a href=\"#config\">config</a></nav>\n";
    o += "<section id=\"summary\"><h2>Summary</h2>\n" + summary_html(p, f) + "</section>\n";
    o += "<section id=\"kernels\"><h2>Kernels</h2>\n";
    o += fmt::format("<p class=\"{}\" id=\"kernel-source\">{}</p>\n", p.spans ? "banner" : "note",
                     p.attribution);
    o += "<p class=\"note\">Click a column's header to sort by it (again for the other "
         "direction); <code>#sort=KEY</code> or <code>#sort=KEY:asc</code> in the address "
         "does the same on load.</p>\n";
    std::string table = kernel_table_html(p);
    const std::string dflt = p.spans ? "span_us" : "self_us";
    table.insert(table.find("<table ") + 7, "data-default-sort=\"" + dflt + "\" ");
    o += "<div class=\"scroll\">" + table + "</div>\n</section>\n";
    o += "<section id=\"roofline\"><h2>Roofline (per core)</h2>\n" + roofline_svg(p) +
         "</section>\n";
    o += "<section id=\"utilization\"><h2>Unit utilisation over time</h2>\n" +
         utilization_svg(p, f) + "</section>\n";
    o += "<section id=\"timeline\"><h2>Timeline in Perfetto</h2>\n" + timeline_html(p) +
         "</section>\n";
    o += "<section id=\"config\"><h2>Config in effect</h2>\n";
    o += fmt::format(
        "<details id=\"config-details\"><summary>{} (the report's <code>config</code>; click "
        "to show)</summary>\n<pre>{}</pre></details>\n</section>\n",
        esc(board), esc(r["config"].dump(2)));
    o += std::string("<script>") + kSortScript + "</script>\n";
    o += "</body>\n</html>\n";
    return o;
}

}  // namespace report_html_detail

std::string html_report(const nlohmann::json& report, const std::string& source,
                        const std::string& timeline) {
    using namespace report_html_detail;
    const Page p = read_page(report, source, timeline);
    return page_html(p, Fields(source));
}

void write_html_report(const std::string& path, const nlohmann::json& report,
                       const std::string& source, const std::string& timeline) {
    write_text(path, html_report(report, source, timeline), "HTML report");
}

namespace {

struct ReportHtmlOptions {
    std::string report, output, timeline;
};

}  // namespace

void add_report_command(CLI::App& app) {
    const auto o = std::make_shared<ReportHtmlOptions>();
    auto* cmd = app.add_subcommand(
        "report",
        "a run report (run --report) as one self-contained HTML page: summary, sortable "
        "kernel table, roofline, utilisation over time, config, how to open the timeline");
    cmd->add_option("report", o->report, "the run's JSON report (tpusim run --report R.json)")
        ->required();
    cmd->add_option("--output,-o", o->output, "write the HTML page here (- for stdout)")
        ->required();
    cmd->add_option("--timeline", o->timeline,
                    "the run's timeline file (run --timeline), named in the page's Perfetto "
                    "instructions");
    cmd->callback([o] {
        if (!o->timeline.empty() && !std::filesystem::is_regular_file(o->timeline))
            throw InputError(o->timeline, "",
                             "no such timeline file (write one with tpusim run "
                             "--timeline)");
        const nlohmann::json r = read_json_file(o->report, kMaxProgramFileBytes);
        write_html_report(o->output, r, o->report, o->timeline);
    });
}

}  // namespace tpusim::cli
