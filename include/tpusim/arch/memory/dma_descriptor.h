#pragma once
// DMA descriptors: 2-D strided blocks between HBM and VMEM, and how an engine cuts them into
// chunks (one HBM transaction each). Plain C++.
#include <cstdint>
#include <vector>

#include "tpusim/common/types.h"
#include "tpusim/program/program.h"

namespace tpusim {

struct DmaDescriptor {
    enum class Dir { HbmToVmem, VmemToHbm };
    Dir dir = Dir::HbmToVmem;
    Addr hbm_addr = 0;
    Addr vmem_addr = 0;
    std::int64_t rows = 1;
    Bytes row_bytes = 0;
    Bytes hbm_stride = 0;   // between row starts in HBM
    Bytes vmem_stride = 0;  // between row starts in VMEM

    Bytes bytes() const { return static_cast<Bytes>(rows) * row_bytes; }
    // Last byte + 1 touched on each side.
    Bytes hbm_extent() const;
    Bytes vmem_extent() const;
};

// The descriptor of a core's DMA instruction (the one place that builds one from the
// program's instruction).
DmaDescriptor dma_descriptor(const DmaInstr& d);

// A piece of a descriptor: `rows` rows, same strides; at most chunk_bytes of data.
struct DmaChunk {
    Addr hbm_addr = 0;
    Addr vmem_addr = 0;
    std::int64_t rows = 1;
    Bytes row_bytes = 0;
    Bytes hbm_stride = 0;
    Bytes vmem_stride = 0;
    Bytes bytes() const { return static_cast<Bytes>(rows) * row_bytes; }
};

// Splits `d` into chunks of at most `chunk_bytes`, in address order. Rows that are contiguous
// on both sides are merged first, so a dense block becomes few large chunks; a row longer than
// chunk_bytes is cut into pieces. Throws std::invalid_argument for rows < 1 or a stride
// shorter than a row.
std::vector<DmaChunk> split_descriptor(const DmaDescriptor& d, Bytes chunk_bytes);

// HBM bursts the descriptor touches (a row that does not start or end on a burst boundary
// touches partial bursts, which cost a whole burst).
std::uint64_t descriptor_bursts(const DmaDescriptor& d, Bytes burst_bytes);

}  // namespace tpusim
