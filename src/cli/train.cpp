// `tpusim train`: a step program on the board plus the host and its input pipeline, over whole
// epochs (docs/train.md).
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>

#include "common.h"
#include "hlo_options.h"
#include "tpusim/common/error.h"
#include "tpusim/program/from_trace.h"
#include "tpusim/sim/simulator.h"
#include "tpusim/stats/report.h"
#include "tpusim/trace/hlo.h"
#include "tpusim/trace/trace.h"
#include "tpusim/train/train_run.h"

namespace tpusim::cli {

namespace {

struct TrainCliOptions {
    CommonOptions common;
    std::string trace, hlo, run, report, timeline;
    HloCliOptions hlo_opts;
    bool no_reuse = false, quiet = false, no_symmetry = false;
    std::int64_t warmup = 3;
};

// When the warm-up steps did not repeat, the run starts again with --no-reuse: this process
// has elaborated its board and SystemC cannot build another one.
[[noreturn]] void rerun_without_reuse() {
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::string> args;
    for (std::size_t at = 0; at < all.size();) {
        const std::size_t end = all.find('\0', at);
        args.push_back(all.substr(at, end - at));
        if (end == std::string::npos) break;
        at = end + 1;
    }
    args.emplace_back("--no-reuse");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::cerr << "note: the warm-up steps did not repeat; simulating every step (--no-reuse)\n";
    execv("/proc/self/exe", argv.data());
    throw std::runtime_error("cannot re-run without reuse: execv failed");
}

}  // namespace

void add_train_command(CLI::App& app) {
    static TrainCliOptions o;
    auto* cmd =
        app.add_subcommand("train",
                           "whole training epochs: the step program on the board, the host's input "
                           "pipeline, infeed, dispatch and compile (docs/train.md)");
    add_common_options(cmd, o.common);
    auto* tr = cmd->add_option("--trace,-t", o.trace, "the step program as a trace");
    auto* hl = cmd->add_option("--hlo", o.hlo, "the step program as XLA HLO text");
    tr->excludes(hl);
    add_hlo_options(cmd, o.hlo_opts);
    cmd->add_option("--run", o.run, "run description (dataset, batch, epochs, input pipeline)")
        ->required();
    cmd->add_option("--report,-r", o.report, "write the JSON report here");
    cmd->add_option("--timeline", o.timeline,
                    "write the first steps' input pipeline, infeed and device lanes here "
                    "(Chrome trace events; ui.perfetto.dev)");
    cmd->add_flag("--no-reuse", o.no_reuse,
                  "simulate every step on the board instead of reusing the steady-state step");
    cmd->add_option("--warmup", o.warmup,
                    "steps simulated before reuse; the last two must agree to the cycle")
        ->check(CLI::Range(2, 1000));
    cmd->add_flag("--quiet,-q", o.quiet, "no progress line");
    cmd->add_flag("--no-symmetry", o.no_symmetry,
                  "simulate every core even when an SPMD program lets one chip stand for all "
                  "(docs/pods.md, SPMD symmetry)");
    cmd->callback([] {
        const auto t0 = std::chrono::steady_clock::now();
        const TpuConfig cfg = o.common.load();
        if (o.trace.empty() == o.hlo.empty())
            throw InputError("tpusim train", "",
                             "give the step program: --trace T.json or --hlo F.hlo");
        TrainInputs in;
        in.run = read_run_description(o.run);
        HloImportStats hlo_stats;
        const Trace trace = o.hlo.empty() ? read_trace(o.trace, cfg.cores())
                                          : load_hlo(o.hlo, o.hlo_opts, cfg, hlo_stats, false);
        const StepProgram step = device_step(unroll_loops(trace));  // loops written out
        resolve_step_inputs(in.run, step, o.hlo.empty() ? o.trace : o.hlo);
        in.program_ops = step.ops;
        in.cores = trace.cores;
        in.reuse = !o.no_reuse;
        const std::int64_t total = in.run.epochs * in.run.steps_per_epoch();
        const std::int64_t n = in.reuse ? std::min(total, o.warmup) : total;
        const Program program = repeat_steps(lower_trace(step.trace, cfg), n);
        RunOptions ro;
        ro.progress = !o.quiet;
        ro.symmetry = !o.no_symmetry;
        Simulator sim(cfg, ro);
        const RunResult rr = sim.run(program);
        print_symmetry_info(rr, cfg);
        in.steps = measure_steps(rr, n);
        if (in.reuse && n >= 2 && n < total && !(in.steps[n - 1] == in.steps[n - 2]))
            rerun_without_reuse();
        const TrainResult r = run_training(cfg, in);
        nlohmann::json body = train_report_body(r, in);
        body["trace"] = {{"path", o.hlo.empty() ? o.trace : o.hlo},
                         {"name", trace.name},
                         {"ops", trace.ops.size()}};
        body["symmetry"] = {{"used", rr.symmetry.used},
                            {"simulated_cores", rr.symmetry.simulated_cores},
                            {"reason", rr.symmetry.reason}};
        body["wall_seconds"] =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const nlohmann::json report = make_report("train", cfg, body);
        if (!o.report.empty()) write_json(o.report, report);
        if (!o.timeline.empty()) write_json(o.timeline, train_timeline_json(r));
        if (o.common.json) {
            std::cout << report.dump(2) << "\n";
        } else {
            std::cout << train_summary_text(r, in);
            std::cout << fmt::format("  simulated in {:.3f} s wall\n",
                                     body["wall_seconds"].get<double>());
        }
    });
}

}  // namespace tpusim::cli
