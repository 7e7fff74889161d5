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
    CHECK(p.reserve(100, 10 * w, 100) == 110);
    CHECK(p.reserve(105, w + 1, 105) == 112);  // w + 1 bytes need two cycles
    CHECK(p.busy_cycles() == 12);
}

TEST_CASE("a VMEM port serves a transfer in the earliest idle stretch that fits it", "[vmem]") {
    VmemPort p(512);
    const Bytes w = 512;
    // A read booked for when its data lands (200..210); a write ready earlier goes through
    // the idle stretch before it instead of queueing behind the booking.
    CHECK(p.reserve(200, 10 * w, 100) == 210);
    CHECK(p.reserve(150, 5 * w, 100) == 155);
    // 5 cycles do not fit in 196..200: after the read.
    CHECK(p.reserve(196, 5 * w, 100) == 215);
    // 45 cycles fill 155..200 exactly.
    CHECK(p.reserve(155, 45 * w, 100) == 200);
    CHECK(p.free_at() == 215);
    CHECK(p.busy_cycles() == 65);
    // Bookings that ended by the caller's cycle are forgotten; the port is idle after 215.
    CHECK(p.reserve(300, w, 300) == 301);
    CHECK(p.reserve(300, w, 300) == 302);
}
