// The calibrated HBM queue model (used by `tpusim run`) against the burst-level reference
// (HbmSystem) it is calibrated on: streaming traffic of a different size than the
// calibration must take the same time, and the queue rules (halves, remote latency) hold.
#include "tpusim/arch/memory/hbm_calibrated.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "../test_util.h"
#include "tpusim/arch/memory/hbm_traffic.h"
#include "tpusim/config/tpu_config.h"

using namespace tpusim;

namespace {

// Both cores stream `per_core` bytes from their own half as back-to-back 1 MiB transfers,
// each issued when the previous one of that core lands (a DMA engine with one descriptor in
// flight would do worse; the queue never idles here because issue happens at submit).
Cycle calibrated_stream(HbmCalibratedModel& m, const HbmConfig& hbm, Bytes per_core, bool write) {
    const Bytes half = hbm.capacity_bytes() / 2;
    const Bytes chunk = kMiB;
    Cycle end = 0;
    for (int core = 0; core < 2; ++core)
        for (Bytes off = 0; off < per_core; off += chunk)
            end = std::max(end,
                           m.transfer(static_cast<Addr>(core) * half + off, chunk, write, core, 0));
    return end;
}

}  // namespace

TEST_CASE("calibrated HBM streams within 2% of the burst-level model on both boards",
          "[hbm][calibrated]") {
    HbmCalibrationCache calibrations;
    for (const char* board : {"tpu_v2_8.json", "tpu_v3_8.json"}) {
        for (const bool write : {false, true}) {
            const TpuConfig cfg = load_config(test::config_path(board));
            // Reference: 16 MiB per core through the burst-level model (the calibration uses
            // 4 MiB, so this is not the calibration run repeated).
            HbmSystem ref(cfg.hbm, cfg.chip.clock_mhz, 2);
            HbmTraffic tr;
            tr.kind = write ? HbmTraffic::Kind::Write : HbmTraffic::Kind::Read;
            tr.bytes_per_core = 16 * kMiB;
            const HbmTrafficResult r = run_hbm_traffic(ref, tr, cfg.chip.clock_mhz);

            HbmCalibratedModel m(cfg.hbm, cfg.chip.clock_mhz, 2,
                                 calibrations.get(cfg.hbm, cfg.chip.clock_mhz, 2));
            const Cycle cal = calibrated_stream(m, cfg.hbm, tr.bytes_per_core, write);
            INFO(board << (write ? " writes" : " reads") << ": burst model " << r.cycles
                       << " cycles, calibrated " << cal);
            CHECK(static_cast<double>(cal) == Approx(static_cast<double>(r.cycles)).epsilon(0.02));
            CHECK(m.calibration().calibration_bursts > 0);
        }
    }
}

TEST_CASE("a core streaming from the other core's half draws its remote share in both models",
          "[hbm][calibrated]") {
    HbmCalibrationCache calibrations;
    // hbm.remote_bandwidth_fraction of the half's peak (docs/hbm.md): the burst-level model
    // admits the remote bursts at that rate; the calibrated model paces the requester's remote
    // transfers at it. Before, the calibrated model served them at the local rate (issue #10).
    for (const char* board : {"tpu_v2_8.json", "tpu_v3_8.json"}) {
        const TpuConfig cfg = load_config(test::config_path(board));
        HbmSystem ref(cfg.hbm, cfg.chip.clock_mhz, 2);
        HbmTraffic tr;
        tr.kind = HbmTraffic::Kind::Read;
        tr.cores = {0};
        tr.remote = true;
        tr.bytes_per_core = 8 * kMiB;
        const HbmTrafficResult r = run_hbm_traffic(ref, tr, cfg.chip.clock_mhz);

        HbmCalibratedModel m(cfg.hbm, cfg.chip.clock_mhz, 2,
                             calibrations.get(cfg.hbm, cfg.chip.clock_mhz, 2));
        const Bytes half = cfg.hbm.capacity_bytes() / 2;
        Cycle end = 0;
        for (Bytes off = 0; off < tr.bytes_per_core; off += kMiB) {
            end = std::max(end, m.transfer(half + off, kMiB, false, 0, 0));
        }
        INFO(board << ": burst model " << r.cycles << " cycles, calibrated " << end);
        CHECK(static_cast<double>(end) == Approx(static_cast<double>(r.cycles)).epsilon(0.03));
        // Derived: the share of the half's peak, in bytes per core cycle.
        const double share = cfg.hbm.remote_bandwidth_fraction * cfg.hbm.peak_bytes_per_second() /
                             2 / (cfg.chip.clock_mhz * 1e6);
        CHECK(static_cast<double>(end) >= static_cast<double>(tr.bytes_per_core) / share);
        CHECK(m.stats().lookup("remote_requests") == 8.0);
    }
}

