// The SystemC BurstHbm (the reference `tpusim run --set sim.hbm_model=burst` and `tpusim bench
// hbm` use) against the plain driver of the same HbmSystem, run_hbm_traffic: the same requests
// at the same cycles must complete at the same cycles. BurstHbm runs the controller ahead to
// the next completion between SystemC wake-ups; a request that arrives meanwhile used to start
// at the cycle the controller had reached on every pseudo-channel, so that a refresh holding
// one core's transfer held the other core's too (two cores, one 4 KiB read in flight each:
// 7x the plain driver's time).
#include "tpusim/arch/memory/hbm_module.h"

#include <catch2/catch.hpp>
#include <memory>
#include <systemc>
#include <vector>

#include "../test_util.h"
#include "tpusim/arch/memory/hbm_traffic_module.h"
#include "tpusim/config/tpu_config.h"

using namespace tpusim;

namespace {

struct HbmUnderTraffic : sc_core::sc_module {
    BurstHbm hbm;
    HbmTrafficGen gen;
    HbmUnderTraffic(sc_core::sc_module_name n, const TpuConfig& cfg, const HbmTraffic& t)
        : sc_module(n),
          hbm("hbm", cfg.hbm, cfg.chip.clock_mhz, 2),
          gen("gen", t, hbm.system().address_map()) {
        gen.hbm_out.bind(hbm.target_in);
    }
};

HbmTraffic hbm_module_case(HbmTraffic::Kind kind, int outstanding, Bytes chunk, Bytes per_core) {
    HbmTraffic t;
    t.kind = kind;
    t.cores = {0, 1};
    t.outstanding_per_core = outstanding;
    t.chunk_bytes = chunk;
    t.bytes_per_core = per_core;
    return t;
}

}  // namespace

TEST_CASE("BurstHbm completes traffic at the cycles the plain HBM driver does", "[hbm][system]") {
    const TpuConfig cfg = load_config(test::config_path("tpu_v3_8.json"));
    using K = HbmTraffic::Kind;
    // Latency-bound (one transfer in flight per core, a refresh wait is most of a transfer's
    // time), mixed directions, and streaming.
    const std::vector<HbmTraffic> cases = {
        hbm_module_case(K::Read, 1, 4 * kKiB, kMiB),
        hbm_module_case(K::Write, 1, kKiB, kMiB / 4),
        hbm_module_case(K::Copy, 2, 16 * kKiB, kMiB),
        hbm_module_case(K::Read, 8, 64 * kKiB, 4 * kMiB),
    };
    std::vector<std::unique_ptr<HbmUnderTraffic>> rigs;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        rigs.push_back(std::make_unique<HbmUnderTraffic>(
            sc_core::sc_gen_unique_name("hbm_under_traffic"), cfg, cases[i]));
    }
    sc_core::sc_start();
    for (std::size_t i = 0; i < cases.size(); ++i) {
        HbmSystem plain(cfg.hbm, cfg.chip.clock_mhz, 2);
        const HbmTrafficResult ref = run_hbm_traffic(plain, cases[i], cfg.chip.clock_mhz);
        const HbmTrafficResult got = rigs[i]->gen.result(rigs[i]->hbm.system(), cfg.chip.clock_mhz);
        INFO("case " << i << ": plain driver " << ref.cycles << " cycles, BurstHbm " << got.cycles);
        CHECK(got.bursts == ref.bursts);
        if (cases[i].outstanding_per_core == 1) {
            // One transfer in flight per core: the same requests in the same order.
            CHECK(got.cycles == ref.cycles);
        } else {
            // Several: a stream's workers take its next transaction in the order the two
            // drivers wake them, which may differ (a copy's reads and writes interleave
            // differently); the time may not.
            CHECK(static_cast<double>(got.cycles) ==
                  Approx(static_cast<double>(ref.cycles)).epsilon(0.03));
        }
    }
}
