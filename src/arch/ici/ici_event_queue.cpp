// IciEventQueue (declared in ici_fabric.h): FIFO buckets per (tick, rank) behind a heap of
// their keys.
#include "tpusim/arch/ici/ici_fabric.h"

namespace tpusim {

std::size_t IciEventQueue::find_slot(std::uint64_t key) const {
    const std::size_t mask = table_.size() - 1;
    std::size_t i = home(key);
    while (table_[i].key != key || table_[i].bucket == kNoBucket) i = (i + 1) & mask;
    return i;
}

void IciEventQueue::grow() {
    std::vector<Slot> old(table_.empty() ? 0 : table_.size());
    old.swap(table_);
    table_.assign(old.empty() ? 64 : 2 * old.size(), Slot{});
    shift_ = 64;
    for (std::size_t n = table_.size(); n > 1; n >>= 1) --shift_;
    const std::size_t mask = table_.size() - 1;
    for (const Slot& s : old) {
        if (s.bucket == kNoBucket) continue;
        std::size_t i = home(s.key);
        while (table_[i].bucket != kNoBucket) i = (i + 1) & mask;
        table_[i] = s;
    }
}

// Linear probing's deletion without tombstones: each later slot of the run moves back into
// the hole unless its home lies cyclically in (hole, slot].
void IciEventQueue::erase_slot(std::size_t i) {
    const std::size_t mask = table_.size() - 1;
    for (std::size_t j = (i + 1) & mask; table_[j].bucket != kNoBucket; j = (j + 1) & mask) {
        const std::size_t h = home(table_[j].key);
        const bool stays = i <= j ? (h > i && h <= j) : (h > i || h <= j);
        if (stays) continue;
        table_[i] = table_[j];
        i = j;
    }
    table_[i].bucket = kNoBucket;
    --live_;
}

IciEventQueue::Bucket& IciEventQueue::bucket(std::uint64_t key) {
    if (last_ && last_key_ == key) return *last_;
    if (2 * (live_ + 1) > table_.size()) grow();
    const std::size_t mask = table_.size() - 1;
    std::size_t i = home(key);
    for (; table_[i].bucket != kNoBucket; i = (i + 1) & mask) {
        if (table_[i].key == key) {
            last_ = &pool_[table_[i].bucket];
            last_key_ = key;
            return *last_;
        }
    }
    std::uint32_t b;
    if (!free_.empty()) {
        b = free_.back();
        free_.pop_back();
    } else {
        b = static_cast<std::uint32_t>(pool_.size());
        pool_.emplace_back();
    }
    table_[i] = Slot{key, b};
    ++live_;
    keys_.push({key, b});
    Bucket& bk = pool_[b];
    if (keys_.top().first == key) front_ = &bk;  // the new earliest key
    last_ = &bk;
    last_key_ = key;
    return bk;
}

void IciEventQueue::retire_front() {
    const auto [key, b] = keys_.top();
    keys_.pop();
    Bucket& bk = pool_[b];
    bk.events.clear();  // keeps its storage for the bucket's next key
    bk.head = 0;
    free_.push_back(b);
    erase_slot(find_slot(key));
    if (last_ == &bk) last_ = nullptr;
    front_ = keys_.empty() ? nullptr : &pool_[keys_.top().second];
}

}  // namespace tpusim
