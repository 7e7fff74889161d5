#pragma once
// Sequencer (the TensorCore's scalar unit): issues the core's instruction stream in order,
// one VLIW bundle per cycle [HC20]: 2 scalar, 2 vector ALU, vector load, vector store,
// 2 matrix push/pop, misc (DMA, sync) slots. At the program layer's granularity an
// instruction is a DMA descriptor, a block of MXU passes, a vector loop or a collective; a
// bundle holds at most one instruction per slot class.
#include <cstdint>

#include "tpusim/config/visitor.h"

namespace tpusim {

struct SequencerConfig {
    std::int64_t unit_queue_depth = 4;     // instructions waiting per unit
    std::int64_t dma_slots = 1;            // DMA / misc instructions per bundle
    std::int64_t matrix_slots = 2;         // matrix push/pop slots per bundle
    std::int64_t vector_slots = 1;         // vector loops started per bundle
    std::int64_t sync_latency_cycles = 2;  // a satisfied sync-flag wait to issue

    void visit(ConfigVisitor& v) {
        v.value("unit_queue_depth", unit_queue_depth, Limits::range(1, 1024), "instructions",
                "instructions a unit queues ahead of execution");
        v.value("dma_slots", dma_slots, Limits::range(1, 16), "per bundle",
                "DMA/misc instructions issued per cycle");
        v.value("matrix_slots", matrix_slots, Limits::range(1, 16), "per bundle",
                "matrix instructions issued per cycle");
        v.value("vector_slots", vector_slots, Limits::range(1, 16), "per bundle",
                "vector loops started per cycle");
        v.value("sync_latency_cycles", sync_latency_cycles, Limits::range(0, 1 << 16), "cycles",
                "from a sync flag being set to the waiting instruction issuing");
    }
};

}  // namespace tpusim
