// The HTML report's charts as inline SVG (report_page.h): the per-core roofline and the units'
// utilisation over time.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "report_page.h"

namespace tpusim::cli {

namespace report_html_detail {

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

}  // namespace report_html_detail

}  // namespace tpusim::cli