TEST_CASE("calibrated HBM moves whole bursts, as the burst-level model does", "[hbm][calibrated]") {
    HbmCalibrationCache calibrations;
    const TpuConfig cfg = load_config(test::config_path("tpu_v3_8.json"));
    HbmCalibratedModel m(cfg.hbm, cfg.chip.clock_mhz, 2,
                         calibrations.get(cfg.hbm, cfg.chip.clock_mhz, 2));
    const Bytes b = static_cast<Bytes>(cfg.hbm.channel_width_bits / cfg.hbm.pseudo_channels / 8 *
                                       cfg.hbm.timing.burst_length);
    REQUIRE(b == 32);
    // Dense and aligned: the bytes themselves.
    CHECK(m.bytes_moved(0, 1, 4096, 4096) == 4096);
    CHECK(m.bytes_moved(0, 16, 256, 256) == 16 * 256);
    // 8-byte rows a page apart: one burst each.
    CHECK(m.bytes_moved(0, 100, 8, 4096) == 100 * b);
    // A 32-byte row that starts mid-burst touches two.
    CHECK(m.bytes_moved(16, 1, 32, 32) == 2 * b);
    CHECK(m.bytes_moved(16, 10, 32, 64) == 10 * 2 * b);
    // A stride of 48 B, rows at offsets 0, 48, 96 and 144: rows of 16 B each lie within one
    // burst; rows of 24 B end at 24, 72, 120 and 168, so the second and the fourth cross a
    // burst boundary (2 + 2 + 1 + 1 bursts).
    CHECK(m.bytes_moved(0, 4, 16, 48) == 4 * b);
    CHECK(m.bytes_moved(0, 4, 24, 48) == 6 * b);
    CHECK(m.bytes_moved(0, 0, 32, 32) == 0);
    // Many rows: the count per period of offsets, times the periods, equals the row-by-row
    // count for every start, row size and stride tried here.
    for (const Addr start : {Addr{0}, Addr{8}, Addr{20}, Addr{4096 + 30}}) {
        for (const Bytes row : {Bytes{1}, Bytes{6}, Bytes{24}, Bytes{40}, Bytes{100}}) {
            for (const Bytes stride : {row, row + 4, Bytes{48}, Bytes{257}, Bytes{4096}}) {
                if (stride < row) continue;
                for (const std::int64_t rows : {1, 3, 33, 1000}) {
                    Bytes brute = 0;
                    for (std::int64_t r = 0; r < rows; ++r) {
                        const Addr a = start + static_cast<Addr>(r) * stride;
                        brute += ((a + row + b - 1) / b - a / b) * b;
                    }
                    INFO("start " << start << " row " << row << " stride " << stride << " rows "
                                  << rows);
                    CHECK(m.bytes_moved(start, rows, row, stride) == brute);
                }
            }
        }
    }
}

TEST_CASE("calibrated HBM: halves queue independently; a remote half adds its latency",
          "[hbm][calibrated]") {
    HbmCalibrationCache calibrations;
    const TpuConfig cfg = load_config(test::config_path("tpu_v3_8.json"));
    const Bytes half = cfg.hbm.capacity_bytes() / 2;
    HbmCalibratedModel m(cfg.hbm, cfg.chip.clock_mhz, 2,
                         calibrations.get(cfg.hbm, cfg.chip.clock_mhz, 2));
    const HbmCalibration& c = m.calibration();
    REQUIRE(c.read_bytes_per_cycle > 0);
    REQUIRE(c.read_latency > 0);
    const Bytes n = 64 * kKiB;
    const auto service =
        static_cast<Cycle>(std::ceil(static_cast<double>(n) / c.read_bytes_per_cycle));

    // Core 0 reads its own half at cycle 100: service time plus the idle latency.
    CHECK(m.transfer(0, n, false, 0, 100) == 100 + service + c.read_latency);
    // Core 1 reads its own half at the same time: an independent queue, same answer.
    CHECK(m.transfer(half, n, false, 1, 100) == 100 + service + c.read_latency);
    // Core 0 again on its half: queued behind its first transfer.
    CHECK(m.transfer(n, n, false, 0, 100) == 100 + 2 * service + c.read_latency);
    // Core 0 reads core 1's half: queued there, plus the remote latency.
    CHECK(m.transfer(half + n, n, false, 0, 100) ==
          100 + 2 * service + c.read_latency + static_cast<Cycle>(cfg.hbm.remote_latency_cycles));
    // Streaming never beats the derived peak of the chip.
    const double peak_per_cycle = cfg.hbm.peak_bytes_per_second() / (cfg.chip.clock_mhz * 1e6);
    CHECK(2 * c.read_bytes_per_cycle < peak_per_cycle);
    CHECK(2 * c.write_bytes_per_cycle < peak_per_cycle);
}

