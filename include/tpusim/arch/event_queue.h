#pragma once
// SystemC's sc_event_queue without its allocation per notification: sc_event_queue keeps a
// heap of `new sc_time` (one malloc and free per notify) and a method process that re-arms its
// event. On a pod, the DMA engines' and cores' completions notify millions of times a run, and
// those allocations were a few percent of the wall time (docs/ici.md, "Pod runs' allocations").
//
// The firing pattern is sc_event_queue's exactly (SystemC 2.3, sc_event_queue.cpp): the
// event fires once per notification, at its time; notifications due at one time fire in
// successive delta cycles; notify() arms the event only when the new time is earlier than
// every queued one. The one process that handles the queue calls fired() first whenever it
// runs: that is sc_event_queue::fire_event (a separate method process there, triggered by the
// same event in the same delta cycle; its order against the handler does not matter: either
// way the event ends up armed for the earliest time still queued).
#include <functional>
#include <queue>
#include <systemc>
#include <vector>

namespace tpusim {

class EventQueue {
 public:
    // The event a handler process is made sensitive to.
    const sc_core::sc_event& event() const { return event_; }
    // One firing `delay` from now (sc_event_queue::notify).
    void notify(const sc_core::sc_time& delay) {
        const sc_core::sc_time t = sc_core::sc_time_stamp() + delay;
        if (times_.empty() || t < times_.top()) event_.notify(delay);
        times_.push(t);
    }
    // The handler's first call each time it runs: consumes the firing of now and arms the
    // event for the next one (sc_event_queue::fire_event).
    void fired() {
        if (times_.empty()) return;
        times_.pop();
        if (!times_.empty()) event_.notify(times_.top() - sc_core::sc_time_stamp());
    }
    std::size_t pending() const { return times_.size(); }

 private:
    sc_core::sc_event event_;
    std::priority_queue<sc_core::sc_time, std::vector<sc_core::sc_time>,
                        std::greater<sc_core::sc_time>>
        times_;
};

}  // namespace tpusim
