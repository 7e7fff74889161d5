#include "tpusim/train/input_pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tpusim/common/error.h"

namespace tpusim {

namespace {

// A run's host timeline saturates here instead of wrapping: about 156 years at 940 MHz.
constexpr Cycle kMaxRunCycles = Cycle{1} << 62;

Cycle sat_add(Cycle a, Cycle b) {
    Cycle r;
    return __builtin_add_overflow(a, b, &r) || r > kMaxRunCycles ? kMaxRunCycles : r;
}

Cycle sat_mul(Cycle a, Cycle b) {
    Cycle r;
    return __builtin_mul_overflow(a, b, &r) || r > kMaxRunCycles ? kMaxRunCycles : r;
}

// Seconds to cycles, saturating (a per-sample cost times a huge batch can exceed int64).
Cycle to_cycles_sat(double cycles) {
    return cycles >= static_cast<double>(kMaxRunCycles) ? kMaxRunCycles
                                                        : static_cast<Cycle>(std::ceil(cycles));
}

Cycle to_cycles(double seconds, double clock_mhz) {
    const double c = seconds * clock_mhz * 1e6;
    return c >= static_cast<double>(kMaxRunCycles) ? kMaxRunCycles
                                                   : static_cast<Cycle>(std::llround(c));
}

double bytes_per_cycle(SampleSource s, const HostConfig& host, double clock_mhz) {
    switch (s) {
        case SampleSource::Memory:
            return 0.0;
        case SampleSource::Disk:
            return host.disk_read_gbps * 1e9 / (clock_mhz * 1e6);
        case SampleSource::Gcs:
            return host.network_bandwidth_gbps * 1e9 / (clock_mhz * 1e6);
    }
    return 0.0;
}

// Bytes as a double: samples x bytes per sample can exceed int64 (both may be 2^40).
Cycle read_cycles(double bytes, double per_cycle) {
    if (per_cycle <= 0 || bytes <= 0) return 0;
    return to_cycles_sat(bytes / per_cycle);
}

// Seconds for one batch of `bytes` to reach the board. Each chip's share crosses its own PCIe
// link. On a TPU Node the whole batch first leaves the user VM: through the network at
// `network_bandwidth_gbps`, and through the framework runtime's transfer path (XRT
// TransferToServer, a TF session feed: serialise, gRPC, deserialise) at its measured
// `node_transfer_gbps` when set, plus one call's fixed `node_transfer_latency_us`. The legs
// stream in chunks, so the slowest rate decides.
double batch_transfer_seconds(const HostConfig& host, double bytes, std::int64_t chips) {
    const double pcie = bytes / static_cast<double>(chips) / (host.pcie_bandwidth_gbps * 1e9);
    if (host.access != HostAccess::Node) return pcie;
    double gbps = host.network_bandwidth_gbps;
    if (host.node_transfer_gbps > 0) gbps = std::min(gbps, host.node_transfer_gbps);
    const double node = host.node_transfer_latency_us * 1e-6 + bytes / (gbps * 1e9);
    return std::max(pcie, node);
}

}  // namespace

Cycle HostTiming::produce(std::int64_t samples, std::int64_t epoch) const {
    const bool cached = cache && epoch > 0;
    const auto rounds = static_cast<Cycle>((samples + workers - 1) / workers);
    const Cycle cpu = sat_mul(rounds, cached ? cpu_per_sample_cached : cpu_per_sample);
    const Cycle read = read_cycles(
        static_cast<double>(samples) *
            static_cast<double>(cached ? cached_bytes_per_sample : stored_bytes_per_sample),
        cached ? cached_read_bytes_per_cycle : read_bytes_per_cycle);
    return std::max(cpu, read);
}

Cycle HostTiming::produce_eval(std::int64_t samples) const {
    const auto rounds = static_cast<Cycle>((samples + workers - 1) / workers);
    const Cycle read =
        read_cycles(static_cast<double>(samples) * static_cast<double>(stored_bytes_per_sample),
                    read_bytes_per_cycle);
    return std::max(sat_mul(rounds, eval_cpu_per_sample), read);
}

HostTiming host_timing(const HostConfig& host, const RunDescription& run, std::int64_t chips,
                       std::size_t ops, double clock_mhz) {
    HostTiming h;
    h.workers = std::min(run.parallel_calls, host.vcpus);
    h.prefetch = run.prefetch_batches;
    h.cpu_per_sample = to_cycles(run.preprocess_ms_per_sample * 1e-3, clock_mhz);
    h.cpu_per_sample_cached = to_cycles(run.cached_ms_per_sample * 1e-3, clock_mhz);
    h.read_bytes_per_cycle = bytes_per_cycle(run.source, host, clock_mhz);
    h.cached_read_bytes_per_cycle = bytes_per_cycle(run.cache_source, host, clock_mhz);
    h.stored_bytes_per_sample = run.stored_bytes_per_sample;
    h.cached_bytes_per_sample = run.cached_bytes_per_sample >= 0 ? run.cached_bytes_per_sample
                                                                 : run.stored_bytes_per_sample;
    h.cache = run.cache;
    // A padded batch is infed whole.
    const double batch =
        static_cast<double>(run.global_batch) * static_cast<double>(run.infeed_bytes_per_sample);
    h.infeed_per_batch = to_cycles(batch_transfer_seconds(host, batch, chips), clock_mhz);
    h.dispatch = to_cycles(host.dispatch_us * 1e-6, clock_mhz);
    if (run.eval.enabled()) {
        h.eval_cpu_per_sample = to_cycles(run.eval.preprocess_ms_per_sample * 1e-3, clock_mhz);
        const double eval_batch = static_cast<double>(run.eval.global_batch) *
                                  static_cast<double>(run.eval.infeed_bytes_per_sample);
        h.eval_infeed_per_batch =
            to_cycles(batch_transfer_seconds(host, eval_batch, chips), clock_mhz);
    }
    // One replica of the variables crosses one chip's PCIe link (and the Node's transfer path,
    // when the host reaches the board through one): a checkpoint reads it from one chip, the
    // weights' upload writes every chip at once (each over its own link), the download reads one.
    const auto one_replica = [&](std::int64_t bytes) {
        return to_cycles(batch_transfer_seconds(host, static_cast<double>(bytes), 1), clock_mhz);
    };
    if (run.checkpoint.enabled()) h.checkpoint = one_replica(run.checkpoint.bytes);
    if (run.weights.enabled() && run.weights.upload)
        h.weights_upload = one_replica(run.weights.bytes);
    if (run.weights.enabled() && run.weights.download)
        h.weights_download = one_replica(run.weights.bytes);
    // Every program the run compiles costs the same: the step program stands for them all.
    h.compile = to_cycles(
        static_cast<double>(run.compiled_programs) *
            (host.compile_base_s + host.compile_ms_per_op * 1e-3 * static_cast<double>(ops)),
        clock_mhz);
    return h;
}

namespace {

void check_end(const RunDescription& run, Cycle end, std::int64_t step, std::int64_t steps,
               std::int64_t epoch, const char* what) {
    if (end >= kMaxRunCycles)
        throw InputError(run.path, "/epochs",
                         fmt::format("the run would last more than 2^62 core cycles ({}step {} "
                                     "of {} per epoch, epoch {}): expected fewer samples, "
                                     "epochs or smaller per-sample costs",
                                     what, step + 1, steps, epoch + 1));
}

// One evaluation pass starting at `t` (the end of the training step before it): a new
// iterator over the validation set, each eval step launched and infed like a training step.
// Returns the end of its last step.
Cycle eval_pass(const HostTiming& h, const RunDescription& run, const DeviceTime& device, Cycle t,
                std::int64_t epoch, PipelineResult& r, std::size_t keep) {
    const std::int64_t steps = run.eval.steps();
    const auto ring = static_cast<std::size_t>(std::max<std::int64_t>(h.prefetch, 1) + 1);
    std::vector<StepRecord> s(std::min(ring, static_cast<std::size_t>(steps)));
    StepRecord prev;
    for (std::int64_t j = 0; j < steps; ++j) {
        const bool first = j == 0;
        const Cycle slot = j >= h.prefetch
                               ? s[static_cast<std::size_t>(j - h.prefetch) % s.size()].infeed_start
                               : t;
        StepRecord x;
        x.eval = true;
        x.index = r.eval_steps;
        x.produce_start = std::max(first ? t : prev.ready, slot);
        x.ready = sat_add(x.produce_start, h.produce_eval(run.eval.samples_in_step(j)));
        // Pipelined, a batch is infed while the step before runs; if not, once it has ended.
        const Cycle after_step = first ? t : (run.eval.pipelined ? prev.start : prev.end);
        x.infeed_start = std::max({x.ready, first ? t : prev.infeed_end, after_step});
        x.infeed_end = sat_add(x.infeed_start, h.eval_infeed_per_batch);
        const Cycle free_at = first ? t : prev.end;
        x.start = std::max(sat_add(free_at, h.dispatch), x.infeed_end);
        const Cycle gap = x.start - free_at;
        x.wait_dispatch = std::min(gap, h.dispatch);
        x.wait_infeed = gap - x.wait_dispatch;
        x.end = sat_add(x.start, device(r.eval_steps));
        check_end(run, x.end, j, steps, epoch, "eval ");
        ++r.eval_steps;
        if (r.first_steps.size() < keep) r.first_steps.push_back(x);
        s[static_cast<std::size_t>(j) % s.size()] = x;
        prev = x;
    }
    ++r.eval_passes;
    r.eval += prev.end - t;
    return prev.end;
}

}  // namespace

PipelineResult simulate_pipeline(const HostTiming& h, const RunDescription& run,
                                 const DeviceTime& device, const DeviceTime& eval_device,
                                 std::size_t keep) {
    PipelineResult r;
    const std::int64_t steps = run.steps_per_epoch();
    // Step k needs steps k - 1 and k - prefetch only: a ring of prefetch + 1 records keeps the
    // memory independent of the epoch's length.
    const auto ring = static_cast<std::size_t>(std::max<std::int64_t>(h.prefetch, 1) + 1);
    std::vector<StepRecord> s(
        std::min(ring, static_cast<std::size_t>(std::max<std::int64_t>(steps, 1))));
    const auto at = [&](std::int64_t k) -> StepRecord& {
        return s[static_cast<std::size_t>(k) % s.size()];
    };
    Cycle t0 = 0;
    std::int64_t global = 0;
    for (std::int64_t e = 0; e < run.epochs; ++e) {
        StepRecord prev_rec;
        Cycle board_free = t0;  // the end of the last step on the board, eval ones included
        for (std::int64_t k = 0; k < steps; ++k, ++global) {
            const StepRecord* prev = k > 0 ? &prev_rec : nullptr;
            const Cycle slot = k >= h.prefetch ? at(k - h.prefetch).infeed_start : t0;
            StepRecord x;
            x.index = global;
            x.produce_start = std::max(prev ? prev->ready : t0, slot);
            x.ready = sat_add(x.produce_start, h.produce(run.samples_in_step(k), e));
            x.infeed_start =
                std::max({x.ready, prev ? prev->infeed_end : t0, prev ? prev->start : t0});
            x.infeed_end = sat_add(x.infeed_start, h.infeed_per_batch);
            const Cycle free_at = board_free;
            const Cycle compiled = global == 0 ? sat_add(t0, h.compile) : 0;
            const Cycle uploaded = global == 0 ? sat_add(compiled, h.weights_upload) : 0;
            x.start = std::max({sat_add(free_at, h.dispatch), x.infeed_end, uploaded});
            const Cycle gap = x.start - free_at;
            x.wait_compile = std::min(gap, compiled > free_at ? compiled - free_at : 0);
            x.wait_upload = std::min(gap - x.wait_compile, global == 0 ? h.weights_upload : 0);
            x.wait_dispatch = std::min(gap - x.wait_compile - x.wait_upload, h.dispatch);
            x.wait_infeed = gap - x.wait_compile - x.wait_upload - x.wait_dispatch;
            const Cycle d = device(global);
            x.end = sat_add(x.start, d);
            check_end(run, x.end, k, steps, e, "");
            r.device += d;
            r.compile += x.wait_compile;
            r.weights += x.wait_upload;
            r.dispatch += x.wait_dispatch;
            r.infeed_wait += x.wait_infeed;
            const std::size_t kept_at = r.first_steps.size();  // this step's record, if kept
            if (kept_at < keep) r.first_steps.push_back(x);
            at(k) = x;
            prev_rec = x;
            board_free = x.end;
            if (run.eval_after(e, k))
                board_free = eval_pass(h, run, eval_device, x.end, e, r, keep);
            if (run.checkpoint_after(e, k)) {
                if (kept_at < keep) {
                    r.first_steps[kept_at].checkpoint_start = board_free;
                    r.first_steps[kept_at].checkpoint_end = sat_add(board_free, h.checkpoint);
                }
                board_free = sat_add(board_free, h.checkpoint);
                r.checkpoint = sat_add(r.checkpoint, h.checkpoint);
                ++r.checkpoints;
            }
        }
        const Cycle end = steps > 0 ? board_free : t0;
        r.epoch_cycles.push_back(end - t0);
        t0 = end;
    }
    r.total = sat_add(t0, h.weights_download);
    r.weights = sat_add(r.weights, h.weights_download);
    r.steps = global;
    return r;
}

}  // namespace tpusim
