#pragma once
// A test's CompletionIf: records every completion it is told, in order, by tag.
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "tpusim/arch/completion.h"

namespace tpusim::test {

class CompletionLog final : public CompletionIf {
 public:
    ReplyTo to(std::uint64_t tag = 0) { return ReplyTo{this, tag}; }
    void complete(std::uint64_t tag, Cycle at) override {
        order.emplace_back(tag, at);
        this->at[tag] = at;
        if (event) event->notify(sc_core::SC_ZERO_TIME);
    }
    std::vector<std::pair<std::uint64_t, Cycle>> order;
    std::map<std::uint64_t, Cycle> at;   // the last completion of each tag
    sc_core::sc_event* event = nullptr;  // notified on every completion when set
};

}  // namespace tpusim::test
