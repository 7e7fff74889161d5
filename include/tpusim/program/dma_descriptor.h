#pragma once
// The one DMA descriptor type: a 2-D strided block between HBM and VMEM. The program layer
// builds it (dma_block, the one builder), a core's DMA instruction holds it, the DMA engines
// cut it into pieces of the same type (split_descriptor, arch/memory/dma_chunker.h) and
// the HBM models time it.
#include <cstdint>

#include "tpusim/common/types.h"

namespace tpusim {

struct DmaDescriptor {
    enum class Dir : std::uint8_t { HbmToVmem, VmemToHbm };
    Dir dir = Dir::HbmToVmem;
    Addr hbm_addr = 0;
    Addr vmem_addr = 0;
    std::int64_t rows = 1;
    Bytes row_bytes = 0;
    Bytes hbm_stride = 0;   // between row starts in HBM
    Bytes vmem_stride = 0;  // between row starts in VMEM

    bool to_vmem() const { return dir == Dir::HbmToVmem; }
    Bytes bytes() const { return static_cast<Bytes>(rows) * row_bytes; }
    // Last byte + 1 touched on each side.
    Bytes hbm_extent() const {
        return rows <= 0 ? hbm_addr
                         : hbm_addr + static_cast<Bytes>(rows - 1) * hbm_stride + row_bytes;
    }
    Bytes vmem_extent() const {
        return rows <= 0 ? vmem_addr
                         : vmem_addr + static_cast<Bytes>(rows - 1) * vmem_stride + row_bytes;
    }
};

// A block of a row-major matrix in HBM: `rows` x `cols` elements of `elem_bytes` from
// (row0, col0) of the matrix at `base` that has `total_cols` columns. A flat byte range is
// the block {base, n, 0, 0, 1, n, 1}.
struct HbmBlock {
    Addr base = 0;
    std::int64_t total_cols = 0;
    std::int64_t row0 = 0, col0 = 0;
    std::int64_t rows = 1, cols = 0;
    Bytes elem_bytes = 1;
};

// The descriptor that moves `block` to or from the dense VMEM buffer at `vmem_addr` (rows
// packed one after the other in VMEM).
DmaDescriptor dma_block(DmaDescriptor::Dir dir, const HbmBlock& block, Addr vmem_addr);

}  // namespace tpusim
