#include "tpusim/arch/memory/hbm_traffic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

namespace tpusim {

HbmTrafficStreams::HbmTrafficStreams(const HbmTraffic& tr, const HbmAddressMap& map)
    : tr_(tr), rng_(tr.seed) {
    for (int c : tr.cores) {
        Stream s;
        s.core = c;
        const std::uint32_t target = tr.remote ? (static_cast<std::uint32_t>(c) + 1) % map.owners()
                                               : static_cast<std::uint32_t>(c);
        s.base = map.local_base(target);
        s.span = map.owner_bytes();
        streams_.push_back(s);
    }
}

bool HbmTrafficStreams::wants_more(std::size_t i) const {
    const Stream& s = streams_[i];
    const bool copy = tr_.kind == HbmTraffic::Kind::Copy;
    return s.issued < tr_.bytes_per_core || (copy && s.issued_writes < tr_.bytes_per_core);
}

HbmRequest HbmTrafficStreams::next(std::size_t i) {
    Stream& s = streams_[i];
    const Bytes chunk = tr_.chunk_bytes;
    // Copy: reads from the lower quarter of the half, writes to the upper half of it.
    const bool copy = tr_.kind == HbmTraffic::Kind::Copy;
    HbmRequest r;
    r.requester = s.core;
    r.tag = i;
    r.bytes = chunk;
    if (tr_.kind == HbmTraffic::Kind::Random) {
        r.addr = s.base + (rng_() % (s.span / chunk)) * chunk;
        r.is_write = false;
        s.issued += chunk;
    } else if (copy && s.issued_writes < s.issued) {
        r.addr = s.base + s.span / 2 + s.issued_writes % (s.span / 2);
        r.is_write = true;
        s.issued_writes += chunk;
    } else {
        r.addr = s.base + s.issued % (copy ? s.span / 2 : s.span);
        r.is_write = tr_.kind == HbmTraffic::Kind::Write;
        s.issued += chunk;
    }
    return r;
}

HbmTrafficResult traffic_result(const HbmSystem& hbm, Cycle last, double core_clock_mhz) {
    const HbmAddressMap& map = hbm.address_map();
    HbmTrafficResult res;
    res.cycles = last;
    res.seconds = static_cast<double>(last) / (core_clock_mhz * 1e6);
    res.counters = hbm.counters();
    res.bytes_read = res.counters.read_bursts * map.burst_bytes();
    res.bytes_written = res.counters.write_bursts * map.burst_bytes();
    res.bursts = res.counters.read_bursts + res.counters.write_bursts;
    res.gbps = res.seconds > 0
                   ? static_cast<double>(res.bytes_read + res.bytes_written) / res.seconds / 1e9
                   : 0.0;
    res.hbm_cycles = hbm.hbm_cycles();
    return res;
}

HbmTrafficResult run_hbm_traffic(HbmSystem& hbm, const HbmTraffic& tr, double core_clock_mhz) {
    const auto wall0 = std::chrono::steady_clock::now();
    HbmTrafficStreams streams(tr, hbm.address_map());
    for (std::size_t i = 0; i < streams.size(); ++i) {
        for (int k = 0; k < tr.outstanding_per_core && streams.wants_more(i); ++k) {
            hbm.submit(streams.next(i), 0);
        }
    }
    Cycle last = 0;
    while (!hbm.idle()) {
        const Cycle now = hbm.next_event_cycle();
        hbm.advance_to(now);
        for (const HbmCompletion& c : hbm.take_completions()) {
            last = std::max(last, c.cycle);
            if (streams.wants_more(c.tag)) hbm.submit(streams.next(c.tag), std::max(now, c.cycle));
        }
    }
    HbmTrafficResult res = traffic_result(hbm, last, core_clock_mhz);
    res.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    return res;
}

Cycle run_isolated(HbmSystem& hbm, const HbmRequest& r, Cycle at) {
    hbm.advance_to(at);
    hbm.take_completions();
    hbm.submit(r, at);
    for (;;) {
        const Cycle next = hbm.next_event_cycle();
        if (next == kNever) return kNever;
        hbm.advance_to(next);
        for (const HbmCompletion& c : hbm.take_completions()) {
            if (c.tag == r.tag) return c.cycle;
        }
    }
}

HbmLatencyResult isolated_latency_over_refresh(const HbmConfig& cfg, double core_clock_mhz,
                                               std::uint32_t cores_per_chip, Bytes bytes,
                                               bool write, int samples) {
    HbmSystem hbm(cfg, core_clock_mhz, cores_per_chip);
    const HbmAddressMap& map = hbm.address_map();
    samples = std::max(samples, 1);
    // One refresh interval in core cycles; consecutive starts lie one interval and one
    // sample's share of it apart, so that their phases step evenly through exactly one
    // interval.
    const double period =
        static_cast<double>(cfg.timing.tREFI) * core_clock_mhz / hbm.hbm_clock_mhz();
    const double step = period * (1.0 + 1.0 / samples);
    // Steps of a 64th of the half: the row field, on top of an owner's bytes in the address
    // map, changes; the pseudo-channels and banks stay.
    const Bytes row_step = map.owner_bytes() / 64;
    HbmLatencyResult res;
    res.min_cycles = kNever;
    double sum = 0;
    Cycle t = 0;
    for (int j = 0; j < samples; ++j) {
        // The planned start, or once the transfer before has landed when the interval is
        // shorter than a transfer.
        t = std::max(t, static_cast<Cycle>(std::llround(step * (j + 1))));
        HbmRequest r;
        r.addr = map.local_base(0) + static_cast<Addr>(j % 64) * row_step;
        r.bytes = bytes;
        r.is_write = write;
        r.requester = 0;
        r.tag = 1;
        const Cycle done = run_isolated(hbm, r, t);
        if (done == kNever) break;  // nothing to transfer (bytes == 0)
        const Cycle lat = done - t;
        sum += static_cast<double>(lat);
        res.min_cycles = std::min(res.min_cycles, lat);
        res.max_cycles = std::max(res.max_cycles, lat);
        t = done;
    }
    if (res.min_cycles == kNever) res.min_cycles = 0;
    res.mean_cycles = sum / samples;
    res.bursts = hbm.counters().read_bursts + hbm.counters().write_bursts;
    return res;
}

}  // namespace tpusim
