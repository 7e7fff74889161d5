// DMA engines of both cores streaming through one chip's BurstHbm under SystemC.
#include <catch2/catch.hpp>
#include <systemc>

#include "../completion_log.h"
#include "../test_util.h"
#include "tpusim/arch/memory/dma_engine.h"
#include "tpusim/arch/memory/hbm_module.h"
#include "tpusim/common/error.h"
#include "tpusim/common/sim_time.h"
#include "tpusim/config/tpu_config.h"

using namespace tpusim;

namespace {

struct Chip : sc_core::sc_module {
    BurstHbm hbm;
    Vmem vmem0, vmem1;
    DmaEngine dma0, dma1;
    Chip(sc_core::sc_module_name n, const TpuConfig& cfg)
        : sc_module(n),
          hbm("hbm", cfg.hbm, cfg.chip.clock_mhz, 2),
          vmem0("vmem0", cfg.vmem, cfg.dma),
          vmem1("vmem1", cfg.vmem, cfg.dma),
          dma0("dma0", cfg.dma, 0, cfg.hbm.capacity_bytes()),
          dma1("dma1", cfg.dma, 1, cfg.hbm.capacity_bytes()) {
        dma0.hbm_out.bind(hbm.target_in);
        dma1.hbm_out.bind(hbm.target_in);
        dma0.vmem_out.bind(vmem0.dma_in);
        dma1.vmem_out.bind(vmem1.dma_in);
    }
};

}  // namespace

TEST_CASE("DMA HBM->VMEM on both cores moves every byte near the streaming bandwidth",
          "[dma][hbm][system]") {
    const TpuConfig cfg = load_config(test::config_path("tpu_v3_8.json"));
    Chip chip("chip", cfg);
    // Each core fills 8 MiB of its VMEM from its local half, as 4 descriptors of 2 MiB
    // (one per engine), and records when the last one finished.
    const Bytes per_desc = 2 * kMiB;
    test::CompletionLog log;  // tag: the core
    for (int core = 0; core < 2; ++core) {
        DmaEngine& dma = core == 0 ? chip.dma0 : chip.dma1;
        for (int i = 0; i < 4; ++i) {
            DmaDescriptor d;
            d.dir = DmaDescriptor::Dir::HbmToVmem;
            d.hbm_addr = chip.hbm.system().address_map().local_base(core) + i * per_desc;
            d.vmem_addr = i * per_desc;
            d.rows = 1;
            d.row_bytes = per_desc;
            dma.enqueue(d, nullptr, log.to(static_cast<std::uint64_t>(core)));
        }
    }
    sc_core::sc_start();
    REQUIRE(log.order.size() == 8);
    Cycle last[2] = {0, 0}, end = 0;
    for (const auto& [core, c] : log.order) {
        last[core] = std::max(last[core], c);
        end = std::max(end, c);
    }
    const double seconds = static_cast<double>(end) / (cfg.chip.clock_mhz * 1e6);
    const double gbps = 16.0 * kMiB / seconds / 1e9;
    const auto& k = chip.hbm.system().counters();
    CHECK(k.read_bursts * 32 == 16 * kMiB);
    // Bounded above by the HBM peak and the VMEM DMA ports (2 cores x 512 B x 940 MHz).
    const double vmem_gbps =
        2.0 * static_cast<double>(cfg.dma.vmem_bytes_per_cycle) * cfg.chip.clock_mhz * 1e6 / 1e9;
    const double bound = std::min(cfg.hbm.peak_bytes_per_second() / 1e9, vmem_gbps);
    INFO("achieved " << gbps << " GB/s, bound " << bound);
    CHECK(gbps < bound);
    CHECK(gbps > 0.80 * bound);
    CHECK(chip.hbm.stats().lookup("bytes_read") == 16.0 * kMiB);
    // Each core streams its own half: neither is starved (finish times within 5%).
    const double a = static_cast<double>(last[0]), b = static_cast<double>(last[1]);
    CHECK(std::abs(a - b) < 0.05 * std::max(a, b));
    CHECK(chip.dma0.stats().lookup("bytes_to_vmem") == 8.0 * kMiB);
}

TEST_CASE("a DMA descriptor reaching past VMEM is refused at enqueue", "[dma][vmem][system]") {
    const TpuConfig cfg = load_config(test::config_path("tpu_v3_8.json"));
    Chip chip("chip", cfg);
    DmaDescriptor d;
    d.vmem_addr = 15 * kMiB;
    d.row_bytes = 2 * kMiB;
    try {
        chip.dma0.enqueue(d, nullptr);
        FAIL("accepted");
    } catch (const InputError& e) {
        CHECK(std::string(e.what_only()).find("core has 16 MiB") != std::string::npos);
    }
    // A descriptor that fits completes, signalling its event.
    d.vmem_addr = 0;
    d.dir = DmaDescriptor::Dir::VmemToHbm;
    sc_core::sc_event done;
    test::CompletionLog log;
    chip.dma0.enqueue(d, &done, log.to());
    sc_core::sc_start();
    const Cycle at = log.at.at(0);
    CHECK(at > static_cast<Cycle>(cfg.dma.setup_latency_cycles));
    CHECK(chip.hbm.system().counters().write_bursts * 32 == 2 * kMiB);
}
