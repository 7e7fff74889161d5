#include "tpusim/train/train_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

namespace tpusim {

namespace {

double secs(Cycle c, double clock_mhz) { return static_cast<double>(c) / (clock_mhz * 1e6); }

// The device time of each step of the run: simulated steps as measured; with reuse, the
// later steps repeat the last simulated one (the CLI checked that the last two agree).
DeviceTime device_of(const std::vector<StepMeasure>& steps) {
    return [&steps](std::int64_t step) {
        const auto n = static_cast<std::int64_t>(steps.size());
        return n == 0 ? Cycle{0} : steps[static_cast<std::size_t>(std::min(step, n - 1))].cycles;
    };
}

// MXU busy cycles of the first `n` steps of a kind: the simulated ones as measured, later
// ones as the last (O(simulated steps)); a double, as it sums over every MXU.
double busy_of(const std::vector<StepMeasure>& steps, std::int64_t n) {
    if (steps.empty() || n <= 0) return 0.0;
    const auto sim = std::min(n, static_cast<std::int64_t>(steps.size()));
    double b = static_cast<double>(n - sim) * static_cast<double>(steps.back().mxu_busy);
    for (std::int64_t s = 0; s < sim; ++s)
        b += static_cast<double>(steps[static_cast<std::size_t>(s)].mxu_busy);
    return b;
}

Cycle steady_epoch(const PipelineResult& p) { return p.epoch_cycles.back(); }

struct Lever {
    std::string change;
    std::function<void(HostConfig&, RunDescription&)> apply;
};

}  // namespace

TrainResult run_training(const TpuConfig& cfg, const TrainInputs& in) {
    TrainResult r;
    r.clock_mhz = cfg.chip.clock_mhz;
    const auto device = device_of(in.steps);
    const auto eval_device = device_of(in.eval_steps);
    r.host = host_timing(cfg.host, in.run, cfg.chips(), in.program_ops, r.clock_mhz);
    r.pipeline = simulate_pipeline(r.host, in.run, device, eval_device);
    r.steps = r.pipeline.steps;
    r.simulated_steps = static_cast<std::int64_t>(in.steps.size());
    r.reused_steps = std::max<std::int64_t>(0, r.steps - r.simulated_steps);
    r.simulated_eval_steps = static_cast<std::int64_t>(in.eval_steps.size());
    r.reused_eval_steps = std::max<std::int64_t>(0, r.pipeline.eval_steps - r.simulated_eval_steps);
    const StepMeasure& last = in.steps.back();
    // Sums over the run's steps: the simulated ones as measured, every later step as the last
    // (O(simulated steps), not O(run steps)). Exposed ICI is at most each step's device time,
    // whose sum the pipeline bounds below 2^62; MXU busy sums over every MXU, so as a double.
    const auto measured = [&](std::int64_t n) { return std::min(n, r.simulated_steps); };
    r.exposed_ici = (r.steps - measured(r.steps)) * last.exposed_ici;
    for (std::int64_t s = 0; s < measured(r.steps); ++s)
        r.exposed_ici += in.steps[static_cast<std::size_t>(s)].exposed_ici;
    const std::int64_t per_epoch = in.run.steps_per_epoch();
    // The eval steps count in the MXU busy share of the epoch they run in.
    const std::int64_t first_evals = in.run.evals_in_epoch(0) * in.run.eval.steps();
    const std::int64_t last_evals = in.run.evals_in_epoch(in.run.epochs - 1) * in.run.eval.steps();
    const double first_busy = busy_of(in.steps, per_epoch) + busy_of(in.eval_steps, first_evals);
    const double last_eval_busy =
        in.eval_steps.empty() ? 0.0 : static_cast<double>(in.eval_steps.back().mxu_busy);
    const double mxus = static_cast<double>(in.cores * cfg.core.mxus);
    r.mxu_busy_fraction = (static_cast<double>(last.mxu_busy) * static_cast<double>(per_epoch) +
                           last_eval_busy * static_cast<double>(last_evals)) /
                          (static_cast<double>(steady_epoch(r.pipeline)) * mxus);
    r.mxu_busy_first_epoch =
        first_busy / (static_cast<double>(r.pipeline.epoch_cycles.front()) * mxus);

    const PipelineResult& p = r.pipeline;
    const Cycle compute = p.device - r.exposed_ici;
    const std::pair<Cycle, const char*> parts[] = {
        {compute, "compute-bound"},         {r.exposed_ici, "communication-bound"},
        {p.infeed_wait, "input-bound"},     {p.dispatch, "dispatch-bound"},
        {p.compile, "compile-bound"},       {p.eval, "evaluation-bound"},
        {p.checkpoint, "checkpoint-bound"}, {p.weights, "weights-transfer-bound"}};
    r.verdict = std::max_element(std::begin(parts), std::end(parts), [](auto& a, auto& b) {
                    return a.first < b.first;
                })->second;

    // What-ifs re-run the host model with one change; the device steps are unchanged, so each
    // figure is as exact as the run itself.
    std::vector<Lever> levers = {
        {"2x vCPUs and parallel calls",
         [](HostConfig& h, RunDescription& d) {
             h.vcpus *= 2;
             d.parallel_calls *= 2;
         }},
        {"2x prefetch depth", [](HostConfig&, RunDescription& d) { d.prefetch_batches *= 2; }},
        {"2x disk and network read bandwidth",
         [](HostConfig& h, RunDescription&) {
             h.disk_read_gbps *= 2;
             h.network_bandwidth_gbps *= 2;
         }},
        {"no preprocessing cost (an infinitely fast host CPU)",
         [](HostConfig&, RunDescription& d) {
             d.preprocess_ms_per_sample = 0;
             d.cached_ms_per_sample = 0;
         }},
        {"half the per-step dispatch", [](HostConfig& h, RunDescription&) { h.dispatch_us /= 2; }},
    };
    if (in.run.checkpoint.enabled())
        levers.push_back({"no checkpoints", [](HostConfig&, RunDescription& d) {
                              d.checkpoint = CheckpointDescription{};
                          }});
    if (!in.run.cache && in.run.cached_ms_per_sample > 0)
        levers.push_back(
            {"dataset cache on", [](HostConfig&, RunDescription& d) { d.cache = true; }});
    if (cfg.host.access == HostAccess::Node) {
        levers.push_back({"TPU VM instead of TPU Node (pipeline on the TPU host)",
                          [](HostConfig& h, RunDescription&) { h.access = HostAccess::Vm; }});
        // On a Node every input byte crosses the runtime's transfer path: bfloat16 instead of
        // float32 inputs, or uint8 images normalised on the TPU, send fewer (the device step
        // is taken as unchanged).
        levers.push_back({"half the input bytes sent to the TPU Node (e.g. bfloat16 inputs)",
                          [](HostConfig&, RunDescription& d) {
                              d.infeed_bytes_per_sample = (d.infeed_bytes_per_sample + 1) / 2;
                              d.eval.infeed_bytes_per_sample =
                                  (d.eval.infeed_bytes_per_sample + 1) / 2;
                          }});
    }
    const double now = secs(steady_epoch(p), r.clock_mhz);
    for (const Lever& l : levers) {
        HostConfig h = cfg.host;
        RunDescription d = in.run;
        l.apply(h, d);
        const HostTiming t = host_timing(h, d, cfg.chips(), in.program_ops, r.clock_mhz);
        const double e =
            secs(steady_epoch(simulate_pipeline(t, d, device, eval_device, 0)), r.clock_mhz);
        r.what_ifs.push_back({l.change, e, now > 0 ? (e - now) / now : 0.0});
    }
    std::stable_sort(r.what_ifs.begin(), r.what_ifs.end(),
                     [](auto& a, auto& b) { return a.change_fraction < b.change_fraction; });
    return r;
}

nlohmann::json train_report_body(const TrainResult& r, const TrainInputs& in) {
    const PipelineResult& p = r.pipeline;
    const double f = r.clock_mhz;
    const double total = secs(p.total, f);
    const double epoch = secs(p.epoch_cycles.back(), f);
    nlohmann::json epochs = nlohmann::json::array();
    for (Cycle c : p.epoch_cycles) epochs.push_back(secs(c, f));
    nlohmann::json whatifs = nlohmann::json::array();
    for (const WhatIf& w : r.what_ifs)
        whatifs.push_back({{"change", w.change},
                           {"epoch_seconds", w.epoch_seconds},
                           {"epoch_change_fraction", w.change_fraction}});
    nlohmann::json first = nlohmann::json::array();
    for (const StepRecord& s : p.first_steps)
        first.push_back({{"batch_ready_cycle", s.ready},
                         {"infeed_start_cycle", s.infeed_start},
                         {"infeed_end_cycle", s.infeed_end},
                         {"start_cycle", s.start},
                         {"end_cycle", s.end},
                         {"checkpoint_start_cycle", s.checkpoint_start},
                         {"checkpoint_end_cycle", s.checkpoint_end},
                         {"kind", s.eval ? "eval" : "train"},
                         {"index", s.index}});
    nlohmann::json device_steps = nlohmann::json::array();
    for (const StepMeasure& m : in.steps)
        device_steps.push_back({{"cycles", m.cycles},
                                {"exposed_ici_cycles", m.exposed_ici},
                                {"mxu_busy_cycles", m.mxu_busy}});
    nlohmann::json eval_steps = nlohmann::json::array();
    for (const StepMeasure& m : in.eval_steps)
        eval_steps.push_back({{"cycles", m.cycles},
                              {"exposed_ici_cycles", m.exposed_ici},
                              {"mxu_busy_cycles", m.mxu_busy}});
    const std::int64_t samples = in.run.samples * in.run.epochs;
    return {
        {"run", {{"path", in.run.path}, {"name", in.run.name}, {"sources", in.run.sources}}},
        {"epochs", in.run.epochs},
        {"steps", r.steps},
        {"steps_per_epoch", in.run.steps_per_epoch()},
        {"global_batch", in.run.global_batch},
        {"total_seconds", total},
        {"total_cycles", p.total},
        {"epoch_seconds", epoch},
        {"first_epoch_seconds", secs(p.epoch_cycles.front(), f)},
        {"epochs_seconds", epochs},
        // The steady device step (the last simulated one): the board's share of a step.
        {"step_seconds", in.steps.empty() ? 0.0 : secs(in.steps.back().cycles, f)},
        {"steps_per_second", epoch > 0 ? static_cast<double>(in.run.steps_per_epoch()) / epoch : 0},
        {"samples_per_second", epoch > 0 ? static_cast<double>(in.run.samples) / epoch : 0},
        {"samples_per_second_run", total > 0 ? static_cast<double>(samples) / total : 0},
        {"time_split",
         {{"device", secs(p.device - r.exposed_ici, f)},
          {"ici", secs(r.exposed_ici, f)},
          {"infeed_wait", secs(p.infeed_wait, f)},
          {"dispatch", secs(p.dispatch, f)},
          {"compile", secs(p.compile, f)},
          {"eval", secs(p.eval, f)},
          {"checkpoint", secs(p.checkpoint, f)},
          {"weights", secs(p.weights, f)}}},
        {"weights",
         {{"bytes", in.run.weights.bytes},
          {"upload_seconds", secs(r.host.weights_upload, f)},
          {"download_seconds", secs(r.host.weights_download, f)},
          {"seconds", secs(p.weights, f)}}},
        {"checkpoint",
         {{"saves", p.checkpoints},
          {"bytes_per_save", in.run.checkpoint.bytes},
          {"seconds_per_save", secs(r.host.checkpoint, f)},
          {"seconds", secs(p.checkpoint, f)}}},
        {"eval",
         {{"samples", in.run.eval.samples},
          {"global_batch", in.run.eval.global_batch},
          {"steps_per_pass", in.run.eval.steps()},
          {"passes", p.eval_passes},
          {"steps", p.eval_steps},
          {"seconds", secs(p.eval, f)},
          {"step_seconds", in.eval_steps.empty() ? 0.0 : secs(in.eval_steps.back().cycles, f)},
          {"infeed_seconds_per_batch", secs(r.host.eval_infeed_per_batch, f)},
          {"reused_steps", r.reused_eval_steps},
          {"simulated_steps", r.simulated_eval_steps},
          {"device_steps", eval_steps}}},
        {"mxu_busy", r.mxu_busy_fraction},
        {"mxu_busy_first_epoch", r.mxu_busy_first_epoch},
        {"verdict", r.verdict},
        {"what_ifs", whatifs},
        {"reused_steps", r.reused_steps},
        {"simulated_steps", r.simulated_steps},
        {"device_steps", device_steps},
        {"host",
         {{"workers", r.host.workers},
          {"batch_produce_seconds", secs(r.host.produce(in.run.global_batch, 0), f)},
          {"batch_produce_cached_seconds",
           in.run.cache ? secs(r.host.produce(in.run.global_batch, 1), f) : 0.0},
          {"infeed_seconds_per_batch", secs(r.host.infeed_per_batch, f)},
          {"dispatch_seconds", secs(r.host.dispatch, f)},
          {"compile_seconds", secs(r.host.compile, f)},
          {"infeed_bytes_per_sample", in.run.infeed_bytes_per_sample}}},
        {"first_steps", first},
    };
}

std::string train_summary_text(const TrainResult& r, const TrainInputs& in) {
    const PipelineResult& p = r.pipeline;
    const double f = r.clock_mhz;
    const double total = secs(p.total, f);
    auto pct = [&](Cycle c) { return total > 0 ? 100.0 * secs(c, f) / total : 0.0; };
    std::string s = fmt::format("{}: {} epochs x {} steps of {} samples\n",
                                in.run.name.empty() ? in.run.path : in.run.name, in.run.epochs,
                                in.run.steps_per_epoch(), in.run.global_batch);
    s += fmt::format(
        "  epoch {:.4g} s (first {:.4g} s), run {:.4g} s; the last epoch: {:.4g} steps/s, {:.4g} "
        "samples/s\n",
        secs(p.epoch_cycles.back(), f), secs(p.epoch_cycles.front(), f), total,
        static_cast<double>(in.run.steps_per_epoch()) / secs(p.epoch_cycles.back(), f),
        static_cast<double>(in.run.samples) / secs(p.epoch_cycles.back(), f));
    s += fmt::format(
        "  time: device compute {:.1f}%, ICI (exposed) {:.1f}%, infeed wait {:.1f}%, "
        "dispatch {:.1f}%, compile {:.1f}%, eval {:.1f}%{}{}\n",
        pct(p.device - r.exposed_ici), pct(r.exposed_ici), pct(p.infeed_wait), pct(p.dispatch),
        pct(p.compile), pct(p.eval),
        p.checkpoints > 0 ? fmt::format(", checkpoint {:.1f}%", pct(p.checkpoint)) : "",
        p.weights > 0 ? fmt::format(", weights {:.1f}%", pct(p.weights)) : "");
    if (p.eval_passes > 0)
        s += fmt::format("  eval: {} passes x {} steps of {} samples, {:.4g} s in all\n",
                         p.eval_passes, in.run.eval.steps(), in.run.eval.global_batch,
                         secs(p.eval, f));
    if (p.checkpoints > 0)
        s += fmt::format("  checkpoints: {} saves of {:.4g} MB, {:.4g} s each, {:.4g} s in all\n",
                         p.checkpoints, static_cast<double>(in.run.checkpoint.bytes) / 1e6,
                         secs(r.host.checkpoint, f), secs(p.checkpoint, f));
    if (in.run.weights.enabled())
        s += fmt::format(
            "  weights: {:.4g} MB, upload {:.4g} s (before the first step), download {:.4g} s "
            "(after the last epoch)\n",
            static_cast<double>(in.run.weights.bytes) / 1e6, secs(r.host.weights_upload, f),
            secs(r.host.weights_download, f));
    s += fmt::format(
        "  MXU busy {:.1f}% over the last epoch ({:.1f}% over the first); verdict: "
        "{}\n",
        100.0 * r.mxu_busy_fraction, 100.0 * r.mxu_busy_first_epoch, r.verdict);
    if (p.infeed_wait > 0)
        s += fmt::format("  the device waited {:.4g} s for input (starved)\n",
                         secs(p.infeed_wait, f));
    for (const WhatIf& w : r.what_ifs)
        s += fmt::format("  what if {}: epoch {:.4g} s ({:+.0f}%)\n", w.change, w.epoch_seconds,
                         100.0 * w.change_fraction);
    s += fmt::format("  {} steps simulated, {} reused", r.simulated_steps, r.reused_steps);
    if (p.eval_passes > 0)
        s += fmt::format("; {} eval steps simulated, {} reused", r.simulated_eval_steps,
                         r.reused_eval_steps);
    s += "\n";
    return s;
}

nlohmann::json train_timeline_json(const TrainResult& r) {
    const double us_per_cycle = 1.0 / r.clock_mhz;
    nlohmann::json ev = nlohmann::json::array();
    const char* lanes[] = {"input pipeline", "infeed", "device"};
    for (int t = 0; t < 3; ++t)
        ev.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", 0},
                      {"tid", t},
                      {"args", {{"name", lanes[t]}}}});
    ev.push_back(
        {{"ph", "M"}, {"name", "process_name"}, {"pid", 0}, {"args", {{"name", "host + board"}}}});
    auto span = [&](int tid, const std::string& name, Cycle a, Cycle b) {
        if (b <= a) return;
        ev.push_back({{"ph", "X"},
                      {"pid", 0},
                      {"tid", tid},
                      {"name", name},
                      {"ts", static_cast<double>(a) * us_per_cycle},
                      {"dur", static_cast<double>(b - a) * us_per_cycle}});
    };
    for (std::size_t i = 0; i < r.pipeline.first_steps.size(); ++i) {
        const StepRecord& s = r.pipeline.first_steps[i];
        const std::string n = fmt::format(s.eval ? "eval batch {}" : "batch {}", s.index);
        span(0, n, s.produce_start, s.ready);
        span(1, n, s.infeed_start, s.infeed_end);
        const Cycle waited = s.wait_compile + s.wait_upload + s.wait_dispatch + s.wait_infeed;
        Cycle at = s.start - waited;
        span(2, "compile", at, at + s.wait_compile);
        at += s.wait_compile;
        span(2, "weights upload", at, at + s.wait_upload);
        at += s.wait_upload;
        span(2, "dispatch", at, at + s.wait_dispatch);
        at += s.wait_dispatch;
        span(2, "waiting for infeed", at, at + s.wait_infeed);
        span(2, fmt::format(s.eval ? "eval step {}" : "step {}", s.index), s.start, s.end);
        span(2, fmt::format("checkpoint after step {}", s.index), s.checkpoint_start,
             s.checkpoint_end);
    }
    span(2, "weights download", r.pipeline.total - r.host.weights_download, r.pipeline.total);
    return {{"traceEvents", ev}, {"displayTimeUnit", "ms"}};
}

}  // namespace tpusim
