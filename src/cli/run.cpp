// `tpusim run`: replay a trace on the configured board.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "common.h"
#include "hlo_options.h"
#include "report_html.h"
#include "tpusim/common/error.h"
#include "tpusim/common/progress.h"
#include "tpusim/common/text_output.h"
#include "tpusim/common/wording.h"
#include "tpusim/program/from_trace.h"
#include "tpusim/sim/run_energy.h"
#include "tpusim/sim/simulator.h"
#include "tpusim/stats/report.h"
#include "tpusim/trace/hlo.h"
#include "tpusim/trace/trace.h"

namespace tpusim::cli {

namespace {

struct RunCliOptions {
    CommonOptions common;
    std::string trace, hlo, report, timeline, ops, fidelity, html;
    std::string timeline_cores = "0", timeline_window;
    // About 125 bytes per span in the file: 75,000 spans keep it under 10 MB.
    std::size_t timeline_max_spans = 75'000;
    HloCliOptions hlo_opts;
    bool quiet = false;
    bool no_symmetry = false;
    bool no_cache = false;
    bool no_reuse = false;
    std::size_t top = 12;
};

// Loop reuse (docs/program.md, "Loops"): trips of each loop simulated before the rest are
// charged from the steady trip. The steady boundary is sought among trips 1 .. kReuseTrips - 3.
constexpr std::int64_t kReuseTrips = 8;

// Before a long run: an output path that cannot be written is bad input now, not after it.
void check_writable(const std::string& path, const char* what) {
    if (path.empty()) return;
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path p(path);
    if (fs::is_directory(p, ec))
        throw InputError(path, "", fmt::format("{} path is a directory", what));
    const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
    if (!fs::is_directory(dir, ec)) {
        throw InputError(path, "",
                         fmt::format("cannot write the {}: no directory {}", what, dir.string()));
    }
    if (access((fs::exists(p, ec) ? p : dir).c_str(), W_OK) != 0) {
        throw InputError(path, "", fmt::format("cannot write the {}: permission denied", what));
    }
}

// --timeline-cores and --timeline-window as the timeline's limits; located errors.
TimelineLimits timeline_limits(const RunCliOptions& o, const TpuConfig& cfg) {
    TimelineLimits l;
    l.max_events = o.timeline_max_spans;
    if (o.timeline_cores != "all") {
        std::stringstream in(o.timeline_cores);
        std::string item;
        while (std::getline(in, item, ',')) {
            char* end = nullptr;
            const long long c = std::strtoll(item.c_str(), &end, 10);
            if (item.empty() || *end != '\0' || c < 0 || c >= cfg.cores())
                throw InputError("--timeline-cores", o.timeline_cores,
                                 fmt::format("expected all or core numbers from 0 to {}, got "
                                             "\"{}\"",
                                             cfg.cores() - 1, item));
            l.cores.push_back(c);
        }
        if (l.cores.empty())
            throw InputError("--timeline-cores", "", "expected all or a comma list of cores");
    }
    if (!o.timeline_window.empty()) {
        const auto bad = [&] {
            return InputError("--timeline-window", o.timeline_window,
                              "expected FROM:TO in microseconds of simulated time, e.g. 1000:2000");
        };
        const auto colon = o.timeline_window.find(':');
        if (colon == std::string::npos) throw bad();
        auto us = [&](const std::string& t, double dflt) {
            if (t.empty()) return dflt;
            char* end = nullptr;
            const double v = std::strtod(t.c_str(), &end);
            if (*end != '\0' || !(v >= 0) || v > 1e12) throw bad();
            return v;
        };
        const double from = us(o.timeline_window.substr(0, colon), 0);
        const double to = us(o.timeline_window.substr(colon + 1), -1);
        if (to >= 0 && to <= from)
            throw InputError("--timeline-window", o.timeline_window, "TO must be after FROM");
        l.from = static_cast<Cycle>(from * cfg.chip.clock_mhz);
        if (to >= 0) l.to = static_cast<Cycle>(to * cfg.chip.clock_mhz);
    }
    return l;
}

}  // namespace

void add_run_command(CLI::App& app) {
    const auto o = std::make_shared<RunCliOptions>();
    auto* cmd = app.add_subcommand("run", "replay a trace on the configured board");
    add_common_options(cmd, o->common);
    auto* tr = cmd->add_option("--trace,-t", o->trace, "trace file (docs/trace-format.md)");
    auto* hl = cmd->add_option("--hlo", o->hlo, "XLA HLO text module (docs/hlo.md)");
    tr->excludes(hl);
    add_hlo_options(cmd, o->hlo_opts);
    cmd->add_option("--report,-r", o->report, "write the JSON report here");
    cmd->add_option("--timeline", o->timeline,
                    "write a Chrome trace-event timeline here (open it in ui.perfetto.dev)");
    cmd->add_option("--timeline-cores", o->timeline_cores,
                    "cores whose units --timeline shows: a comma list (0,3) or all (default: "
                    "core 0, which keeps a long step's timeline small)");
    cmd->add_option("--timeline-window", o->timeline_window,
                    "simulated time --timeline covers, FROM:TO in microseconds (either may be "
                    "left out), e.g. 1000:2000");
    cmd->add_option("--timeline-max-spans", o->timeline_max_spans,
                    "spans --timeline keeps at most, the first in time (default 75000: under "
                    "10 MB)")
        ->check(CLI::Range(std::size_t{1}, std::size_t{100'000'000}));
    cmd->add_option("--ops", o->ops,
                    "write per-op timing as CSV here, with each op's kernel and self cycles");
    cmd->add_option("--top", o->top,
                    "kernels the summary table lists, most self time first (default 12)")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1'000'000'000}));
    cmd->add_option("--html", o->html, "write the report as one HTML page here (tpusim report)");
    cmd->add_flag("--quiet,-q", o->quiet, "no progress line");
    cmd->add_flag("--no-cache", o->no_cache,
                  "measure the HBM calibration instead of reading it from the on-disk cache "
                  "(the same figures; TPUSIM_NO_CACHE=1 for every command; docs/hbm.md)");
    cmd->add_flag("--no-reuse", o->no_reuse,
                  "simulate every trip of every loop instead of charging the trips after the "
                  "steady one (the same figures; docs/program.md, Loops)");
    cmd->add_flag("--no-symmetry", o->no_symmetry,
                  "simulate every core even when an SPMD program lets one chip stand for all "
                  "(docs/pods.md, SPMD symmetry)");
    cmd->add_option("--fidelity", o->fidelity,
                    "MXU model: tile (closed-form schedule, default) or pe (every processing "
                    "element, every cycle; same cycles, much slower); sets sim.mxu_fidelity")
        ->check(CLI::IsMember({"tile", "pe"}));
    cmd->callback([o] {
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<std::string> sets = o->common.sets;
        if (!o->fidelity.empty()) sets.push_back("sim.mxu_fidelity=" + o->fidelity);
        const TpuConfig cfg = load_config(o->common.config, sets);
        check_writable(o->report, "report");
        check_writable(o->timeline, "timeline");
        check_writable(o->ops, "per-op CSV");
        check_writable(o->html, "HTML report");
        if (o->trace.empty() == o->hlo.empty())
            throw InputError("tpusim run", "", "give a program: --trace T.json or --hlo F.hlo");
        HloImportStats hlo_stats;
        const Trace trace = o->hlo.empty() ? read_trace(o->trace, cfg.cores())
                                           : load_hlo(o->hlo, o->hlo_opts, cfg, hlo_stats, false);
        // Loop reuse: loops longer than kReuseTrips are lowered with that many trips and the
        // rest charged; not with a timeline (its spans are per trip) nor the burst HBM model
        // (its banks and refresh keep state across an idle board).
        bool reuse =
            !o->no_reuse && o->timeline.empty() && cfg.sim.hbm_model == HbmModel::Calibrated;
        bool long_loop = false;
        for (const auto& l : trace.loops) long_loop |= l.trips > kReuseTrips;
        reuse = reuse && long_loop;
        Program program = lower_with_progress(trace, cfg, !o->quiet, reuse ? kReuseTrips : 0);
        RunOptions ro;
        ro.timeline = !o->timeline.empty();
        ro.progress = !o->quiet;
        ro.symmetry = !o->no_symmetry;
        ro.hbm_cache = !o->no_cache;
        Simulator sim(cfg, ro);
        // A refusal known from the lowering alone: lower every trip now, in this process (a
        // refusal after the run needs a fresh process: SystemC elaborates one board).
        if (reuse) {
            const std::string why = sim.reuse_refusal(program);
            if (!why.empty()) {
                std::cerr << "note: loop reuse: " << why
                          << "; simulating every trip (--no-reuse)\n";
                reuse = false;
                program = lower_with_progress(trace, cfg, !o->quiet, 0);
            }
        }
        if (!reuse) print_warnings(program.warnings);
        if (ro.timeline) sim.timeline().limit(timeline_limits(*o, cfg));
        RunResult r = run_or_rerun_full(sim, program);
        if (!r.loop_reuse.refused.empty())
            rerun_with("--no-reuse", "loop reuse: " + r.loop_reuse.refused +
                                         "; simulating every trip (--no-reuse)");
        if (reuse) print_warnings(program.warnings);
        print_symmetry_info(r, cfg);
        r.wall_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        nlohmann::json body = run_report_body(r, cfg);
        body["trace"] = {{"path", o->hlo.empty() ? o->trace : o->hlo},
                         {"name", trace.name},
                         {"ops", trace.ops.size()},
                         {"rematerialized_ops", program.rematerialized_ops}};
        body["warnings"] = program.warnings;  // the lowering's (rematerialisation, fusion)
        if (!o->hlo.empty())
            body["hlo"] = {{"instructions", hlo_stats.instructions},
                           {"free_instructions", hlo_stats.free_instructions},
                           {"while_trips", hlo_stats.while_trips},
                           {"passes", o->hlo_opts.passes},
                           {"unmodelled_custom_calls", hlo_stats.unmodelled_custom_calls},
                           {"multi_output_fusions", hlo_stats.multi_output_fusions},
                           {"producer_fusions", hlo_stats.producer_fusions},
                           {"defused_fusions", hlo_stats.defused_fusions},
                           {"inlined_calls", hlo_stats.inlined_calls},
                           {"schedule",
                            {{"algorithm", hlo_stats.entry_schedule},
                             {"peak_bytes", hlo_stats.entry_schedule_peak_bytes},
                             {"text_order_peak_bytes", hlo_stats.entry_text_peak_bytes}}},
                           {"spmd_partitioned", hlo_stats.spmd_partitioned},
                           {"spmd_collectives_inserted", hlo_stats.spmd_collectives_inserted},
                           {"spmd_fallbacks", hlo_stats.spmd_fallbacks},
                           {"warnings", hlo_stats.warnings}};
        body["wall_seconds"] = r.wall_seconds;
        const nlohmann::json report = make_report("run", cfg, body);
        if (!o->report.empty()) write_json(o->report, report);
        if (!o->timeline.empty()) {
            // The critical path as a track of its own: one span per stretch, named after its
            // kernel (a loop's stretch after its kernels). A process of its own, not a core's,
            // so --timeline-cores keeps it whichever core the path is on.
            Timeline& tl = sim.timeline();
            const std::size_t unit_spans = tl.events();  // the capped ones, for the note
            const std::uint32_t track =
                tl.track(fmt::format("critical path (core {})", r.kernels.core), "kernels");
            for (const PathSegment& seg : r.kernels.path)
                if (seg.to > seg.from)
                    tl.span(track, kernel_path_name(r, seg), seg.from, seg.to, false);
            add_power_track(tl, r, cfg);
            tl.write_file(o->timeline);
            if (o->timeline_cores != "all" && r.cores > 1)
                std::cerr << fmt::format(
                    "note: the timeline shows core{} {} of {} (--timeline-cores all for "
                    "every core)\n",
                    o->timeline_cores.find(',') == std::string::npos ? "" : "s", o->timeline_cores,
                    count_of(r.cores, "core"));
            if (sim.timeline().dropped() > 0)
                std::cerr << fmt::format(
                    "note: the timeline holds its first {} spans and left out {}: see later "
                    "ones with --timeline-window, or raise --timeline-max-spans\n",
                    unit_spans, sim.timeline().dropped());
        }
        if (!o->ops.empty()) write_text(o->ops, ops_csv(r));
        if (!o->html.empty())
            write_html_report(o->html, report, o->report.empty() ? "tpusim run" : o->report,
                              o->timeline);
        if (o->common.json) {
            std::cout << report.dump(2) << "\n";
        } else {
            std::cout << run_summary_text(r, cfg, trace.name, o->top);
            if (hlo_stats.unmodelled_custom_calls > 0)
                std::cout << fmt::format(
                    "  {} custom-call executions not modelled (warnings "
                    "above)\n",
                    hlo_stats.unmodelled_custom_calls);
            std::cout << fmt::format("  simulated in {:.3f} s wall\n", r.wall_seconds);
        }
    });
}

}  // namespace tpusim::cli
