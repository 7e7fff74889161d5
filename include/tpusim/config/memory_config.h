#pragma once
// Per-core memories: VMEM scratchpad and the DMA engines that fill it from HBM.
#include <cstdint>

#include "tpusim/config/visitor.h"

namespace tpusim {

// Vector memory: the TensorCore's on-chip scratchpad; HBM is reached only by DMA [TLs].
struct VmemConfig {
    std::int64_t capacity_mib = 16;
    std::int64_t banks = 16;
    std::int64_t load_bytes_per_cycle = 4096;  // one 8 x 128 x 32-bit vreg per cycle
    std::int64_t store_bytes_per_cycle = 4096;

    void visit(ConfigVisitor& v) {
        v.value("capacity_mib", capacity_mib, Limits::range(1, 1024), "MiB", "VMEM per core");
        v.value("banks", banks, Limits::pow2_max(1024), "banks", "VMEM banks");
        v.value("load_bytes_per_cycle", load_bytes_per_cycle, Limits::range(1, 1 << 20), "B/cycle",
                "vector load port width");
        v.value("store_bytes_per_cycle", store_bytes_per_cycle, Limits::range(1, 1 << 20),
                "B/cycle", "vector store port width");
    }
};

// DMA engines move 2-D strided blocks between HBM, VMEM and (later) ICI.
struct DmaConfig {
    std::int64_t engines = 4;
    // Descriptors one engine accepts (queued or running) before the sequencer stalls the
    // next DMA instruction: the core holds engines x descriptors_per_engine in flight.
    std::int64_t descriptors_per_engine = 4;
    // A descriptor is cut into chunks of at most chunk_bytes; each chunk is one transaction
    // to the HBM (one SystemC event at its completion), and an engine keeps
    // max_outstanding_chunks of them in flight.
    std::int64_t chunk_bytes = 64 * 1024;
    std::int64_t max_outstanding_chunks = 4;
    std::int64_t setup_latency_cycles = 32;
    std::int64_t vmem_bytes_per_cycle = 512;

    void visit(ConfigVisitor& v) {
        v.value("engines", engines, Limits::range(1, 64), "engines", "DMA engines per core");
        v.value("descriptors_per_engine", descriptors_per_engine, Limits::range(1, 1024),
                "descriptors",
                "descriptors one engine accepts before the sequencer stalls a DMA issue");
        v.value("chunk_bytes", chunk_bytes, Limits::range(32, 64 << 20), "B",
                "largest piece of a descriptor sent to the HBM as one transaction");
        v.value("max_outstanding_chunks", max_outstanding_chunks, Limits::range(1, 256), "chunks",
                "chunks in flight per engine");
        v.value("setup_latency_cycles", setup_latency_cycles, Limits::range(0, 1e6), "cycles",
                "descriptor decode before the first burst");
        v.value("vmem_bytes_per_cycle", vmem_bytes_per_cycle, Limits::range(1, 1 << 20), "B/cycle",
                "DMA write/read port into VMEM");
    }
};

}  // namespace tpusim
