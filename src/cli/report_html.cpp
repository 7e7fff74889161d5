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
#include "report_page.h"
#include "tpusim/common/error.h"
#include "tpusim/common/json_io.h"
#include "tpusim/common/text_output.h"

namespace tpusim::cli {

namespace report_html_detail {

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
std::string num_text(double v, int decimals) { return fmt::format("{:.{}f}", v, decimals); }

// A value for the table's data-v attribute (sorting): the shortest exact text.
std::string sort_key(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "0"; }

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
