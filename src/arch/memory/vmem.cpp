#include "tpusim/arch/memory/vmem.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "tpusim/common/error.h"

namespace tpusim {

namespace {

std::string mib(Bytes b) {
    const double m = static_cast<double>(b) / static_cast<double>(kMiB);
    return m == static_cast<double>(static_cast<std::uint64_t>(m)) ? fmt::format("{:.0f}", m)
                                                                   : fmt::format("{:.2f}", m);
}

}  // namespace

VmemAllocator::VmemAllocator(const VmemConfig& cfg)
    : capacity_(static_cast<Bytes>(cfg.capacity_mib) * kMiB) {}

Addr VmemAllocator::allocate(Bytes bytes, const std::string& what, Bytes align) {
    if (align == 0 || !is_power_of_two(align)) align = 1;
    Addr candidate = 0;
    for (const auto& [off, size] : live_) {
        if (candidate + bytes <= off) break;
        candidate = round_up(std::max(candidate, off + size), align);
    }
    if (candidate + bytes > capacity_) {
        throw InputError(
            "", "vmem",
            fmt::format("program needs {} MiB of VMEM{}, core has {} MiB", mib(used_ + bytes),
                        what.empty() ? "" : fmt::format(" (buffer \"{}\")", what), mib(capacity_)));
    }
    live_[candidate] = bytes;
    used_ += bytes;
    peak_ = std::max(peak_, used_);
    return candidate;
}

void VmemAllocator::release(Addr offset) {
    const auto it = live_.find(offset);
    if (it == live_.end()) return;
    used_ -= it->second;
    live_.erase(it);
}

void VmemAllocator::reset() {
    live_.clear();
    used_ = 0;
}

void VmemAllocator::check_range(Addr addr, Bytes bytes, const std::string& what) const {
    if (addr + bytes > capacity_) {
        throw InputError("", "vmem",
                         fmt::format("{} reaches VMEM byte {:#x}, core has {} MiB", what,
                                     addr + bytes, mib(capacity_)));
    }
}

Cycle VmemPort::reserve(Cycle now, Bytes bytes, Cycle horizon) {
    while (head_ < booked_.size() && booked_[head_].second <= horizon) ++head_;
    if (head_ >= 64 && 2 * head_ >= booked_.size()) {
        booked_.erase(booked_.begin(), booked_.begin() + static_cast<std::ptrdiff_t>(head_));
        head_ = 0;
    }
    const Cycle busy = ceil_div(bytes, bytes_per_cycle_);
    busy_cycles_ += busy;
    bytes_ += bytes;
    if (busy == 0) return now;
    const auto first = booked_.begin() + static_cast<std::ptrdiff_t>(head_);
    const auto by_start = [](const std::pair<Cycle, Cycle>& b, Cycle c) { return b.first < c; };
    // The first stretch from `now` on that no booking overlaps.
    Cycle start = now;
    auto it =
        std::upper_bound(first, booked_.end(), start,
                         [](Cycle c, const std::pair<Cycle, Cycle>& b) { return c < b.first; });
    if (it != first) {
        const auto prev = std::prev(it);
        if (prev->second > start) start = prev->second;
    }
    while (it != booked_.end() && it->first < start + busy) {
        start = std::max(start, it->second);
        ++it;
    }
    const Cycle end = start + busy;
    // Book [start, end), merged with the bookings it touches so that a stream stays one entry.
    // No booking overlaps [start, end): the one before ends by start, the one after (if any)
    // starts at end or later.
    const auto next = std::lower_bound(first, booked_.end(), start, by_start);
    const bool join_prev = next != first && std::prev(next)->second == start;
    const bool join_next = next != booked_.end() && next->first == end;
    if (join_prev && join_next) {
        std::prev(next)->second = next->second;
        booked_.erase(next);
    } else if (join_prev) {
        std::prev(next)->second = end;
    } else if (join_next) {
        next->first = start;
    } else {
        booked_.emplace(next, start, end);
    }
    free_at_ = std::max(free_at_, end);
    return end;
}

}  // namespace tpusim
