#include "tpusim/program/vmem_ring.h"

#include <algorithm>

namespace tpusim {

VmemRing::VmemRing(Bytes capacity, Bytes align) : capacity_(capacity), align_(align) {}

std::optional<VmemRing::Buffer> VmemRing::allocate(Bytes bytes, bool pinned,
                                                   std::vector<std::uint32_t>& waits) {
    bytes = round_up(std::max<Bytes>(bytes, 1), align_);
    if (bytes > capacity_) return std::nullopt;
    if (log_) log_->push_back(bytes);
    ++totals_.allocations;
    totals_.bytes += bytes;
    totals_.largest = std::max(totals_.largest, bytes);
    if (pinned) {
        ++totals_.pinned_allocations;
        totals_.pinned_bytes += bytes;
    }
    // At most two passes round the ring: past that, pinned buffers leave no room.
    Bytes travelled = 0;
    while (travelled <= 2 * capacity_) {
        if (head_ + bytes > capacity_) {
            travelled += capacity_ - head_;
            head_ = 0;
        }
        const Addr begin = head_, end = head_ + bytes;
        // First region that may overlap [begin, end).
        auto it = regions_.upper_bound(begin);
        if (it != regions_.begin()) {
            auto prev = std::prev(it);
            if (prev->second.end > begin) it = prev;
        }
        bool blocked = false;
        for (auto j = it; j != regions_.end() && j->first < end; ++j) {
            if (j->second.pinned) {
                travelled += j->second.end - head_;
                head_ = j->second.end;
                blocked = true;
                break;
            }
        }
        if (blocked) continue;
        while (it != regions_.end() && it->first < end) {
            waits.insert(waits.end(), it->second.users.begin(), it->second.users.end());
            it = regions_.erase(it);
        }
        regions_.emplace(begin, Region{end, pinned, {}});
        head_ = end;
        // Not sorted here: `waits` often starts as a copy of a producer's every write-back,
        // and sorting it on each allocation cost more than the rest of lowering. The
        // instruction that takes these waits drops the covered ones and sorts the rest
        // (LoweringContext::emit).
        return Buffer{begin, bytes};
    }
    return std::nullopt;
}

void VmemRing::use(Addr addr, std::uint32_t instr) {
    // The region holding addr: an instruction may use part of a buffer (a multi-output
    // vector op writes each output stream from its own part of one buffer).
    auto it = regions_.upper_bound(addr);
    if (it == regions_.begin()) return;
    --it;
    if (it->second.end <= addr) return;
    auto& u = it->second.users;
    // Later users of one buffer supersede earlier ones only if they depend on them; keep all,
    // but bounded: a buffer has a handful of users (room for a few at once: one allocation,
    // not one per doubling).
    if (u.capacity() == 0) u.reserve(4);
    u.push_back(instr);
}

void VmemRing::unpin(Addr addr) {
    auto it = regions_.find(addr);
    if (it != regions_.end()) it->second.pinned = false;
}

Bytes VmemRing::pinned_bytes() const {
    Bytes b = 0;
    for (const auto& [addr, r] : regions_) {
        if (r.pinned) b += r.end - addr;
    }
    return b;
}

VmemRing::Layout VmemRing::layout() const {
    Layout l;
    l.head = head_;
    l.regions.reserve(regions_.size());
    for (const auto& [addr, r] : regions_)
        l.regions.emplace_back(addr, r.end * 2 + (r.pinned ? 1 : 0));
    return l;
}

Addr VmemRing::head_after(Addr head, const std::vector<Bytes>& sizes) const {
    for (const Bytes b : sizes) {
        if (head + b > capacity_) head = 0;  // as allocate() wraps
        head += b;
    }
    return head;
}

}  // namespace tpusim
