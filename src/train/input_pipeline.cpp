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
        case SampleSource::memory:
            return 0.0;
        case SampleSource::disk:
            return host.disk_read_gbps * 1e9 / (clock_mhz * 1e6);
        case SampleSource::gcs:
            return host.network_bandwidth_gbps * 1e9 / (clock_mhz * 1e6);
    }
    return 0.0;
}

// Bytes as a double: samples x bytes per sample can exceed int64 (both may be 2^40).
Cycle read_cycles(double bytes, double per_cycle) {
    if (per_cycle <= 0 || bytes <= 0) return 0;
    return to_cycles_sat(bytes / per_cycle);
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
    // A padded batch is infed whole. Each chip's share crosses its own PCIe link; on a TPU
    // Node the whole batch first crosses the user VM's network link. Both stream in chunks,
    // so the slower of the two decides.
    const double batch =
        static_cast<double>(run.global_batch) * static_cast<double>(run.infeed_bytes_per_sample);
    const double pcie = batch / static_cast<double>(chips) / (host.pcie_bandwidth_gbps * 1e9);
    const double net =
        host.access == HostAccess::node ? batch / (host.network_bandwidth_gbps * 1e9) : 0.0;
    h.infeed_per_batch = to_cycles(std::max(pcie, net), clock_mhz);
    h.dispatch = to_cycles(host.dispatch_us * 1e-6, clock_mhz);
    // Every program the run compiles costs the same: the step program stands for them all.
    h.compile = to_cycles(
        static_cast<double>(run.compiled_programs) *
            (host.compile_base_s + host.compile_ms_per_op * 1e-3 * static_cast<double>(ops)),
        clock_mhz);
    return h;
}

PipelineResult simulate_pipeline(const HostTiming& h, const RunDescription& run,
                                 const std::function<Cycle(std::int64_t)>& device,
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
        for (std::int64_t k = 0; k < steps; ++k, ++global) {
            const StepRecord* prev = k > 0 ? &prev_rec : nullptr;
            const Cycle slot = k >= h.prefetch ? at(k - h.prefetch).infeed_start : t0;
            StepRecord x;
            x.produce_start = std::max(prev ? prev->ready : t0, slot);
            x.ready = sat_add(x.produce_start, h.produce(run.samples_in_step(k), e));
            x.infeed_start =
                std::max({x.ready, prev ? prev->infeed_end : t0, prev ? prev->start : t0});
            x.infeed_end = sat_add(x.infeed_start, h.infeed_per_batch);
            const Cycle free_at = prev ? prev->end : t0;
            const Cycle compiled = global == 0 ? sat_add(t0, h.compile) : 0;
            x.start = std::max({sat_add(free_at, h.dispatch), x.infeed_end, compiled});
            const Cycle gap = x.start - free_at;
            x.wait_compile = std::min(gap, compiled > free_at ? compiled - free_at : 0);
            x.wait_dispatch = std::min(gap - x.wait_compile, h.dispatch);
            x.wait_infeed = gap - x.wait_compile - x.wait_dispatch;
            const Cycle d = device(global);
            x.end = sat_add(x.start, d);
            if (x.end >= kMaxRunCycles)
                throw InputError(
                    run.path, "/epochs",
                    fmt::format("the run would last more than 2^62 core cycles (step {} of {} "
                                "per epoch, epoch {}): expected fewer samples, epochs or "
                                "smaller per-sample costs",
                                k + 1, steps, e + 1));
            r.device += d;
            r.compile += x.wait_compile;
            r.dispatch += x.wait_dispatch;
            r.infeed_wait += x.wait_infeed;
            if (r.first_steps.size() < keep) r.first_steps.push_back(x);
            at(k) = x;
            prev_rec = x;
        }
        const Cycle end = steps > 0 ? prev_rec.end : t0;
        r.epoch_cycles.push_back(end - t0);
        t0 = end;
    }
    r.total = t0;
    r.steps = global;
    return r;
}

}  // namespace tpusim
