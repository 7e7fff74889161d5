#include "tpusim/arch/memory/hbm_traffic.h"

#include <chrono>
#include <random>

namespace tpusim {

namespace {

struct CoreStream {
    int core = 0;
    Addr base = 0;   // start of the half this core targets
    Bytes span = 0;  // bytes of that half used
    Bytes issued = 0, issued_writes = 0;
    int in_flight = 0;
};

}  // namespace

HbmTrafficResult run_hbm_traffic(HbmSystem& hbm, const HbmTraffic& tr, double core_clock_mhz) {
    const auto wall0 = std::chrono::steady_clock::now();
    const HbmAddressMap& map = hbm.address_map();
    std::mt19937_64 rng(tr.seed);
    std::vector<CoreStream> streams;
    for (int c : tr.cores) {
        CoreStream s;
        s.core = c;
        const std::uint32_t target = tr.remote ? (static_cast<std::uint32_t>(c) + 1) % map.owners()
                                               : static_cast<std::uint32_t>(c);
        s.base = map.local_base(target);
        s.span = map.owner_bytes();
        streams.push_back(s);
    }
    const Bytes chunk = tr.chunk_bytes;
    // Copy: reads from the lower quarter of the half, writes to the upper half of it.
    const bool copy = tr.kind == HbmTraffic::Kind::Copy;
    auto submit_next = [&](std::size_t i, Cycle now) {
        CoreStream& s = streams[i];
        HbmRequest r;
        r.requester = s.core;
        r.tag = i;
        r.bytes = chunk;
        if (tr.kind == HbmTraffic::Kind::Random) {
            r.addr = s.base + (rng() % (s.span / chunk)) * chunk;
            r.is_write = false;
            s.issued += chunk;
        } else if (copy && s.issued_writes < s.issued) {
            r.addr = s.base + s.span / 2 + s.issued_writes % (s.span / 2);
            r.is_write = true;
            s.issued_writes += chunk;
        } else {
            r.addr = s.base + s.issued % (copy ? s.span / 2 : s.span);
            r.is_write = tr.kind == HbmTraffic::Kind::Write;
            s.issued += chunk;
        }
        ++s.in_flight;
        hbm.submit(r, now);
    };
    auto wants_more = [&](const CoreStream& s) {
        return s.issued < tr.bytes_per_core || (copy && s.issued_writes < tr.bytes_per_core);
    };
    for (std::size_t i = 0; i < streams.size(); ++i) {
        for (int k = 0; k < tr.outstanding_per_core && wants_more(streams[i]); ++k) {
            submit_next(i, 0);
        }
    }
    Cycle last = 0;
    while (!hbm.idle()) {
        const Cycle now = hbm.next_event_cycle();
        hbm.advance_to(now);
        for (const HbmCompletion& c : hbm.take_completions()) {
            last = std::max(last, c.cycle);
            CoreStream& s = streams[c.tag];
            --s.in_flight;
            if (wants_more(s)) submit_next(c.tag, std::max(now, c.cycle));
        }
    }
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
    res.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    return res;
}

}  // namespace tpusim
