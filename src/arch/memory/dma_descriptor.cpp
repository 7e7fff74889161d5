#include "tpusim/arch/memory/dma_descriptor.h"

#include <algorithm>
#include <stdexcept>

namespace tpusim {

std::vector<DmaDescriptor> split_descriptor(const DmaDescriptor& d, Bytes chunk_bytes) {
    std::vector<DmaDescriptor> out;
    split_descriptor(d, chunk_bytes, out);
    return out;
}

void split_descriptor(const DmaDescriptor& d, Bytes chunk_bytes, std::vector<DmaDescriptor>& out) {
    out.clear();
    if (d.rows < 1 || d.row_bytes == 0) {
        throw std::invalid_argument("DMA descriptor: expected at least one row of one byte");
    }
    if (d.rows > 1 && (d.hbm_stride < d.row_bytes || d.vmem_stride < d.row_bytes)) {
        throw std::invalid_argument("DMA descriptor: a stride is shorter than a row");
    }
    if (chunk_bytes == 0) throw std::invalid_argument("DMA: chunk_bytes must be positive");
    DmaDescriptor n = d;
    if (n.rows > 1 && n.hbm_stride == n.row_bytes && n.vmem_stride == n.row_bytes) {
        n.row_bytes *= static_cast<Bytes>(n.rows);  // dense on both sides: one long row
        n.rows = 1;
        n.hbm_stride = n.vmem_stride = n.row_bytes;
    }
    if (n.row_bytes >= chunk_bytes) {
        // Long rows: each row in pieces of chunk_bytes.
        for (std::int64_t r = 0; r < n.rows; ++r) {
            const Addr h = n.hbm_addr + static_cast<Addr>(r) * n.hbm_stride;
            const Addr v = n.vmem_addr + static_cast<Addr>(r) * n.vmem_stride;
            for (Bytes off = 0; off < n.row_bytes; off += chunk_bytes) {
                const Bytes len = std::min(chunk_bytes, n.row_bytes - off);
                out.push_back(DmaDescriptor{n.dir, h + off, v + off, 1, len, len, len});
            }
        }
        return;
    }
    const auto per_chunk = static_cast<std::int64_t>(chunk_bytes / n.row_bytes);
    for (std::int64_t r = 0; r < n.rows; r += per_chunk) {
        const std::int64_t rows = std::min(per_chunk, n.rows - r);
        out.push_back(DmaDescriptor{n.dir, n.hbm_addr + static_cast<Addr>(r) * n.hbm_stride,
                                    n.vmem_addr + static_cast<Addr>(r) * n.vmem_stride, rows,
                                    n.row_bytes, n.hbm_stride, n.vmem_stride});
    }
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
