// The Vpu sc_module, driven as the TensorCore drives it (vector instructions through its UnitIf
// export): instructions run in order, each for the cycles of its loop on the plain VpuTiming
// model (1 SystemC ns = 1 core cycle), and a full queue holds the issuer back.
#include "arch/vpu/vpu_module.h"

#include <catch2/catch.hpp>
#include <systemc>

#include "tpusim/arch/core/core_stats.h"
#include "tpusim/arch/vpu/vector_cost.h"
#include "tpusim/common/sim_time.h"

using namespace tpusim;

namespace {

Instr vector_instr(const VectorOpDesc& d) {
    Instr in;
    in.unit = Unit::Vpu;
    in.vec() = VectorInstr{d.op, d.saved_mask, d.rows, d.cols, d.in_bytes, d.out_bytes};
    return in;
}

// Issues `first` twice back to back, then `second` `gap` cycles after the second has
// completed, each when the VPU is not full; records the completions and the issue cycles.
struct VectorIssuer : sc_core::sc_module, UnitDoneIf {
    sc_core::sc_port<UnitIf> vpu_out{"vpu_out"};
    Instr first, second;
    Cycle gap = 0;
    CoreStats* stats = nullptr;
    std::vector<UnitDone> done_at;
    std::vector<Cycle> issued_at;
    sc_core::sc_event told;

    SC_HAS_PROCESS(VectorIssuer);
    explicit VectorIssuer(sc_core::sc_module_name n) : sc_module(n) { SC_THREAD(run); }

    void issue(const Instr& in) {
        while (vpu_out->full(in)) wait(vpu_out->freed(in));
        issued_at.push_back(now_cycles());
        vpu_out->issue(in, UnitRequest{UnitReply{this, issued_at.size() - 1}, Issuer{0, 0, stats}});
    }
    void run() {
        issue(first);
        issue(first);
        while (done_at.size() < 2) wait(told);
        wait(cycles(gap));
        issue(second);
    }
    void done(std::uint64_t, const UnitDone& d) override {
        done_at.push_back(d);
        told.notify(sc_core::SC_ZERO_TIME);
    }
};

}  // namespace

TEST_CASE("Vpu module finishes programs at the VpuTiming cycle", "[vpu][system]") {
    const VpuConfig cfg;
    const VmemConfig vmem;
    const VectorOpDesc gelu{VectorOp::Gelu, false, 64, 512, 4, 4};
    const VectorOpDesc softmax{VectorOp::Softmax, false, 32, 256, 2, 2};
    // Reference: each op's program alone on the plain model.
    const Cycle c1 = simulate_vector_op(gelu, cfg, vmem).cycles;
    const Cycle c2 = simulate_vector_op(softmax, cfg, vmem).cycles;
    REQUIRE(c1 > 0);
    REQUIRE(c2 > 0);

    // Queue depth 1: the second gelu waits in the issuer until the first has completed.
    Vpu vpu("vpu", cfg, vmem, 1);
    CoreStats stats("core0");
    VectorIssuer issuer("issuer");
    issuer.vpu_out.bind(vpu.core_in);
    issuer.first = vector_instr(gelu);
    issuer.second = vector_instr(softmax);
    issuer.gap = 100;
    issuer.stats = &stats;
    sc_core::sc_start();

    REQUIRE(issuer.done_at.size() == 3);
    CHECK(issuer.issued_at == std::vector<Cycle>{0, c1, 2 * c1 + 100});
    CHECK(issuer.done_at[0].start == 0);
    CHECK(issuer.done_at[0].end == c1);
    CHECK(issuer.done_at[1].end == 2 * c1);
    CHECK(issuer.done_at[2].start == 2 * c1 + 100);
    CHECK(issuer.done_at[2].end == 2 * c1 + 100 + c2);
    CHECK(issuer.done_at[2].busy == c2);
    CHECK(stats.vpu_busy_cycles == 2 * c1 + c2);
    CHECK(stats.vpu_instructions == 2 * vector_op_cost(gelu, cfg, vmem).instructions +
                                        vector_op_cost(softmax, cfg, vmem).instructions);
}
