// Single-request latencies of one pseudo-channel, each expected value derived from the JEDEC
// timing parameters in the config (DRAMsim3's style: tRCD + tCL + BL/2 ...), and the order in
// which its controller serves reads and writes. All times in tCK, except the refresh-average
// case's (isolated transfers through the whole HbmSystem, core cycles).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "../test_util.h"
#include "tpusim/arch/memory/hbm_channel.h"
#include "tpusim/arch/memory/hbm_traffic.h"
#include "tpusim/config/tpu_config.h"

using namespace tpusim;

namespace {

// Drives one pseudo-channel from `now` until `count` bursts issued; returns them.
struct Driver {
    explicit Driver(const HbmConfig& cfg, Cycle first_refresh = kNever / 2)
        : pc(cfg, counters, first_refresh) {}
    std::vector<HbmPseudoChannel::Issued> run(std::size_t count) {
        std::vector<HbmPseudoChannel::Issued> got;
        while (got.size() < count) {
            REQUIRE(pc.next_event() != kNever);
            now = pc.next_event();
            pc.step(now, got);
        }
        return got;
    }
    void read(std::uint32_t bg, std::uint32_t bank, std::uint32_t row, std::uint32_t tag) {
        pc.enqueue(make(bg, bank, row, false, tag), now);
    }
    void write(std::uint32_t bg, std::uint32_t bank, std::uint32_t row, std::uint32_t tag) {
        pc.enqueue(make(bg, bank, row, true, tag), now);
    }
    static HbmBurst make(std::uint32_t bg, std::uint32_t bank, std::uint32_t row, bool write,
                         std::uint32_t tag) {
        return HbmBurst{static_cast<std::uint8_t>(bg), static_cast<std::uint8_t>(bank), write, row,
                        tag};
    }
    HbmCounters counters;
    HbmPseudoChannel pc;
    Cycle now = 0;
};

HbmConfig v3_hbm() { return load_config(test::config_path("tpu_v3_8.json")).hbm; }

}  // namespace

TEST_CASE("row miss, row hit and row conflict latencies follow the timing parameters", "[hbm]") {
    for (const char* board : {"tpu_v2_8.json", "tpu_v3_8.json"}) {
        const HbmConfig cfg = load_config(test::config_path(board)).hbm;
        const HbmTimingConfig& t = cfg.timing;
        const Cycle bl2 = static_cast<Cycle>(t.burst_length / 2);
        Driver d(cfg);
        // Closed bank: ACT at 0, RD at tRCD, last beat tCL + BL/2 later.
        d.read(0, 0, 5, 1);
        auto got = d.run(1);
        CHECK(got[0].data_end == static_cast<Cycle>(t.tRCD + t.tCL) + bl2);
        CHECK(d.counters.row_misses == 1);
        // Open row, idle channel: RD issues on arrival.
        d.now = 1000;
        d.read(0, 0, 5, 2);
        got = d.run(1);
        CHECK(got[0].data_end == 1000 + static_cast<Cycle>(t.tCL) + bl2);
        CHECK(d.counters.row_hits == 1);
        // Another row open (tRAS long past): PRE, tRP, ACT, tRCD, RD, tCL + BL/2.
        d.now = 2000;
        d.read(0, 0, 6, 3);
        got = d.run(1);
        CHECK(got[0].data_end == 2000 + static_cast<Cycle>(t.tRP + t.tRCD + t.tCL) + bl2);
        CHECK(d.counters.row_conflicts == 1);
    }
}

TEST_CASE("read after write waits tWTR_L after the write data; write after read waits tRTW",
          "[hbm]") {
    const HbmConfig cfg = v3_hbm();
    const HbmTimingConfig& t = cfg.timing;
    const Cycle bl2 = static_cast<Cycle>(t.burst_length / 2);
    Driver d(cfg);
    d.read(1, 2, 7, 0);  // open the row
    d.run(1);
    d.now = 500;
    d.write(1, 2, 7, 1);
    auto w = d.run(1);
    // WR at 500; its data ends at 500 + tWL + BL/2.
    CHECK(w[0].data_end == 500 + static_cast<Cycle>(t.tWL) + bl2);
    d.now = 501;
    d.read(1, 2, 7, 2);
    auto r = d.run(1);
    // Same bank group: RD no earlier than the write data end + tWTR_L.
    const Cycle rd_issue = w[0].data_end + static_cast<Cycle>(t.tWTR_L);
    CHECK(r[0].data_end == rd_issue + static_cast<Cycle>(t.tCL) + bl2);
    CHECK(d.counters.lost_turnaround_cycles > 0);

    // Write after read: RD at 2000, WR no earlier than 2000 + tRTW.
    d.now = 2000;
    d.read(1, 2, 7, 3);
    d.run(1);
    d.now = 2001;
    d.write(1, 2, 7, 4);
    w = d.run(1);
    CHECK(w[0].data_end == 2000 + static_cast<Cycle>(t.tRTW + t.tWL) + bl2);
}

