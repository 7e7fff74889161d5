// DmaWorkers (the annotated DMA plan's chunk workers, a ring while landings come in order)
// against the min-heap it stands for; DmaChunker against the split it replaced.
#include "tpusim/arch/memory/dma_workers.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <random>
#include <vector>

#include "tpusim/arch/memory/dma_chunker.h"

using namespace tpusim;

namespace {

// The reference: every worker's free cycle in a min-heap; the next chunk pops the earliest.
struct HeapWorkers {
    std::vector<Cycle> free;
    void reset(std::size_t n, Cycle first) { free.assign(n, first); }
    Cycle take() {
        std::pop_heap(free.begin(), free.end(), std::greater<Cycle>());
        return free.back();
    }
    void put(Cycle landed) {
        free.back() = landed;
        std::push_heap(free.begin(), free.end(), std::greater<Cycle>());
    }
};

// Drives both with chunks that take `busy(rng)` cycles from their issue; `order_break`: the
// chance that a chunk lands before the one handed back last (as chunks out of VMEM to two
// HBM halves may), which turns the ring into the heap.
void compare(std::mt19937_64& rng, double order_break) {
    std::uniform_int_distribution<std::size_t> workers(1, 9);
    std::uniform_int_distribution<int> chunks(1, 60);
    std::uniform_int_distribution<Cycle> busy(1, 5000), first(0, 100000);
    std::bernoulli_distribution early(order_break);
    DmaWorkers ring;
    HeapWorkers heap;
    for (int descriptor = 0; descriptor < 2000; ++descriptor) {
        const std::size_t w = workers(rng);
        const Cycle f = first(rng);
        ring.reset(w, f);
        heap.reset(w, f);
        Cycle last = f;
        for (int c = chunks(rng); c > 0; --c) {
            const Cycle issue = heap.take();
            REQUIRE(ring.take() == issue);
            // In order: no earlier than the last landing; out of order: anywhere after issue.
            Cycle landed = std::max(issue, last) + busy(rng);
            if (early(rng)) landed = issue + busy(rng) % 7;
            last = std::max(last, landed);
            ring.put(landed);
            heap.put(landed);
        }
    }
}

// split_descriptor as it was before DmaChunker, the reference for its chunk sequence.
std::vector<DmaDescriptor> reference_split(const DmaDescriptor& d, Bytes chunk_bytes) {
    std::vector<DmaDescriptor> out;
    DmaDescriptor n = d;
    if (n.rows > 1 && n.hbm_stride == n.row_bytes && n.vmem_stride == n.row_bytes) {
        n.row_bytes *= static_cast<Bytes>(n.rows);
        n.rows = 1;
        n.hbm_stride = n.vmem_stride = n.row_bytes;
    }
    if (n.row_bytes >= chunk_bytes) {
        for (std::int64_t r = 0; r < n.rows; ++r) {
            const Addr h = n.hbm_addr + static_cast<Addr>(r) * n.hbm_stride;
            const Addr v = n.vmem_addr + static_cast<Addr>(r) * n.vmem_stride;
            for (Bytes off = 0; off < n.row_bytes; off += chunk_bytes) {
                const Bytes len = std::min(chunk_bytes, n.row_bytes - off);
                out.push_back(DmaDescriptor{n.dir, h + off, v + off, 1, len, len, len});
            }
        }
        return out;
    }
    const auto per_chunk = static_cast<std::int64_t>(chunk_bytes / n.row_bytes);
    for (std::int64_t r = 0; r < n.rows; r += per_chunk) {
        const std::int64_t rows = std::min(per_chunk, n.rows - r);
        out.push_back(DmaDescriptor{n.dir, n.hbm_addr + static_cast<Addr>(r) * n.hbm_stride,
                                    n.vmem_addr + static_cast<Addr>(r) * n.vmem_stride, rows,
                                    n.row_bytes, n.hbm_stride, n.vmem_stride});
    }
    return out;
}

}  // namespace

TEST_CASE("DMA workers: the ring gives the heap's cycles while landings come in order", "[dma]") {
    std::mt19937_64 rng(16);
    compare(rng, 0.0);
}

TEST_CASE("DMA workers: out-of-order landings turn the ring into the heap, same cycles", "[dma]") {
    std::mt19937_64 rng(17);
    compare(rng, 0.05);
    compare(rng, 0.5);
}

TEST_CASE("DMA chunker: the same chunks as the split it replaced, on random descriptors", "[dma]") {
    std::mt19937_64 rng(18);
    std::uniform_int_distribution<std::int64_t> rows(1, 300);
    std::uniform_int_distribution<Bytes> row_bytes(1, 200000), pad(0, 3000), chunk(256, 140000);
    std::bernoulli_distribution dense(0.3), to_vmem(0.5);
    for (int i = 0; i < 1000; ++i) {
        DmaDescriptor d;
        d.dir = to_vmem(rng) ? DmaDescriptor::Dir::HbmToVmem : DmaDescriptor::Dir::VmemToHbm;
        d.hbm_addr = pad(rng) * 64;
        d.vmem_addr = pad(rng) * 32;
        d.rows = rows(rng);
        d.row_bytes = row_bytes(rng) >> (i % 8);
        if (d.row_bytes == 0) d.row_bytes = 1;
        d.hbm_stride = d.row_bytes + (dense(rng) ? 0 : pad(rng));
        d.vmem_stride = d.row_bytes + (dense(rng) ? 0 : pad(rng));
        const Bytes c = chunk(rng);
        const auto want = reference_split(d, c);
        std::vector<DmaDescriptor> got;
        DmaChunker chunker(d, c);
        DmaDescriptor piece;
        while (chunker.next(piece)) got.push_back(piece);
        REQUIRE(got.size() == want.size());
        for (std::size_t k = 0; k < got.size(); ++k) {
            CHECK(got[k].dir == want[k].dir);
            CHECK(got[k].hbm_addr == want[k].hbm_addr);
            CHECK(got[k].vmem_addr == want[k].vmem_addr);
            CHECK(got[k].rows == want[k].rows);
            CHECK(got[k].row_bytes == want[k].row_bytes);
            CHECK(got[k].hbm_stride == want[k].hbm_stride);
            CHECK(got[k].vmem_stride == want[k].vmem_stride);
        }
    }
}
