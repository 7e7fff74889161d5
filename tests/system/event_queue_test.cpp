// EventQueue (tpusim/arch/event_queue.h) against SystemC's sc_event_queue: fed the same
// notifications in the same process, their handlers run at the same times and delta cycles,
// once per notification, including notifications made from inside a handler.
#include "tpusim/arch/event_queue.h"

#include <catch2/catch.hpp>
#include <functional>
#include <systemc>
#include <utility>
#include <vector>

using namespace tpusim;
using sc_core::SC_NS;
using sc_core::sc_time;

namespace {

using HandlerRuns = std::vector<std::pair<sc_time, sc_dt::uint64>>;  // (time, delta count)

// Handler runs at which a handler notifies its own queue again (as a DMA completion that
// wakes a core, which enqueues the next descriptor): (run index, delay in ns).
const std::vector<std::pair<std::size_t, int>> kNotifiedFromHandler = {
    {0, 0}, {2, 3}, {3, 0}, {5, 1}};

struct QueuePair : sc_core::sc_module {
    sc_core::sc_event_queue reference{"reference"};
    EventQueue fast;
    HandlerRuns ref_runs, fast_runs;
    std::size_t notified = 0;

    SC_HAS_PROCESS(QueuePair);
    explicit QueuePair(sc_core::sc_module_name n) : sc_module(n) {
        SC_THREAD(drive);
        SC_METHOD(on_reference);
        sensitive << reference;
        dont_initialize();
        SC_METHOD(on_fast);
        sensitive << fast.event();
        dont_initialize();
    }
    void both(int ns) {
        reference.notify(sc_time(ns, SC_NS));
        fast.notify(sc_time(ns, SC_NS));
        ++notified;
    }
    static void again(const HandlerRuns& runs, const std::function<void(int)>& notify) {
        for (const auto& [run, ns] : kNotifiedFromHandler)
            if (run + 1 == runs.size()) notify(ns);
    }
    void on_reference() {
        ref_runs.emplace_back(sc_core::sc_time_stamp(), sc_core::sc_delta_count());
        again(ref_runs, [this](int ns) { reference.notify(sc_time(ns, SC_NS)); });
    }
    void on_fast() {
        fast.fired();
        fast_runs.emplace_back(sc_core::sc_time_stamp(), sc_core::sc_delta_count());
        again(fast_runs, [this](int ns) { fast.notify(sc_time(ns, SC_NS)); });
    }
    void drive() {
        // Several at one time, zero delays, a later one before an earlier one, equal times
        // from different cycles, and notifications while others are pending.
        both(5);
        both(5);
        both(2);
        both(0);
        both(0);
        sc_core::wait(1, SC_NS);
        both(3);  // t = 4
        both(1);  // t = 2: equals a pending one
        sc_core::wait(sc_core::SC_ZERO_TIME);
        both(0);
        sc_core::wait(2, SC_NS);  // t = 3: the ones at 2 have fired
        both(0);
        both(2);  // t = 5
        sc_core::wait(20, SC_NS);
        both(7);
        both(7);
        both(6);
    }
};

}  // namespace

TEST_CASE("EventQueue fires as sc_event_queue does", "[event_queue]") {
    QueuePair rig("queues");
    sc_core::sc_start();
    const std::size_t from_handler = kNotifiedFromHandler.size();
    CHECK(rig.ref_runs.size() == rig.notified + from_handler);  // once per notification
    CHECK(rig.fast_runs == rig.ref_runs);
    CHECK(rig.fast.pending() == 0);
}