TEST_CASE("refresh blocks the bank: a read due at refresh time waits tRP + tRFC", "[hbm]") {
    const HbmConfig cfg = v3_hbm();
    const HbmTimingConfig& t = cfg.timing;
    const Cycle bl2 = static_cast<Cycle>(t.burst_length / 2);
    const Cycle refresh_at = 1000;
    Driver d(cfg, refresh_at);
    d.read(0, 0, 3, 0);
    d.run(1);
    // The row is open and idle; at the refresh the controller precharges (tRP) and refreshes
    // (tRFC); the read then needs a new ACT (tRCD) before RD.
    d.now = refresh_at;
    d.read(0, 0, 3, 1);
    auto got = d.run(1);
    CHECK(got[0].data_end ==
          refresh_at + static_cast<Cycle>(t.tRP + t.tRFC + t.tRCD + t.tCL) + bl2);
    CHECK(d.counters.refreshes == 1);
    CHECK(d.counters.lost_refresh_cycles > 0);
    // The next refresh is tREFI later; an idle channel catches up on it without a step.
    d.now = refresh_at + static_cast<Cycle>(t.tREFI) * 3 + 1;
    d.read(0, 0, 3, 2);
    d.run(1);
    CHECK(d.counters.refreshes == 4);
}

TEST_CASE("a write drain hands the bus back to waiting reads after writes_per_switch writes",
          "[hbm]") {
    HbmConfig cfg = v3_hbm();
    // A 32-entry write queue: a drain starts at 24 writes and ends at 8 when reads wait.
    cfg.write_queue_depth = 32;
    cfg.write_drain_high = 0.75;
    cfg.write_drain_low = 0.25;
    // 8 reads and 24 writes queued at once, all to one open row of four bank groups; the
    // directions in the order their column commands issue.
    auto order = [&](std::int64_t batch) {
        cfg.writes_per_switch = batch;
        Driver d(cfg);
        for (std::uint32_t i = 0; i < 8; ++i) d.read(i % 4, 0, 1, i);
        for (std::uint32_t i = 0; i < 24; ++i) d.write(i % 4, 0, 1, 100 + i);
        std::string s;
        for (const auto& b : d.run(32)) s += b.is_write ? 'W' : 'R';
        return s;
    };
    const auto run = [](char c, std::size_t n) { return std::string(n, c); };
    // Watermarks alone: the queue is at its high watermark, so writes first, down to the low
    // one (16), the reads, then the writes left once no read waits.
    CHECK(order(0) == run('W', 16) + run('R', 8) + run('W', 8));
    // Batches of 4: a drain waits for one read; after 4 writes the bus turns back to the
    // waiting reads, and the write queue (20) is below its high watermark until they are done.
    CHECK(order(4) == run('R', 1) + run('W', 4) + run('R', 7) + run('W', 20));
    // A batch longer than the drain changes nothing but the first read.
    CHECK(order(64) == run('R', 1) + run('W', 16) + run('R', 7) + run('W', 8));
}

TEST_CASE("FR-FCFS serves a younger row hit before an older row conflict", "[hbm]") {
    const HbmConfig cfg = v3_hbm();
    const HbmTimingConfig& t = cfg.timing;
    const Cycle bl2 = static_cast<Cycle>(t.burst_length / 2);
    Driver d(cfg);
    d.read(2, 1, 10, 0);
    d.run(1);
    d.now = 300;
    d.read(2, 1, 11, 1);  // older, conflicts with the open row 10
    d.read(2, 1, 10, 2);  // younger, hits
    auto got = d.run(2);
    REQUIRE(got.size() == 2);
    CHECK(got[0].owner == 2);
    CHECK(got[0].data_end == 300 + static_cast<Cycle>(t.tCL) + bl2);
    // The conflict's PRE waits for the hit's read-to-precharge time (tRTP), then tRP + tRCD.
    CHECK(got[1].owner == 1);
    CHECK(got[1].data_end == 300 + static_cast<Cycle>(t.tRTP + t.tRP + t.tRCD + t.tCL) + bl2);
}

