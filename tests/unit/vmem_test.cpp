// VMEM capacity accounting and port bandwidth.
#include "tpusim/arch/memory/vmem.h"

#include <catch2/catch.hpp>

#include "tpusim/common/error.h"

using namespace tpusim;

TEST_CASE("VMEM allocation beyond the capacity is a clear input error", "[vmem]") {
    VmemConfig cfg;  // 16 MiB
    VmemAllocator a(cfg);
    const Addr x = a.allocate(10 * kMiB, "weights");
    const Addr y = a.allocate(4 * kMiB, "activations");
    CHECK(x == 0);
    CHECK(y >= 10 * kMiB);
    CHECK(a.used_bytes() == 14 * kMiB);
    try {
        a.allocate(4 * kMiB, "output");
        FAIL("an over-full VMEM was accepted");
    } catch (const InputError& e) {
        CHECK(e.where() == "vmem");
        CHECK(e.what_only() == "program needs 18 MiB of VMEM (buffer \"output\"), core has 16 MiB");
    }
    // Releasing makes room again, and first fit reuses the hole.
    a.release(x);
    CHECK(a.allocate(4 * kMiB, "output") == 0);
    CHECK(a.peak_bytes() == 14 * kMiB);
    CHECK_THROWS_AS(a.check_range(16 * kMiB - 8, 16, "load"), InputError);
    CHECK_NOTHROW(a.check_range(16 * kMiB - 16, 16, "load"));
}

TEST_CASE("a VMEM port serialises transfers at its width", "[vmem]") {
    DmaConfig dma;
    VmemPort p(dma.vmem_bytes_per_cycle);
    const Bytes w = static_cast<Bytes>(dma.vmem_bytes_per_cycle);
    // 10 full widths from cycle 100, then a second transfer arriving at 105 queues behind it.
    CHECK(p.reserve(100, 10 * w) == 110);
    CHECK(p.reserve(105, w + 1) == 112);  // w + 1 bytes need two cycles
    CHECK(p.busy_cycles() == 12);
}
