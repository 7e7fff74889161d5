// The run report as the HTML page reads it (report_page.h).
#include "report_page.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "common.h"

namespace tpusim::cli {

namespace report_html_detail {

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

}  // namespace report_html_detail

}  // namespace tpusim::cli
