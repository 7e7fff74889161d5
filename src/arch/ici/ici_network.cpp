#include "tpusim/arch/ici/ici_network.h"

#include "tpusim/common/sim_time.h"

namespace tpusim {

IciNetwork::IciNetwork(sc_core::sc_module_name name, const Topology& topo, const IciConfig& cfg,
                       double clock_mhz, const ReductionCostModel& cost)
    : sc_core::sc_module(name), topo_(topo), cfg_(cfg), engine_(topo, cfg, clock_mhz, cost) {
    SC_HAS_PROCESS(IciNetwork);
    SC_THREAD(loop);
}

void IciNetwork::start(const CollectiveSpec& spec, ReplyTo done) {
    engine_.start(lower_collective(spec, topo_, cfg_), now_cycles(), done);
    wake_.notify(sc_core::SC_ZERO_TIME);
}

namespace {
// The calling thread's side of run(): wakes it when the collective has ended.
struct Waiter final : CompletionIf {
    Cycle at = 0;
    sc_core::sc_event finished;
    void complete(std::uint64_t /*tag*/, Cycle c) override {
        at = c;
        finished.notify(sc_core::SC_ZERO_TIME);
    }
};
}  // namespace

Cycle IciNetwork::run(const CollectiveSpec& spec) {
    Waiter w;
    start(spec, ReplyTo{&w, 0});
    sc_core::wait(w.finished);
    return w.at;
}

// Sleeps until the engine's next event (or new work), then runs the engine up to now.
void IciNetwork::loop() {
    for (;;) {
        engine_.run_until(now_cycles());
        const auto next = engine_.next_event_cycle();
        if (next) {
            sc_core::wait(cycles(*next - now_cycles()), wake_);
        } else {
            engine_.check_progress();
            sc_core::wait(wake_);
        }
    }
}

}  // namespace tpusim