TEST_CASE("bank-group interleaved reads run at one burst per tCCD_S, same group at tCCD_L",
          "[hbm]") {
    const HbmConfig cfg = v3_hbm();
    const HbmTimingConfig& t = cfg.timing;
    const Cycle bl2 = static_cast<Cycle>(t.burst_length / 2);
    Driver d(cfg);
    for (std::uint32_t bg = 0; bg < 2; ++bg) d.read(bg, 0, 1, bg);
    d.run(2);
    d.now = 1000;
    for (std::uint32_t i = 0; i < 8; ++i) d.read(i % 2, 0, 1, i);
    auto alt = d.run(8);
    const Cycle s = std::max<Cycle>(static_cast<Cycle>(t.tCCD_S), bl2);
    CHECK(alt.back().data_end - alt.front().data_end == 7 * s);
    d.now = 2000;
    for (std::uint32_t i = 0; i < 8; ++i) d.read(0, 0, 1, i);
    auto same = d.run(8);
    const Cycle l = std::max<Cycle>(static_cast<Cycle>(t.tCCD_L), bl2);
    CHECK(same.back().data_end - same.front().data_end == 7 * l);
}

TEST_CASE("an isolated burst waits for a refresh in progress (tRP + tRFC)^2 / (2 tREFI) on average",
          "[hbm]") {
    // One burst touches one pseudo-channel. Its refresh (precharge-all, then tRFC) occupies
    // tRP + tRFC of every tREFI; a burst arriving at a uniformly spread phase meets it with
    // probability (tRP + tRFC) / tREFI and then waits half of it on average. Bursts to a whole
    // half's pseudo-channels meet one of the 32 far more often (docs/hbm.md).
    const TpuConfig cfg = load_config(test::config_path("tpu_v3_8.json"));
    HbmConfig off = cfg.hbm;
    off.timing.tRFC = 0;
    const int samples = 256;
    const Bytes burst = 32;
    const HbmLatencyResult with =
        isolated_latency_over_refresh(cfg.hbm, cfg.chip.clock_mhz, 2, burst, false, samples);
    const HbmLatencyResult without =
        isolated_latency_over_refresh(off, cfg.chip.clock_mhz, 2, burst, false, samples);
    const double busy = static_cast<double>(cfg.hbm.timing.tRP + cfg.hbm.timing.tRFC);
    const double expected_tck = busy * busy / (2.0 * static_cast<double>(cfg.hbm.timing.tREFI));
    const double expected = expected_tck * cfg.chip.clock_mhz / cfg.hbm.clock_mhz();
    INFO("mean " << with.mean_cycles << " cycles, " << without.mean_cycles
                 << " without refresh; derived wait " << expected);
    CHECK(with.mean_cycles - without.mean_cycles == Approx(expected).epsilon(0.25));
    // No sample waits longer than a whole refresh and the row it then has to open.
    const double tck = cfg.chip.clock_mhz / cfg.hbm.clock_mhz();
    CHECK(static_cast<double>(with.max_cycles) <=
          static_cast<double>(without.max_cycles) + (busy + cfg.hbm.timing.tRCD) * tck + 1);
    CHECK(with.bursts == static_cast<std::uint64_t>(samples));

    // A 4 KiB read spreads over all 32 pseudo-channels of the half, refreshed one after the
    // other through half of every interval: it waits far more often than one burst does.
    const HbmLatencyResult wide =
        isolated_latency_over_refresh(cfg.hbm, cfg.chip.clock_mhz, 2, 4 * kKiB, false, 64);
    const HbmLatencyResult wide_off =
        isolated_latency_over_refresh(off, cfg.chip.clock_mhz, 2, 4 * kKiB, false, 64);
    CHECK(wide.mean_cycles - wide_off.mean_cycles > 4 * expected);
}
