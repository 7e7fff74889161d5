#pragma once
// How a target tells an initiator that a request completed, as TLM's backward path: a request
// carries where its completion goes (the initiator's CompletionIf and its tag), not a
// callback. Used behind the units (the ICI network and engine tell the collective rendezvous;
// DmaEngine::enqueue tells its caller); a unit tells its core with the richer UnitDone
// (tpusim/arch/core/unit_if.h).
#include <cstdint>
#include <systemc>

#include "tpusim/common/types.h"

namespace tpusim {

// The initiator's side of a request: told once when the request with `tag` completed.
class CompletionIf : public virtual sc_core::sc_interface {
 public:
    virtual void complete(std::uint64_t tag, Cycle at) = 0;
};

// Where a target sends a request's completion; `to == nullptr`: nobody is told.
struct ReplyTo {
    CompletionIf* to = nullptr;
    std::uint64_t tag = 0;
    explicit operator bool() const { return to != nullptr; }
    void operator()(Cycle at) const { to->complete(tag, at); }
};

}  // namespace tpusim
