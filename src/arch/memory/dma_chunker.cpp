#include "tpusim/arch/memory/dma_chunker.h"

#include <algorithm>
#include <numeric>
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

std::uint64_t strided_bursts(Addr addr, std::int64_t rows, Bytes row_bytes, Bytes stride,
                             Bytes burst_bytes) {
    const Bytes b = burst_bytes;
    if (rows <= 0 || row_bytes == 0 || b == 0) return 0;
    auto row_bursts = [&](std::int64_t r) {
        const Addr start = addr + static_cast<Addr>(r) * stride;
        return (start + row_bytes + b - 1) / b - start / b;
    };
    // A row's bursts depend only on where it starts within a burst, and the rows' offsets
    // repeat every b / gcd(stride mod b, b) rows (every row when the stride is whole bursts):
    // count one period, then the rows after the last whole one.
    const auto period = static_cast<std::int64_t>(b / std::gcd(stride % b, b));
    std::uint64_t per_period = 0;
    for (std::int64_t r = 0; r < std::min(rows, period); ++r) per_period += row_bursts(r);
    if (rows <= period) return per_period;
    std::uint64_t n = static_cast<std::uint64_t>(rows / period) * per_period;
    for (std::int64_t r = 0; r < rows % period; ++r) n += row_bursts(r);
    return n;
}

std::uint64_t descriptor_bursts(const DmaDescriptor& d, Bytes burst_bytes) {
    return strided_bursts(d.hbm_addr, d.rows, d.row_bytes, d.hbm_stride, burst_bytes);
}

}  // namespace tpusim
