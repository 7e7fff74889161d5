#include "tpusim/program/dma_descriptor.h"

namespace tpusim {

DmaDescriptor dma_block(DmaDescriptor::Dir dir, const HbmBlock& block, Addr vmem_addr) {
    DmaDescriptor d;
    d.dir = dir;
    d.hbm_addr = block.base + static_cast<Bytes>((block.row0 * block.total_cols + block.col0) *
                                                 static_cast<std::int64_t>(block.elem_bytes));
    d.vmem_addr = vmem_addr;
    d.rows = block.rows;
    d.row_bytes = static_cast<Bytes>(block.cols) * block.elem_bytes;
    d.hbm_stride = static_cast<Bytes>(block.total_cols) * block.elem_bytes;
    d.vmem_stride = d.row_bytes;
    return d;
}

}  // namespace tpusim
