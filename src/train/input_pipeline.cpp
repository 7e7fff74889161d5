#include "tpusim/train/input_pipeline.h"

#include <algorithm>
#include <cmath>

namespace tpusim {

namespace {

Cycle to_cycles(double seconds, double clock_mhz) {
    return static_cast<Cycle>(std::llround(seconds * clock_mhz * 1e6));
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

Cycle read_cycles(std::int64_t bytes, double per_cycle) {
    if (per_cycle <= 0 || bytes <= 0) return 0;
    return static_cast<Cycle>(std::ceil(static_cast<double>(bytes) / per_cycle));
}

}  // namespace

Cycle HostTiming::produce(std::int64_t samples, std::int64_t epoch) const {
    const bool cached = cache && epoch > 0;
    const auto rounds = static_cast<Cycle>((samples + workers - 1) / workers);
    const Cycle cpu = rounds * (cached ? cpu_per_sample_cached : cpu_per_sample);
    const Cycle read =
        read_cycles(samples * (cached ? cached_bytes_per_sample : stored_bytes_per_sample),
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
    const double batch = static_cast<double>(run.global_batch * run.infeed_bytes_per_sample);
    const double pcie = batch / static_cast<double>(chips) / (host.pcie_bandwidth_gbps * 1e9);
    const double net =
        host.access == HostAccess::node ? batch / (host.network_bandwidth_gbps * 1e9) : 0.0;
    h.infeed_per_batch = to_cycles(std::max(pcie, net), clock_mhz);
    h.dispatch = to_cycles(host.dispatch_us * 1e-6, clock_mhz);
    h.compile = to_cycles(
        host.compile_base_s + host.compile_ms_per_op * 1e-3 * static_cast<double>(ops), clock_mhz);
    return h;
}

PipelineResult simulate_pipeline(const HostTiming& h, const RunDescription& run,
                                 const std::function<Cycle(std::int64_t)>& device,
                                 std::size_t keep) {
    PipelineResult r;
    const std::int64_t steps = run.steps_per_epoch();
    std::vector<StepRecord> s(static_cast<std::size_t>(steps));
    Cycle t0 = 0;
    std::int64_t global = 0;
    for (std::int64_t e = 0; e < run.epochs; ++e) {
        for (std::int64_t k = 0; k < steps; ++k, ++global) {
            StepRecord& x = s[static_cast<std::size_t>(k)];
            const StepRecord* prev = k > 0 ? &s[static_cast<std::size_t>(k - 1)] : nullptr;
            const Cycle slot =
                k >= h.prefetch ? s[static_cast<std::size_t>(k - h.prefetch)].infeed_start : t0;
            x.produce_start = std::max(prev ? prev->ready : t0, slot);
            x.ready = x.produce_start + h.produce(run.samples_in_step(k), e);
            x.infeed_start =
                std::max({x.ready, prev ? prev->infeed_end : t0, prev ? prev->start : t0});
            x.infeed_end = x.infeed_start + h.infeed_per_batch;
            const Cycle free_at = prev ? prev->end : t0;
            const Cycle compiled = global == 0 ? t0 + h.compile : 0;
            x.start = std::max({free_at + h.dispatch, x.infeed_end, compiled});
            const Cycle gap = x.start - free_at;
            x.wait_compile = std::min(gap, compiled > free_at ? compiled - free_at : 0);
            x.wait_dispatch = std::min(gap - x.wait_compile, h.dispatch);
            x.wait_infeed = gap - x.wait_compile - x.wait_dispatch;
            const Cycle d = device(global);
            x.end = x.start + d;
            r.device += d;
            r.compile += x.wait_compile;
            r.dispatch += x.wait_dispatch;
            r.infeed_wait += x.wait_infeed;
            if (r.first_steps.size() < keep) r.first_steps.push_back(x);
        }
        const Cycle end = steps > 0 ? s.back().end : t0;
        r.epoch_cycles.push_back(end - t0);
        t0 = end;
    }
    r.total = t0;
    r.steps = global;
    return r;
}

}  // namespace tpusim