TEST_CASE("calibrated HBM charges the turnaround to bytes of both directions queued together",
          "[hbm][calibrated]") {
    HbmCalibrationCache calibrations;
    const TpuConfig cfg = load_config(test::config_path("tpu_v3_8.json"));
    const HbmCalibration& cal = calibrations.get(cfg.hbm, cfg.chip.clock_mhz, 2);
    // The burst-level copy is slower than reads and writes alone (turnaround, docs/hbm.md):
    // per byte of either direction a copy interleaves, this much more.
    REQUIRE(cal.copy_bytes_per_cycle > 0);
    const double turn = (2.0 / cal.copy_bytes_per_cycle - 1.0 / cal.read_bytes_per_cycle -
                         1.0 / cal.write_bytes_per_cycle) /
                        2.0;
    REQUIRE(turn > 0);
    const double rd = 1.0 / cal.read_bytes_per_cycle, wr = 1.0 / cal.write_bytes_per_cycle;
    const Bytes b = kMiB;
    const Cycle lat_r = cal.read_latency, lat_w = cal.write_latency;
    auto service = [](double cycles) { return static_cast<Cycle>(std::ceil(cycles)); };
    const double mib = static_cast<double>(b);

    // A read, then a write queued behind it: the write meets the read's bytes and pays the
    // turnaround for both.
    HbmCalibratedModel m(cfg.hbm, cfg.chip.clock_mhz, 2, cal);
    const Cycle r_free = m.transfer(0, b, false, 0, 0) - lat_r;
    REQUIRE(r_free == service(mib * rd));
    const Cycle w_free = m.transfer(b, b, true, 0, 0) - lat_w;
    CHECK(w_free == r_free + service(mib * (wr + 2 * turn)));
    // A second write: every read byte queued is met already, so it turns nothing.
    const Cycle w2_free = m.transfer(2 * b, b, true, 0, 0) - lat_w;
    CHECK(w2_free == w_free + service(mib * wr));
    // A read queued behind that write meets its bytes.
    const Cycle r2_free = m.transfer(3 * b, b, false, 0, 0) - lat_r;
    CHECK(r2_free == w2_free + service(mib * (rd + 2 * turn)));
    // After the queue has drained the bus is free to turn: a write alone pays nothing.
    const Cycle late = r2_free + 1000;
    CHECK(m.transfer(4 * b, b, true, 0, late) - lat_w == late + service(mib * wr));

    // Four read streams and three write streams queued together (Adam's pattern): three of
    // the four reads are met by a write, so 6 of 7 parts pay, not all 7.
    HbmCalibratedModel a(cfg.hbm, cfg.chip.clock_mhz, 2, cal);
    Cycle end = 0;
    for (int i = 0; i < 4; ++i) end = a.transfer(static_cast<Addr>(i) * b, b, false, 0, 0) - lat_r;
    for (int i = 4; i < 7; ++i) end = a.transfer(static_cast<Addr>(i) * b, b, true, 0, 0) - lat_w;
    const double expected = mib * (4 * rd + 3 * wr + 6 * turn);
    CHECK(static_cast<double>(end) == Approx(expected).margin(7));
    // The other half queues on its own and meets none of them.
    const Addr other_half = cfg.hbm.capacity_bytes() / 2;
    CHECK(a.transfer(other_half, b, true, 1, 0) - lat_w == service(mib * wr));
}

TEST_CASE("the calibration's runs side by side give the serial numbers bit for bit",
          "[hbm][calibrated]") {
    HbmCalibrationCache calibrations;
    for (const char* board : {"tpu_v2_8.json", "tpu_v3_8.json"}) {
        const TpuConfig cfg = load_config(test::config_path(board));
        const HbmCalibration serial = measure_hbm(cfg.hbm, cfg.chip.clock_mhz, 2, false);
        const HbmCalibration& cached = calibrations.get(cfg.hbm, cfg.chip.clock_mhz, 2);
        // Exact equality: the same doubles, not close ones.
        CHECK(cached.read_bytes_per_cycle == serial.read_bytes_per_cycle);
        CHECK(cached.write_bytes_per_cycle == serial.write_bytes_per_cycle);
        CHECK(cached.copy_bytes_per_cycle == serial.copy_bytes_per_cycle);
        CHECK(cached.read_latency == serial.read_latency);
        CHECK(cached.write_latency == serial.write_latency);
        CHECK(cached.calibration_bursts == serial.calibration_bursts);
        CHECK(serial.read_bytes_per_cycle > 0);
    }
}

TEST_CASE("a calibration cache measures each config once", "[hbm][calibrated]") {
    const TpuConfig v2 = load_config(test::config_path("tpu_v2_8.json"));
    const TpuConfig v3 = load_config(test::config_path("tpu_v3_8.json"));
    HbmCalibrationCache calibrations;
    const HbmCalibration& a = calibrations.get(v3.hbm, v3.chip.clock_mhz, 2);
    CHECK(&calibrations.get(v3.hbm, v3.chip.clock_mhz, 2) == &a);
    const HbmCalibration& b = calibrations.get(v2.hbm, v2.chip.clock_mhz, 2);
    CHECK(&b != &a);
    CHECK(b.read_bytes_per_cycle != a.read_bytes_per_cycle);
    // Another cache measures again: nothing is shared between caches.
    HbmCalibrationCache other;
    const HbmCalibration& c = other.get(v3.hbm, v3.chip.clock_mhz, 2);
    CHECK(&c != &a);
    CHECK(c.read_bytes_per_cycle == a.read_bytes_per_cycle);
    CHECK(hbm_calibration_key(v3.hbm, v3.chip.clock_mhz, 2) !=
          hbm_calibration_key(v3.hbm, v3.chip.clock_mhz, 1));
}
