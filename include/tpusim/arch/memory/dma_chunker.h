#pragma once
// How a DMA engine cuts a descriptor (tpusim/program/dma_descriptor.h) into chunks, one HBM
// transaction each: descriptors of the same direction. Plain C++.
#include <cstdint>
#include <vector>

#include "tpusim/common/types.h"
#include "tpusim/program/dma_descriptor.h"

namespace tpusim {

// The chunks of split_descriptor one at a time, in the same order, without storing them: the
// DMA engines plan millions of chunks per training step (split_descriptor is built on it).
class DmaChunker {
 public:
    // Throws std::invalid_argument as split_descriptor does.
    DmaChunker(const DmaDescriptor& d, Bytes chunk_bytes);
    // The next chunk into `out`; false (and `out` untouched) once every chunk was handed out.
    bool next(DmaDescriptor& out) {
        if (row_ >= n_.rows) return false;
        if (long_rows_) {
            const Addr h = n_.hbm_addr + static_cast<Addr>(row_) * n_.hbm_stride + off_;
            const Addr v = n_.vmem_addr + static_cast<Addr>(row_) * n_.vmem_stride + off_;
            const Bytes len =
                chunk_bytes_ < n_.row_bytes - off_ ? chunk_bytes_ : n_.row_bytes - off_;
            out = DmaDescriptor{n_.dir, h, v, 1, len, len, len};
            off_ += chunk_bytes_;
            if (off_ >= n_.row_bytes) {
                off_ = 0;
                ++row_;
            }
            return true;
        }
        const std::int64_t rows =
            rows_per_chunk_ < n_.rows - row_ ? rows_per_chunk_ : n_.rows - row_;
        out = DmaDescriptor{n_.dir,
                            n_.hbm_addr + static_cast<Addr>(row_) * n_.hbm_stride,
                            n_.vmem_addr + static_cast<Addr>(row_) * n_.vmem_stride,
                            rows,
                            n_.row_bytes,
                            n_.hbm_stride,
                            n_.vmem_stride};
        row_ += rows_per_chunk_;
        return true;
    }

 private:
    DmaDescriptor n_;  // `d` with rows dense on both sides merged into one
    Bytes chunk_bytes_;
    bool long_rows_;  // rows of chunk_bytes or more: each cut into pieces
    std::int64_t rows_per_chunk_ = 1;
    std::int64_t row_ = 0;  // the next chunk starts at this row ...
    Bytes off_ = 0;         // ... and this byte of it
};

// Splits `d` into chunks (descriptors of its direction) of at most `chunk_bytes`, in address
// order. Rows that are contiguous on both sides are merged first, so a dense block becomes few
// large chunks; a row longer than chunk_bytes is cut into pieces. Throws std::invalid_argument for
// rows < 1 or a stride shorter than a row.
std::vector<DmaDescriptor> split_descriptor(const DmaDescriptor& d, Bytes chunk_bytes);
// The same into `out` (cleared first), reusing its storage.
void split_descriptor(const DmaDescriptor& d, Bytes chunk_bytes, std::vector<DmaDescriptor>& out);

// HBM bursts that `rows` rows of `row_bytes`, `stride` apart from `addr`, touch (a row that
// does not start or end on a burst boundary touches partial bursts, which cost a whole burst).
// O(burst_bytes) rows of work whatever `rows` is.
std::uint64_t strided_bursts(Addr addr, std::int64_t rows, Bytes row_bytes, Bytes stride,
                             Bytes burst_bytes);
// The bursts the descriptor touches on the HBM side (strided_bursts).
std::uint64_t descriptor_bursts(const DmaDescriptor& d, Bytes burst_bytes);

}  // namespace tpusim
