// `tpusim run`: replay a trace on the configured board.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include "common.h"
#include "hlo_options.h"
#include "tpusim/common/error.h"
#include "tpusim/common/progress.h"
#include "tpusim/common/text_output.h"
#include "tpusim/program/from_trace.h"
#include "tpusim/sim/simulator.h"
#include "tpusim/stats/report.h"
#include "tpusim/trace/hlo.h"
#include "tpusim/trace/trace.h"

namespace tpusim::cli {

namespace {

struct RunCliOptions {
    CommonOptions common;
    std::string trace, hlo, report, timeline, ops, fidelity;
    HloCliOptions hlo_opts;
    bool quiet = false;
    bool no_symmetry = false;
};

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
    cmd->add_option("--ops", o->ops, "write per-op timing as CSV here");
    cmd->add_flag("--quiet,-q", o->quiet, "no progress line");
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
        if (o->trace.empty() == o->hlo.empty())
            throw InputError("tpusim run", "", "give a program: --trace T.json or --hlo F.hlo");
        HloImportStats hlo_stats;
        const Trace trace = o->hlo.empty() ? read_trace(o->trace, cfg.cores())
                                           : load_hlo(o->hlo, o->hlo_opts, cfg, hlo_stats, false);
        const Program program = lower_with_progress(trace, cfg, !o->quiet);
        print_warnings(program.warnings);
        RunOptions ro;
        ro.timeline = !o->timeline.empty();
        ro.progress = !o->quiet;
        ro.symmetry = !o->no_symmetry;
        Simulator sim(cfg, ro);
        RunResult r = sim.run(program);
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
                           {"warnings", hlo_stats.warnings}};
        body["wall_seconds"] = r.wall_seconds;
        const nlohmann::json report = make_report("run", cfg, body);
        if (!o->report.empty()) write_json(o->report, report);
        if (!o->timeline.empty()) sim.timeline().write_file(o->timeline);
        if (!o->ops.empty()) write_text(o->ops, ops_csv(r));
        if (o->common.json) {
            std::cout << report.dump(2) << "\n";
        } else {
            std::cout << run_summary_text(r, cfg, trace.name);
            if (!hlo_stats.warnings.empty())
                std::cout << fmt::format(
                    "  {} custom-call executions not modelled (warnings "
                    "above)\n",
                    hlo_stats.unmodelled_custom_calls);
            std::cout << fmt::format("  simulated in {:.3f} s wall\n", r.wall_seconds);
        }
    });
}

}  // namespace tpusim::cli
