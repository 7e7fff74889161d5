// IciEventQueue (declared in ici_fabric.h): FIFO buckets per (tick, rank) behind a heap of
// their keys.
#include "tpusim/arch/ici/ici_fabric.h"

namespace tpusim {

IciEventQueue::Bucket& IciEventQueue::bucket(std::uint64_t key) {
    if (last_ && last_key_ == key) return *last_;
    auto [it, inserted] = buckets_.try_emplace(key);
    if (inserted) {
        keys_.push(key);
        if (!spare_.empty()) {
            it->second.events = std::move(spare_.back());
            spare_.pop_back();
        }
        if (keys_.top() == key) front_ = &it->second;  // the new earliest key
    }
    last_ = &it->second;
    last_key_ = key;
    return *last_;
}

void IciEventQueue::retire_front() {
    const auto it = buckets_.find(keys_.top());
    keys_.pop();
    it->second.events.clear();
    spare_.push_back(std::move(it->second.events));
    if (last_ == &it->second) last_ = nullptr;
    buckets_.erase(it);
    front_ = keys_.empty() ? nullptr : &buckets_.find(keys_.top())->second;
}

}  // namespace tpusim
