#pragma once
// VMEM of one TensorCore: capacity accounting for the program's buffers and the bandwidth of
// its ports (DMA, vector load, vector store). Plain C++, no SystemC.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tpusim/common/types.h"
#include "tpusim/config/memory_config.h"

namespace tpusim {

// Hands out buffer offsets (first fit). A request that does not fit throws InputError
// ("program needs X MiB of VMEM, core has 16 MiB"): never a silent overflow.
class VmemAllocator {
 public:
    explicit VmemAllocator(const VmemConfig& cfg);

    // `what` names the buffer in the error message. `align` must be a power of two.
    Addr allocate(Bytes bytes, const std::string& what = "", Bytes align = 512);
    // Contract: `offset` was returned by allocate and not released since.
    void release(Addr offset);
    void reset();

    Bytes capacity_bytes() const { return capacity_; }
    Bytes used_bytes() const { return used_; }
    Bytes peak_bytes() const { return peak_; }
    // Throws InputError when [addr, addr + bytes) is not inside the VMEM.
    void check_range(Addr addr, Bytes bytes, const std::string& what) const;

 private:
    Bytes capacity_;
    Bytes used_ = 0, peak_ = 0;
    std::map<Addr, Bytes> live_;  // offset -> size
};

// A port that moves `bytes_per_cycle`. A transfer takes the earliest idle stretch of the
// port, from the cycle it asks for, that is long enough for it: the DMA engines plan a chunk's
// passage through the port when they issue it, a read for when its data will have landed, so
// a write planned later but ready earlier goes through first instead of queueing behind the
// read's booking (docs/hbm.md, "The VMEM port").
class VmemPort {
 public:
    explicit VmemPort(std::int64_t bytes_per_cycle)
        : bytes_per_cycle_(static_cast<Bytes>(bytes_per_cycle)) {}
    // Reserves the port for `bytes` from `now` on, in the first idle stretch that fits;
    // returns the cycle at which the transfer ends. `horizon`: no later call asks for a start
    // before it (the caller's current cycle), so bookings that end by then are forgotten.
    Cycle reserve(Cycle now, Bytes bytes, Cycle horizon);
    // The end of the last booking.
    Cycle free_at() const { return free_at_; }
    const std::uint64_t& busy_cycles() const { return busy_cycles_; }
    const std::uint64_t& bytes() const { return bytes_; }

 private:
    Bytes bytes_per_cycle_;
    Cycle free_at_ = 0;
    // Bookings [start, end), sorted by start, disjoint, touching ones merged; those before
    // head_ are forgotten (ended by the horizon) and dropped in batches. A sorted vector, not a
    // map: bookings come and go at the ends almost always, and a reserve allocates nothing.
    std::vector<std::pair<Cycle, Cycle>> booked_;
    std::size_t head_ = 0;
    std::uint64_t busy_cycles_ = 0, bytes_ = 0;
};

}  // namespace tpusim
