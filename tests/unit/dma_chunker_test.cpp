// DMA descriptor splitting into chunks and burst counting.
#include "tpusim/arch/memory/dma_chunker.h"

#include <catch2/catch.hpp>
#include <stdexcept>

using namespace tpusim;

TEST_CASE("a dense descriptor is merged into one row and cut into chunk-sized pieces", "[dma]") {
    DmaDescriptor d;
    d.hbm_addr = 4096;
    d.vmem_addr = 0;
    d.rows = 64;
    d.row_bytes = 4096;
    d.hbm_stride = d.vmem_stride = 4096;
    const Bytes chunk = 64 * kKiB;
    const auto c = split_descriptor(d, chunk);
    // 64 x 4 KiB = 256 KiB dense -> 256 KiB / 64 KiB chunks.
    REQUIRE(c.size() == d.bytes() / chunk);
    for (std::size_t i = 0; i < c.size(); ++i) {
        CHECK(c[i].rows == 1);
        CHECK(c[i].bytes() == chunk);
        CHECK(c[i].hbm_addr == d.hbm_addr + i * chunk);
        CHECK(c[i].vmem_addr == d.vmem_addr + i * chunk);
    }
}

TEST_CASE("a strided descriptor keeps its strides and groups whole rows per chunk", "[dma]") {
    DmaDescriptor d;
    d.rows = 100;
    d.row_bytes = 1000;
    d.hbm_stride = 4096;
    d.vmem_stride = 1024;
    const Bytes chunk = 16 * kKiB;
    const auto c = split_descriptor(d, chunk);
    const std::int64_t per = static_cast<std::int64_t>(chunk / d.row_bytes);  // 16 rows
    REQUIRE(c.size() == static_cast<std::size_t>((d.rows + per - 1) / per));
    Bytes total = 0;
    for (std::size_t i = 0; i < c.size(); ++i) {
        CHECK(c[i].hbm_addr == i * static_cast<Bytes>(per) * d.hbm_stride);
        CHECK(c[i].vmem_addr == i * static_cast<Bytes>(per) * d.vmem_stride);
        CHECK(c[i].hbm_stride == d.hbm_stride);
        CHECK(c[i].bytes() <= chunk);
        total += c[i].bytes();
    }
    CHECK(total == d.bytes());
    CHECK(c.back().rows == d.rows - per * static_cast<std::int64_t>(c.size() - 1));
}

TEST_CASE("rows longer than a chunk are cut into pieces", "[dma]") {
    DmaDescriptor d;
    d.rows = 3;
    d.row_bytes = 100 * kKiB;
    d.hbm_stride = d.row_bytes * 2;
    d.vmem_stride = d.row_bytes;
    const auto c = split_descriptor(d, 64 * kKiB);
    REQUIRE(c.size() == 6);  // each row: 64 KiB + 36 KiB
    CHECK(c[1].bytes() == 36 * kKiB);
    CHECK(c[2].hbm_addr == d.hbm_stride);
}

TEST_CASE("burst count includes partial bursts at unaligned row ends", "[dma]") {
    DmaDescriptor d;
    d.hbm_addr = 16;  // half-way into a 32 B burst
    d.rows = 2;
    d.row_bytes = 64;
    d.hbm_stride = 128;
    d.vmem_stride = 64;
    // Each row covers [16, 80) -> bursts 0, 1, 2: three per row.
    CHECK(descriptor_bursts(d, 32) == 6);
    d.hbm_addr = 0;
    CHECK(descriptor_bursts(d, 32) == 4);
}

TEST_CASE("malformed descriptors are rejected", "[dma]") {
    DmaDescriptor d;
    d.rows = 0;
    d.row_bytes = 64;
    CHECK_THROWS_AS(split_descriptor(d, 1024), std::invalid_argument);
    d.rows = 2;
    d.hbm_stride = 32;
    d.vmem_stride = 64;
    CHECK_THROWS_AS(split_descriptor(d, 1024), std::invalid_argument);
}

TEST_CASE("dma_block builds the descriptor of a tile of a row-major HBM matrix", "[dma]") {
    // Tile rows 8..11, cols 32..95 of a 256 x 1024 bf16 matrix at 1 MiB, into VMEM at 4 KiB.
    const DmaDescriptor d =
        dma_block(DmaDescriptor::Dir::VmemToHbm, {kMiB, 1024, 8, 32, 4, 64, 2}, 4 * kKiB);
    CHECK(!d.to_vmem());
    CHECK(d.hbm_addr == kMiB + (8 * 1024 + 32) * 2);  // element (8, 32)
    CHECK(d.vmem_addr == 4 * kKiB);
    CHECK(d.rows == 4);
    CHECK(d.row_bytes == 64 * 2);
    CHECK(d.hbm_stride == 1024 * 2);      // a whole matrix row
    CHECK(d.vmem_stride == d.row_bytes);  // dense in VMEM
    CHECK(d.hbm_extent() == d.hbm_addr + 3 * 1024 * 2 + 64 * 2);
    // A flat byte range is one row of bytes.
    const DmaDescriptor f =
        dma_block(DmaDescriptor::Dir::HbmToVmem, {100, 300, 0, 0, 1, 300, 1}, 0);
    CHECK(f.to_vmem());
    CHECK(f.hbm_addr == 100);
    CHECK(f.bytes() == 300);
}
