// IciEventQueue (declared in ici_fabric.h): a radix heap of (tick, rank) keys with FIFO
// buckets, and a small heap for the keys below the last one.
#include <algorithm>
#include <functional>

#include "tpusim/arch/ici/ici_fabric.h"

namespace tpusim {

// Bucket 0 empty and no early event: the lowest non-empty bucket i is spread around its
// smallest key, which becomes the last key. Its events share the bits above i - 1 with that
// key, so they all land below i; buckets above i keep their place (their highest differing
// bit is the same for the new last key). Equal keys move together, in the order they came.
void IciEventQueue::settle() const {
    if (!early_.empty() || head_ < buckets_[0].size() || nonempty_ == 0) return;
    const unsigned i = 1u + static_cast<unsigned>(__builtin_ctzll(nonempty_));
    std::vector<IciEvent>& from = buckets_[i];
    std::uint64_t m = key(from.front());
    for (const IciEvent& e : from) m = std::min(m, key(e));
    last_ = m;
    for (const IciEvent& e : from) {
        const unsigned j = bucket_of(key(e));
        buckets_[j].push_back(e);
        if (j) nonempty_ |= std::uint64_t{1} << (j - 1);
    }
    from.clear();  // keeps its storage
    nonempty_ &= ~(std::uint64_t{1} << (i - 1));
}

void IciEventQueue::push_early(const IciEvent& e) {
    early_.push_back(e);
    std::push_heap(early_.begin(), early_.end(), std::greater<IciEvent>());
}

IciEvent IciEventQueue::pop_early() {
    std::pop_heap(early_.begin(), early_.end(), std::greater<IciEvent>());
    const IciEvent e = early_.back();
    early_.pop_back();
    return e;
}

}  // namespace tpusim
