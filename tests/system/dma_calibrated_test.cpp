// The DMA engines in front of the calibrated HBM (sim.hbm_model = calibrated, the default):
// every dma.* timing key changes the cycles, by what the engine's mechanism says. One rig per
// config variant, all elaborated at once (SystemC elaborates once per process).
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <systemc>
#include <vector>

#include "../completion_log.h"
#include "../test_util.h"
#include "tpusim/arch/memory/dma_engine.h"
#include "tpusim/arch/memory/hbm_calibrated_module.h"
#include "tpusim/arch/memory/vmem_module.h"
#include "tpusim/common/error.h"
#include "tpusim/config/tpu_config.h"

using namespace tpusim;

namespace {

struct Rig : sc_core::sc_module {
    TpuConfig cfg;
    CalibratedHbm hbm;
    Vmem vmem;
    DmaEngine dma;
    test::CompletionLog log;
    Rig(sc_core::sc_module_name n, const TpuConfig& c)
        : sc_module(n),
          cfg(c),
          hbm("hbm", cfg.hbm, cfg.chip.clock_mhz, cfg.chip.cores_per_chip),
          vmem("vmem", cfg.vmem, cfg.dma),
          dma("dma", cfg.dma, 0, cfg.hbm.capacity_bytes(), DmaEngine::HbmTiming::Annotated) {
        dma.hbm_out.bind(hbm.target_in);
        dma.vmem_out.bind(vmem.dma_in);
    }
    // Reads `descriptors` blocks of `bytes` from core 0's local half into VMEM, all enqueued
    // now.
    void read(int descriptors, Bytes bytes) {
        for (int i = 0; i < descriptors; ++i) {
            DmaDescriptor d;
            d.dir = DmaDescriptor::Dir::HbmToVmem;
            d.hbm_addr = static_cast<Addr>(i) * bytes;
            d.vmem_addr = static_cast<Addr>(i) * bytes;
            d.rows = 1;
            d.row_bytes = bytes;
            dma.enqueue(d, nullptr, log.to(static_cast<std::uint64_t>(i)));
        }
    }
    Cycle last() const {
        Cycle t = 0;
        for (const auto& [tag, at] : log.order) t = std::max(t, at);
        return t;
    }
};

TpuConfig variant(const std::vector<std::string>& sets) {
    return load_config(test::config_path("tpu_v3_8.json"), sets);
}

}  // namespace

TEST_CASE("every dma key changes the cycles of calibrated-HBM transfers as derived",
          "[dma][hbm][system]") {
    const TpuConfig base = variant({});
    const auto C = static_cast<Bytes>(base.dma.chunk_bytes);  // 64 KiB
    const Cycle setup = static_cast<Cycle>(base.dma.setup_latency_cycles);
    std::vector<std::unique_ptr<Rig>> rigs;
    auto rig = [&](const char* name, const std::vector<std::string>& sets) -> Rig& {
        rigs.push_back(std::make_unique<Rig>(name, variant(sets)));
        return *rigs.back();
    };
    Rig& a = rig("a_default", {});  // 4 chunks in flight per engine
    Rig& b = rig("b_one_chunk", {"dma.max_outstanding_chunks=1"});
    Rig& c = rig("c_half_chunks", {"dma.max_outstanding_chunks=1", "dma.chunk_bytes=32768"});
    Rig& d = rig("d_slow_port", {"dma.max_outstanding_chunks=1", "dma.vmem_bytes_per_cycle=64"});
    Rig& e = rig("e_long_setup", {"dma.setup_latency_cycles=1000"});
    Rig& f = rig("f_one_engine", {"dma.max_outstanding_chunks=1", "dma.engines=1"});
    Rig& g = rig("g_two_engines", {"dma.max_outstanding_chunks=1", "dma.engines=2"});
    // Elaboration completes the sockets' binding; the transfers start at cycle 0.
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
    for (Rig* r : {&a, &b, &c, &d, &e}) r->read(1, 4 * C);  // 4 chunks
    for (Rig* r : {&f, &g}) r->read(2, C);                  // 2 descriptors of 1 chunk
    sc_core::sc_start();

    // The calibrated HBM serves core 0's half as a FIFO: a local read of n bytes takes
    // ceil(n / read rate) cycles of the queue and lands read_latency later (hbm_calibrated.h).
    // The VMEM DMA port then takes ceil(n / vmem_bytes_per_cycle) (store and forward).
    const HbmCalibration& cal = a.hbm.model().calibration();
    auto serve = [&](Bytes n) {
        return static_cast<Cycle>(
            std::ceil(static_cast<double>(n) * (1.0 / cal.read_bytes_per_cycle)));
    };
    auto port = [](Bytes n, std::int64_t v) { return ceil_div(n, static_cast<Bytes>(v)); };
    const Cycle L = cal.read_latency;
    const Cycle s = serve(C), p = port(C, base.dma.vmem_bytes_per_cycle);
    REQUIRE(p <= s);  // the port is faster than a core's HBM half (512 B/cycle vs ~450)
    for (Rig* r : {&a, &b, &c, &d, &e}) REQUIRE(r->log.order.size() == 1);

    // Four chunks in flight: all leave after the setup, queue at the HBM back to back, and
    // each passes the (faster) port as the next is still being read: the last lands after
    // 4 services, one latency and one port transfer.
    CHECK(a.last() == setup + 4 * s + L + p);
    // One chunk in flight: each waits for the one before to land.
    CHECK(b.last() == setup + 4 * (s + L + p));
    // Half the chunk size, one in flight: twice the chunks, each paying the latency.
    CHECK(c.last() == setup + 8 * (serve(C / 2) + L + port(C / 2, 512)));
    // A port of 64 B/cycle: each chunk spends C / 64 cycles in it.
    CHECK(d.last() == setup + 4 * (s + L + port(C, 64)));
    // The setup is paid once before the first chunk leaves.
    CHECK(e.last() == 1000 + 4 * s + L + p);
    // One engine runs the two descriptors one after the other; two run them side by side, the
    // second queued at the HBM behind the first.
    CHECK(f.last() == 2 * (setup + s + L + p));
    CHECK(g.last() == setup + 2 * s + L + p);
    // The engines' and the port's counters saw every byte.
    CHECK(a.dma.stats().lookup("bytes_to_vmem") == static_cast<double>(4 * C));
    CHECK(a.dma.stats().lookup("chunks") == 4.0);
    CHECK(c.dma.stats().lookup("chunks") == 8.0);
    CHECK(a.vmem.stats().lookup("dma_port_bytes") == static_cast<double>(4 * C));
    CHECK(a.hbm.stats().lookup("bytes_read") == static_cast<double>(4 * C));
}

TEST_CASE("a descriptor past the chip's HBM is refused at enqueue by the calibrated model too",
          "[dma][hbm][system]") {
    // Before: the annotated path sent such a chunk to the HBM, which answered with an address
    // error that dma.hbm_errors counted while the run went on (the HLO replays' 70 to 28,432
    // per core).
    Rig rig("rig", variant({}));
    DmaDescriptor d;
    d.dir = DmaDescriptor::Dir::HbmToVmem;
    d.hbm_addr = rig.cfg.hbm.capacity_bytes() - 4096;
    d.rows = 1;
    d.row_bytes = 8192;
    try {
        rig.dma.enqueue(d, nullptr);
        FAIL("accepted");
    } catch (const InputError& e) {
        CHECK(std::string(e.what_only()).find("reaches HBM byte") != std::string::npos);
    }
    CHECK(rig.dma.stats().lookup("hbm_errors") == 0.0);
}
