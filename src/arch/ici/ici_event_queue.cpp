// IciEventQueue (declared in ici_fabric.h): buckets per tick, a FIFO per rank, behind a heap
// of ticks.
#include "tpusim/arch/ici/ici_fabric.h"

namespace tpusim {

IciEventQueue::Bucket& IciEventQueue::bucket(Tick when) {
    if (last_ && last_tick_ == when) return *last_;
    auto [it, inserted] = buckets_.try_emplace(when);
    if (inserted) {
        ticks_.push(when);
        if (!spare_.empty()) {
            it->second.fifo = std::move(spare_.back());
            spare_.pop_back();
        }
        if (ticks_.top() == when) front_ = &it->second;  // the new earliest tick
    }
    last_ = &it->second;
    last_tick_ = when;
    return *last_;
}

void IciEventQueue::retire_front() {
    const auto it = buckets_.find(ticks_.top());
    ticks_.pop();
    for (auto& f : it->second.fifo) f.clear();
    spare_.push_back(std::move(it->second.fifo));
    if (last_ == &it->second) last_ = nullptr;
    buckets_.erase(it);
    front_ = ticks_.empty() ? nullptr : &buckets_.find(ticks_.top())->second;
}

}  // namespace tpusim
