#pragma once
// How a DMA engine cuts a descriptor (tpusim/program/dma_descriptor.h) into chunks, one HBM
// transaction each: descriptors of the same direction. Plain C++.
#include <cstdint>
#include <vector>

#include "tpusim/common/types.h"
#include "tpusim/program/dma_descriptor.h"

namespace tpusim {

// Splits `d` into chunks (descriptors of its direction) of at most `chunk_bytes`, in address
// order. Rows that are contiguous on both sides are merged first, so a dense block becomes few
// large chunks; a row longer than chunk_bytes is cut into pieces. Throws std::invalid_argument for
// rows < 1 or a stride shorter than a row.
std::vector<DmaDescriptor> split_descriptor(const DmaDescriptor& d, Bytes chunk_bytes);
// The same into `out` (cleared first), reusing its storage.
void split_descriptor(const DmaDescriptor& d, Bytes chunk_bytes, std::vector<DmaDescriptor>& out);

// HBM bursts the descriptor touches (a row that does not start or end on a burst boundary
// touches partial bursts, which cost a whole burst).
std::uint64_t descriptor_bursts(const DmaDescriptor& d, Bytes burst_bytes);

}  // namespace tpusim
