#pragma once
// The chunk workers of one DMA engine as the annotated plan sees them: each is free from a
// cycle on, and the next chunk goes to the one free first (DmaEngine::plan). Plain C++.
//
// A min-heap answers that in log(workers) per chunk. But a worker is handed back the cycle
// its chunk landed, and those cycles mostly come in order (always into VMEM: the chunks
// leave the VMEM port one after another): then the worker free first is the one that took a
// chunk longest ago, and a ring answers in O(1). The pool is a ring while that holds and
// turns into the heap, for the rest of the descriptor, the first time it does not. Which
// worker answers never matters (they are alike), only the cycle: both give the same cycles
// (tests/unit/dma_workers_test.cpp checks them against a heap).
#include <algorithm>
#include <cstddef>
#include <functional>
#include <vector>

#include "tpusim/common/types.h"

namespace tpusim {

class DmaWorkers {
 public:
    // `workers` (>= 1) workers, every one free from `first`.
    void reset(std::size_t workers, Cycle first) {
        free_.assign(workers, first);
        head_ = 0;
        last_ = first;
        heap_ = false;
    }

    // The cycle the worker free first is free from; contract: put() follows before the next
    // take().
    Cycle take() {
        if (!heap_) return free_[head_];
        std::pop_heap(free_.begin(), free_.end(), std::greater<Cycle>());
        return free_.back();
    }

    // That worker is busy until `landed`.
    void put(Cycle landed) {
        if (heap_) {
            free_.back() = landed;
            std::push_heap(free_.begin(), free_.end(), std::greater<Cycle>());
            return;
        }
        // Ring: free_ read from head_ on never decreases, so free_[head_] is the earliest.
        free_[head_] = landed;
        if (landed < last_) {
            std::make_heap(free_.begin(), free_.end(), std::greater<Cycle>());
            heap_ = true;
            return;
        }
        last_ = landed;
        if (++head_ == free_.size()) head_ = 0;
    }

 private:
    std::vector<Cycle> free_;
    std::size_t head_ = 0;
    Cycle last_ = 0;  // ring: the latest cycle handed back (the largest)
    bool heap_ = false;
};

}  // namespace tpusim
