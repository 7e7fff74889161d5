// `tpusim train`: a step program on the board plus the host and its input pipeline, over whole
// epochs (docs/train.md).
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>

#include "common.h"
#include "hlo_options.h"
#include "tpusim/common/error.h"
#include "tpusim/program/from_trace.h"
#include "tpusim/sim/run_energy.h"
#include "tpusim/sim/simulator.h"
#include "tpusim/stats/report.h"
#include "tpusim/trace/hlo.h"
#include "tpusim/trace/trace.h"
#include "tpusim/train/train_run.h"

namespace tpusim::cli {

namespace {

// The run's energy (docs/energy.md): the simulated steps' dynamic energy per device cycle,
// over every device cycle of the run (exact under steady-state step reuse), plus the board's
// static power over the whole run (host, infeed and compile time included: the chips idle).
nlohmann::json train_energy_json(const RunResult& rr, const TrainResult& r, const TrainInputs& in,
                                 const TpuConfig& cfg) {
    const RunEnergy step = run_energy(rr, cfg);
    const double hz = r.clock_mhz * 1e6;
    const double dyn_per_cycle =
        rr.cycles > 0 ? step.parts.dynamic() / static_cast<double>(rr.cycles) : 0.0;
    const double chips = static_cast<double>(cfg.chips());
    const double static_board_w = idle_power_per_chip(cfg) * chips;
    const double seconds = static_cast<double>(r.pipeline.total) / hz;
    const double joules =
        dyn_per_cycle * static_cast<double>(r.pipeline.device) + static_board_w * seconds;
    const double steps = static_cast<double>(std::max<std::int64_t>(r.pipeline.steps, 1));
    const double samples = static_cast<double>(in.run.global_batch) * steps;
    const double simulated =
        static_cast<double>(std::max<std::size_t>(in.steps.size() + in.eval_steps.size(), 1));
    nlohmann::json j;
    j["joules"] = joules;
    j["joules_per_epoch"] = joules / static_cast<double>(std::max<std::int64_t>(in.run.epochs, 1));
    j["joules_per_device_step"] = step.parts.total() / simulated;
    j["joules_per_sample"] = samples > 0 ? joules / samples : 0.0;
    j["average_watts_per_chip"] = seconds > 0 ? joules / seconds / chips : 0.0;
    j["device_step_watts_per_chip"] = step.average_w_per_chip();
    j["idle_watts_per_chip"] = idle_power_per_chip(cfg);
    j["tdp_watts_per_chip"] = cfg.energy.tdp_w;
    j["device_steps"] = run_energy_json(step, cfg);
    return j;
}

struct TrainCliOptions {
    CommonOptions common;
    std::string trace, hlo, run, report, timeline, eval_trace, eval_hlo;
    HloCliOptions hlo_opts;
    bool no_reuse = false, quiet = false, no_symmetry = false;
    std::int64_t warmup = 3;
};

// When the warm-up steps did not repeat, the run starts again with --no-reuse: this process
// has elaborated its board and SystemC cannot build another one.
[[noreturn]] void rerun_without_reuse() {
    rerun_with("--no-reuse",
               "the warm-up steps did not repeat; simulating every step (--no-reuse)");
}

// The eval step program: --eval-trace / --eval-hlo, else the run description's eval.trace
// (relative to the run file). Empty trace when the run has no evaluation passes.
Trace load_eval_trace(const TrainCliOptions& o, const RunDescription& run, const TpuConfig& cfg) {
    if (!run.eval.enabled()) {
        if (!o.eval_trace.empty() || !o.eval_hlo.empty())
            throw InputError(run.path, "/eval",
                             "missing, but an eval step program was given; expected the eval "
                             "passes' samples and schedule");
        return {};
    }
    if (!o.eval_hlo.empty()) {
        HloImportStats stats;
        return load_hlo(o.eval_hlo, o.hlo_opts, cfg, stats, false);
    }
    std::string path = o.eval_trace;
    if (path.empty() && !run.eval.trace.empty()) {
        const std::filesystem::path t(run.eval.trace);
        path = t.is_absolute() ? t.string()
                               : (std::filesystem::path(run.path).parent_path() / t).string();
    }
    if (path.empty())
        throw InputError(run.path, "/eval/trace",
                         "missing; evaluation passes need their step program: eval.trace, "
                         "--eval-trace or --eval-hlo (a forward-only step, e.g. "
                         "scripts/gen_trace.py MODEL --forward-only)");
    return read_trace(path, cfg.cores());
}

// The run's steps in order: 0 a training step, 1 an eval step.
std::vector<std::uint8_t> run_order(const RunDescription& run) {
    std::vector<std::uint8_t> order;
    for (std::int64_t e = 0; e < run.epochs; ++e)
        for (std::int64_t k = 0; k < run.steps_per_epoch(); ++k) {
            order.push_back(0);
            if (run.eval_after(e, k)) order.insert(order.end(), run.eval.steps(), 1);
        }
    return order;
}

bool repeats(const std::vector<StepMeasure>& s, std::int64_t total) {
    const auto n = static_cast<std::int64_t>(s.size());
    return n < 2 || n >= total || s[n - 1] == s[n - 2];
}

}  // namespace

void add_train_command(CLI::App& app) {
    const auto o = std::make_shared<TrainCliOptions>();
    auto* cmd =
        app.add_subcommand("train",
                           "whole training epochs: the step program on the board, the host's input "
                           "pipeline, infeed, dispatch and compile (docs/train.md)");
    add_common_options(cmd, o->common);
    auto* tr = cmd->add_option("--trace,-t", o->trace, "the step program as a trace");
    auto* hl = cmd->add_option("--hlo", o->hlo, "the step program as XLA HLO text");
    tr->excludes(hl);
    add_hlo_options(cmd, o->hlo_opts);
    auto* et = cmd->add_option("--eval-trace", o->eval_trace,
                               "the eval step program (forward only) as a trace; default: the "
                               "run description's eval.trace");
    auto* eh = cmd->add_option("--eval-hlo", o->eval_hlo, "the eval step program as XLA HLO text");
    et->excludes(eh);
    cmd->add_option("--run", o->run, "run description (dataset, batch, epochs, input pipeline)")
        ->required();
    cmd->add_option("--report,-r", o->report, "write the JSON report here");
    cmd->add_option("--timeline", o->timeline,
                    "write the first steps' input pipeline, infeed and device lanes here "
                    "(Chrome trace events; ui.perfetto.dev)");
    cmd->add_flag("--no-reuse", o->no_reuse,
                  "simulate every step on the board instead of reusing the steady-state step");
    cmd->add_option("--warmup", o->warmup,
                    "steps simulated before reuse; the last two must agree to the cycle")
        ->check(CLI::Range(2, 1000));
    cmd->add_flag("--quiet,-q", o->quiet, "no progress line");
    cmd->add_flag("--no-symmetry", o->no_symmetry,
                  "simulate every core even when an SPMD program lets one chip stand for all "
                  "(docs/pods.md, SPMD symmetry)");
    cmd->callback([o] {
        const auto t0 = std::chrono::steady_clock::now();
        const TpuConfig cfg = o->common.load();
        if (o->trace.empty() == o->hlo.empty())
            throw InputError("tpusim train", "",
                             "give the step program: --trace T.json or --hlo F.hlo");
        TrainInputs in;
        in.run = read_run_description(o->run);
        HloImportStats hlo_stats;
        const Trace trace = o->hlo.empty() ? read_trace(o->trace, cfg.cores())
                                           : load_hlo(o->hlo, o->hlo_opts, cfg, hlo_stats, false);
        const StepProgram step = device_step(unroll_loops(trace));  // loops written out
        resolve_step_inputs(in.run, step, o->hlo.empty() ? o->trace : o->hlo);
        in.program_ops = step.ops;
        in.cores = trace.cores;
        in.reuse = !o->no_reuse;
        const Trace eval_trace = load_eval_trace(*o, in.run, cfg);
        const bool has_eval = in.run.eval.enabled();
        StepProgram eval;
        if (has_eval) {
            const std::string eval_path = !o->eval_hlo.empty() ? o->eval_hlo : eval_trace.path;
            eval = device_step(unroll_loops(eval_trace));  // loops written out
            if (eval_trace.cores != trace.cores)
                throw InputError(eval_path, "/cores",
                                 fmt::format("the eval step runs on {} cores and the training "
                                             "step on {}; expected the same cores",
                                             eval_trace.cores, trace.cores));
            if (eval.trace.ops.empty())
                throw InputError(eval_path, "",
                                 "the eval step program has nothing but infeed; expected "
                                 "device work");
            RunDescription& r = in.run;
            if (r.eval.infeed_bytes_per_sample == 0)
                r.eval.infeed_bytes_per_sample =
                    eval.infeed_bytes > 0 ? eval.infeed_bytes / r.eval.global_batch +
                                                (eval.infeed_bytes % r.eval.global_batch != 0)
                                          : r.infeed_bytes_per_sample;
            in.eval_program_ops = eval.ops;
        }
        // With reuse: `--warmup` training steps, then as many eval steps (an eval step starts
        // from an idle board after a training step, as in the run); without: the run's order.
        const std::int64_t total = in.run.epochs * in.run.steps_per_epoch();
        std::int64_t total_eval = 0;
        for (std::int64_t e = 0; e < in.run.epochs; ++e)
            total_eval += in.run.evals_in_epoch(e) * in.run.eval.steps();
        std::vector<std::uint8_t> order;
        if (!in.reuse) {
            order = run_order(in.run);
        } else {
            order.assign(static_cast<std::size_t>(std::min(total, o->warmup)), 0);
            order.insert(order.end(), static_cast<std::size_t>(std::min(total_eval, o->warmup)), 1);
        }
        const Program train_p = lower_trace(step.trace, cfg);
        const Program eval_p = has_eval ? lower_trace(eval.trace, cfg) : Program{};
        print_warnings(train_p.warnings);
        print_warnings(eval_p.warnings);
        const Program program = has_eval ? sequence_steps({&train_p, &eval_p}, order)
                                         : sequence_steps({&train_p}, order);
        RunOptions ro;
        ro.progress = !o->quiet;
        ro.symmetry = !o->no_symmetry;
        Simulator sim(cfg, ro);
        const RunResult rr = run_or_rerun_full(sim, program);
        print_symmetry_info(rr, cfg);
        const std::vector<StepMeasure> m =
            measure_steps(rr, static_cast<std::int64_t>(order.size()));
        for (std::size_t k = 0; k < order.size(); ++k)
            (order[k] ? in.eval_steps : in.steps).push_back(m[k]);
        if (in.reuse && (!repeats(in.steps, total) || !repeats(in.eval_steps, total_eval)))
            rerun_without_reuse();
        const TrainResult r = run_training(cfg, in);
        nlohmann::json body = train_report_body(r, in);
        body["trace"] = {{"path", o->hlo.empty() ? o->trace : o->hlo},
                         {"name", trace.name},
                         {"ops", trace.ops.size()},
                         {"rematerialized_ops", train_p.rematerialized_ops}};
        if (has_eval)
            body["eval_trace"] = {{"path", !o->eval_hlo.empty() ? o->eval_hlo : eval_trace.path},
                                  {"name", eval_trace.name},
                                  {"ops", eval_trace.ops.size()},
                                  {"rematerialized_ops", eval_p.rematerialized_ops}};
        body["symmetry"] = symmetry_json(rr.symmetry);
        body["energy"] = train_energy_json(rr, r, in, cfg);
        body["wall_seconds"] =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const nlohmann::json report = make_report("train", cfg, body);
        if (!o->report.empty()) write_json(o->report, report);
        if (!o->timeline.empty()) write_json(o->timeline, train_timeline_json(r));
        if (o->common.json) {
            std::cout << report.dump(2) << "\n";
        } else {
            std::cout << train_summary_text(r, in);
            const auto& e = body["energy"];
            std::cout << fmt::format(
                "  energy     {:.4g} J per epoch, {:.4g} J per device step, {:.4g} J per sample; "
                "{:.1f} W per chip over the run, {:.1f} W during device steps (docs/energy.md)\n",
                e["joules_per_epoch"].get<double>(), e["joules_per_device_step"].get<double>(),
                e["joules_per_sample"].get<double>(), e["average_watts_per_chip"].get<double>(),
                e["device_step_watts_per_chip"].get<double>());
            std::cout << fmt::format("  simulated in {:.3f} s wall\n",
                                     body["wall_seconds"].get<double>());
        }
    });
}

}  // namespace tpusim::cli
