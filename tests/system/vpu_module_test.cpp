// The Vpu sc_module: programs handed over by a sequencer-like thread finish at the cycle the
// plain VpuTiming model gives (1 SystemC ns = 1 core cycle).
#include "arch/vpu/vpu_module.h"

#include <catch2/catch.hpp>
#include <systemc>

#include "tpusim/arch/vpu/vector_cost.h"
#include "tpusim/common/sim_time.h"
#include "tpusim/program/vector_lowering.h"

using namespace tpusim;

namespace {

struct Issuer : sc_core::sc_module {
    Vpu* vpu = nullptr;
    VectorProgram first, second;
    Cycle gap = 0;
    Cycle first_done = 0, second_done = 0;
    sc_core::sc_event done1, done2;

    SC_HAS_PROCESS(Issuer);
    explicit Issuer(sc_core::sc_module_name n) : sc_module(n) { SC_THREAD(run); }

    void run() {
        vpu->execute(first, &done1);
        wait(done1);
        first_done = now_cycles();
        wait(cycles(gap));
        vpu->execute(second, &done2);
        wait(done2);
        second_done = now_cycles();
    }
};

}  // namespace

TEST_CASE("Vpu module finishes programs at the VpuTiming cycle", "[vpu][system]") {
    const VpuConfig cfg;
    const VmemConfig vmem;
    const VectorProgram gelu = lower_vector_op({VectorOp::Gelu, false, 64, 512, 4, 4}, cfg, vmem);
    const VectorProgram softmax =
        lower_vector_op({VectorOp::Softmax, false, 32, 256, 2, 2}, cfg, vmem);

    // Reference: the same programs on the plain model, the second handed over `gap` cycles
    // after the first completed.
    const Cycle gap = 100;
    VpuTiming ref(cfg, vmem);
    ref.run(gelu);
    const Cycle end1 = ref.finish_cycle();
    ref.advance_to(end1 + gap);
    ref.run(softmax);
    const Cycle end2 = ref.finish_cycle();

    Vpu vpu("vpu", cfg, vmem);
    Issuer issuer("issuer");
    issuer.vpu = &vpu;
    issuer.first = gelu;
    issuer.second = softmax;
    issuer.gap = gap;
    sc_core::sc_start();

    CHECK(issuer.first_done == end1);
    CHECK(issuer.second_done == end2);
    CHECK(end2 > end1 + gap);
    CHECK(vpu.counters().instructions == gelu.instrs.size() + softmax.instrs.size());
    CHECK_FALSE(vpu.busy());
}
