#pragma once
// VMEM buffer allocation for the program layer. Buffers are handed out round a ring, so a
// new tile lands where the oldest one was; overwriting a region makes the writer wait for the
// region's last users (write-after-read). How many tiles are in flight therefore follows from
// the VMEM capacity. Buffers that must survive many later allocations (matmul accumulators,
// resident weight tiles) are pinned and skipped until unpinned.
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "tpusim/common/types.h"

namespace tpusim {

class VmemRing {
 public:
    explicit VmemRing(Bytes capacity, Bytes align = 512);

    struct Buffer {
        Addr addr;
        Bytes bytes;
    };
    // Allocates `bytes`; appends to `waits` (unsorted, possibly repeated) the instructions that
    // must complete before the region may be written. Returns nullopt when it cannot fit
    // (larger than VMEM, or blocked by pinned buffers).
    std::optional<Buffer> allocate(Bytes bytes, bool pinned, std::vector<std::uint32_t>& waits);
    // Records that instruction `instr` reads or writes the buffer holding `addr`.
    void use(Addr addr, std::uint32_t instr);
    void unpin(Addr addr);

    Bytes capacity() const { return capacity_; }
    Bytes pinned_bytes() const;

    // Totals over every allocation so far (aligned sizes): how far a stretch of the program
    // can move the head, whatever the head was (CoreLowering's loop reuse check).
    struct Totals {
        std::uint64_t allocations = 0, pinned_allocations = 0;
        Bytes bytes = 0, pinned_bytes = 0, largest = 0;
    };
    const Totals& totals() const { return totals_; }
    // Where the head is and the buffers lie (start, end, pinned): all that decides where the
    // next allocations go and which of them wait on one another.
    struct Layout {
        Addr head = 0;
        std::vector<std::pair<Addr, Addr>> regions;  // (start, end x 2 + pinned)
        bool operator==(const Layout& o) const { return head == o.head && regions == o.regions; }
    };
    Layout layout() const;
    // Where the next allocation starts looking.
    Addr head() const { return head_; }
    // Moves the head (loop reuse: to where the trips not lowered would have left it); the
    // buffers stay where they are.
    void set_head(Addr head) { head_ = head; }
    // Where the head would be after allocating `sizes` (aligned byte counts) from `head` when
    // nothing pinned lies in the way.
    Addr head_after(Addr head, const std::vector<Bytes>& sizes) const;
    // Appends every allocation's aligned size to `log` (nullptr: none).
    void log_sizes(std::vector<Bytes>* log) { log_ = log; }

 private:
    struct Region {
        Addr end;
        bool pinned;
        std::vector<std::uint32_t> users;
    };
    Bytes capacity_, align_;
    Addr head_ = 0;
    std::map<Addr, Region> regions_;  // by start address; never overlapping
    Totals totals_;
    std::vector<Bytes>* log_ = nullptr;
};

}  // namespace tpusim
