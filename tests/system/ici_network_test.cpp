// IciNetwork under SystemC: a data-parallel step on the 8 cores of a v3-8 board. Every core
// computes its backward pass in two halves; the gradient all-reduce of the first half starts
// as soon as the last core has it and overlaps the second half; the optimizer runs after the
// last all-reduce. The all-reduce must take exactly what the plain engine says, and overlap
// must shorten the step.
#include "tpusim/arch/ici/ici_network.h"

#include <catch2/catch.hpp>
#include <systemc>

#include "../completion_log.h"
#include "../test_util.h"
#include "tpusim/common/sim_time.h"
#include "tpusim/config/tpu_config.h"
#include "tpusim/stats/timeline.h"

using namespace tpusim;

namespace {

struct TrainingStep : sc_core::sc_module {
    SC_HAS_PROCESS(TrainingStep);
    TrainingStep(sc_core::sc_module_name n, IciNetwork& net, Cycle compute, Bytes grads)
        : sc_module(n), net_(net), compute_(compute), grads_(grads) {
        SC_THREAD(run);
    }
    void run() {
        // Backward pass, first half of the layers.
        wait(cycles(compute_ / 2));
        CollectiveSpec first;
        first.bytes = grads_ / 2;
        test::CompletionLog first_log;
        sc_core::sc_event first_ev;
        first_log.event = &first_ev;
        net_.start(first, first_log.to());
        first_start = now_cycles();
        // Second half overlaps the first all-reduce.
        wait(cycles(compute_ / 2));
        CollectiveSpec second = first;
        second.bytes = grads_ - grads_ / 2;
        second_start = now_cycles();
        second_done = net_.run(second);
        if (first_log.order.empty()) wait(first_ev);
        first_end = first_log.at.at(0);
        // Optimizer.
        wait(cycles(compute_ / 10));
        step_end = now_cycles();
    }
    IciNetwork& net_;
    Cycle compute_;
    Bytes grads_;
    Cycle first_start = 0, first_end = 0, second_start = 0, second_done = 0, step_end = 0;
};

}  // namespace

TEST_CASE("a data-parallel step overlaps the gradient all-reduce with the backward pass",
          "[ici][system]") {
    const TpuConfig cfg = load_config(test::config_path("tpu_v3_8.json"));
    const Topology topo(cfg.board, cfg.chip);
    const AnalyticalReductionCost cost(cfg.vpu, cfg.hbm, cfg.chip);
    IciNetwork net("ici", topo, cfg.ici, cfg.chip.clock_mhz, cost);
    Timeline timeline(cfg.chip.clock_mhz);
    net.engine().fabric().attach_timeline(&timeline);
    const Cycle compute = 2'000'000;  // ~2.1 ms of backward pass per core
    const Bytes grads = 64 * kMiB;    // f32 gradients
    TrainingStep step("step", net, compute, grads);
    sc_core::sc_start();
    net.engine().fabric().flush_timeline();

    // Reference: the same all-reduces on the plain engine, alone.
    auto alone = [&](Bytes b) {
        IciEngine e(topo, cfg.ici, cfg.chip.clock_mhz, cost);
        CollectiveSpec s;
        s.bytes = b;
        test::CompletionLog end;
        e.start(lower_collective(s, topo, cfg.ici), 0, end.to());
        e.run();
        return end.at.at(0);
    };
    const Cycle t1 = alone(grads / 2), t2 = alone(grads - grads / 2);
    REQUIRE(step.first_start == compute / 2);
    REQUIRE(step.second_start == compute);
    // The first all-reduce ran alone on the network (the second starts later, if at all while
    // it is in flight it shares links, so it can only be slower).
    REQUIRE(step.first_end >= step.first_start + t1);
    REQUIRE(step.second_done >= step.second_start + t2);
    if (step.first_end <= step.second_start) {
        REQUIRE(step.first_end == step.first_start + t1);
        REQUIRE(step.second_done == step.second_start + t2);
    }
    // Overlap: the step is shorter than compute + both all-reduces + optimizer in sequence.
    REQUIRE(step.step_end < compute + t1 + t2 + compute / 10);
    REQUIRE(step.step_end == std::max(step.first_end, step.second_done) + compute / 10);
    // The links' busy intervals are on the timeline.
    REQUIRE(timeline.events() > 0);
    REQUIRE(net.engine().fabric().stats().lookup("c0+x.bytes") > 0);
}
