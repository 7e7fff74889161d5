#include "tpusim/arch/memory/dma_descriptor.h"

#include <algorithm>
#include <stdexcept>

namespace tpusim {

std::vector<DmaDescriptor> split_descriptor(const DmaDescriptor& d, Bytes chunk_bytes) {
    std::vector<DmaDescriptor> out;
    split_descriptor(d, chunk_bytes, out);
    return out;
}

DmaChunker::DmaChunker(const DmaDescriptor& d, Bytes chunk_bytes)
    : n_(d), chunk_bytes_(chunk_bytes) {
    if (d.rows < 1 || d.row_bytes == 0) {
        throw std::invalid_argument("DMA descriptor: expected at least one row of one byte");
    }
    if (d.rows > 1 && (d.hbm_stride < d.row_bytes || d.vmem_stride < d.row_bytes)) {
        throw std::invalid_argument("DMA descriptor: a stride is shorter than a row");
    }
    if (chunk_bytes == 0) throw std::invalid_argument("DMA: chunk_bytes must be positive");
    if (n_.rows > 1 && n_.hbm_stride == n_.row_bytes && n_.vmem_stride == n_.row_bytes) {
        n_.row_bytes *= static_cast<Bytes>(n_.rows);  // dense on both sides: one long row
        n_.rows = 1;
        n_.hbm_stride = n_.vmem_stride = n_.row_bytes;
    }
    // Long rows: each row in pieces of chunk_bytes; short ones: whole rows per chunk.
    long_rows_ = n_.row_bytes >= chunk_bytes;
    if (!long_rows_) rows_per_chunk_ = static_cast<std::int64_t>(chunk_bytes / n_.row_bytes);
}

void split_descriptor(const DmaDescriptor& d, Bytes chunk_bytes, std::vector<DmaDescriptor>& out) {
    out.clear();
    DmaChunker chunks(d, chunk_bytes);
    DmaDescriptor c;
    while (chunks.next(c)) out.push_back(c);
}

std::uint64_t descriptor_bursts(const DmaDescriptor& d, Bytes burst_bytes) {
    std::uint64_t n = 0;
    for (std::int64_t r = 0; r < d.rows; ++r) {
        const Addr start = d.hbm_addr + static_cast<Addr>(r) * d.hbm_stride;
        n += ceil_div(start + d.row_bytes, burst_bytes) - start / burst_bytes;
    }
    return n;
}

}  // namespace tpusim
