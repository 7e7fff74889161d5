// The critical-path split (include/tpusim/sim/kernel_attribution.h) on small graphs whose
// split is worked out by hand in the comments, and kernels formed from fused ops.
#include "tpusim/sim/kernel_attribution.h"

#include <catch2/catch.hpp>
#include <numeric>

using tpusim::Cycle;
using tpusim::PathNode;

namespace {

PathNode path_node(Cycle start, Cycle end, std::vector<std::size_t> deps = {},
                   std::int64_t loop = -1, double weight = 0) {
    PathNode n;
    n.start = start;
    n.end = end;
    n.deps = std::move(deps);
    n.loop = loop;
    n.weight = weight;
    return n;
}

// `n` on the units of the bit mask `units` (bit 0 the VPU, 1 the MXU, 3 the ICI).
PathNode on(PathNode n, std::uint32_t units) {
    n.units = units;
    return n;
}

Cycle self_total(const std::vector<Cycle>& v) {
    return std::accumulate(v.begin(), v.end(), Cycle{0});
}

}  // namespace

TEST_CASE("critical path: overlap goes to the predecessor, gaps to the kernel after them",
          "[kernels]") {
    // A [0,100); B [80,250) reads A (its prefetch overlapped A's end); C [40,120) reads A, a
    // side branch nobody waits for; D [300,400) reads B. The run ends at 420.
    //   D ends last: its last-arriving predecessor (B at 250; C, issued before it, ended at 120)
    //     -> D gets 420 - 250 = 170 (its 100, the 50 gap before it, the 20 after it).
    //   B: A ended at 100 -> B gets 250 - 100 = 150.  A: nothing before -> 100.  C: 0.
    const auto s = tpusim::critical_path_split({path_node(0, 100), path_node(80, 250, {0}),
                                                path_node(40, 120, {0}), path_node(300, 400, {1})},
                                               420);
    CHECK(s.self == std::vector<Cycle>{100, 150, 0, 170});
    CHECK(self_total(s.self) == 420);
    REQUIRE(s.segments.size() == 3);
    CHECK(s.segments[0].from == 250);
    CHECK(s.segments[0].to == 420);
    CHECK(s.segments[0].nodes == std::vector<std::size_t>{3});
    CHECK(s.segments[2].from == 0);
    CHECK(s.segments[2].to == 100);
}

TEST_CASE("critical path: a predecessor that ended later is passed over", "[kernels]") {
    // P [0,60); L [0,250) long and independent; Q [70,150) issued after L; R [150,300) reads
    // Q. R ends last: Q ended at 150 -> R gets 150. Q's only predecessor L ended after it, so
    // the last earlier-issued node to end before 150 is P (60): Q gets 150 - 60 = 90, its
    // launch gap included. P gets 60. L overlapped everything it ran beside: 0.
    const auto s = tpusim::critical_path_split(
        {path_node(0, 60), path_node(0, 250), path_node(70, 150), path_node(150, 300, {2})}, 300);
    CHECK(s.self == std::vector<Cycle>{60, 0, 90, 150});
}

TEST_CASE("critical path: a kernel that waited for its issue follows the kernels issued before it",
          "[kernels]") {
    // Units: bit 0 the VPU, bit 3 the ICI. G [0,100) on the VPU; B1 [100,600) and B2
    // [600,1000) on the VPU, a chain after G (a backward pass); A [1000,1300), a collective on
    // the ICI that reads only G but was issued after B2 (the sequencer issues in order). A
    // ends last; its only predecessor G ended at 100, long before A started at 1000, so A
    // waited for its issue: the kernel issued before it that ended last by A's start, B2, is
    // its predecessor. A gets 1300 - 1000 = 300, B2 400, B1 500, G 100; without the issue
    // wait A would take 1200 and B1 and B2 none.
    const std::uint32_t vpu = 1u << 0, ici = 1u << 3;
    const auto s = tpusim::critical_path_split(
        {on(path_node(0, 100), vpu), on(path_node(100, 600, {0}), vpu),
         on(path_node(600, 1000, {1}), vpu), on(path_node(1000, 1300, {0}), ici)},
        1300);
    CHECK(s.self == std::vector<Cycle>{100, 500, 400, 300});
    CHECK(self_total(s.self) == 1300);
}

TEST_CASE("critical path: a loop is one step, split by its kernels' weights", "[kernels]") {
    // A [0,100); the loop's kernels B [100,900) (weight 300) and C [120,1000) (weight 100);
    // D [1000,1100) reads C. D gets 1100 - 1000 = 100; the loop, whose predecessor A ended at
    // 100, gets 1000 - 100 = 900: B 900 * 3/4 = 675, C 225. A gets 100.
    const auto s =
        tpusim::critical_path_split({path_node(0, 100), path_node(100, 900, {0}, 0, 300),
                                     path_node(120, 1000, {1}, 0, 100), path_node(1000, 1100, {2})},
                                    1100);
    CHECK(s.self == std::vector<Cycle>{100, 675, 225, 100});
    REQUIRE(s.segments.size() == 3);
    CHECK(s.segments[1].nodes == std::vector<std::size_t>{1, 2});
}

TEST_CASE("critical path: whole cycles, largest remainders, nodes that did not run", "[kernels]") {
    // 100 cycles over three equal weights: 33 each and the one left over to the first.
    // The fourth node did not run on the core: 0, whatever its times say.
    auto off = path_node(0, 5000);
    off.ran = false;
    const auto s =
        tpusim::critical_path_split({path_node(0, 100, {}, 7, 1), path_node(0, 90, {}, 7, 1),
                                     path_node(10, 100, {}, 7, 1), off},
                                    100);
    CHECK(s.self == std::vector<Cycle>{34, 33, 33, 0});
    // All weights 0: evenly as well.
    const auto z =
        tpusim::critical_path_split({path_node(0, 10, {}, 1), path_node(0, 10, {}, 1)}, 11);
    CHECK(z.self == std::vector<Cycle>{6, 5});
    // Nothing ran: nothing to give the time to.
    CHECK(self_total(tpusim::critical_path_split({off}, 50).self) == 0);
}

TEST_CASE("kernels: fused chains are one row named after the root", "[kernels]") {
    // mm; bias fused into mm; gelu fused into bias; out reads gelu. On the core: mm [0,400),
    // bias [300,420), gelu [350,450), out [440,600); run ends at 600.
    //   Kernel mm = {mm, bias, gelu} spans [0,450) on the core; out reads it (via gelu).
    //   out gets 600 - 450 = 150; mm gets 450.
    std::vector<tpusim::KernelOpInput> ops(4);
    const char* ids[] = {"mm", "bias", "gelu", "out"};
    const Cycle starts[] = {0, 300, 350, 440}, ends[] = {400, 420, 450, 600};
    for (std::size_t i = 0; i < 4; ++i) {
        ops[i].id = ids[i];
        ops[i].kind = i == 0 || i == 3 ? tpusim::OpKind::Matmul : tpusim::OpKind::Vector;
        ops[i].ran_on_core = ops[i].ran = true;
        ops[i].core_start = ops[i].start_cycle = starts[i];
        ops[i].core_end = ops[i].end_cycle = ends[i];
        ops[i].flops = 1000.0 * static_cast<double>(i + 1);
        ops[i].hbm_bytes = 10 * (i + 1);
        ops[i].busy[1] = 100 * (i + 1);
        ops[i].bottleneck = i == 0 ? "compute" : i == 3 ? "hbm" : "fused into x";
        if (i > 0) ops[i].deps = {i - 1};
    }
    ops[1].fused_into = 0;
    ops[2].fused_into = 1;
    const auto a = tpusim::attribute_kernels(ops, 3, 600);
    CHECK(a.core == 3);
    CHECK(a.run_cycles == 600);
    CHECK(a.sum_cycles == 600);
    REQUIRE(a.kernels.size() == 2);
    const auto& mm = a.kernels[0];
    CHECK(mm.name == "mm");
    CHECK(mm.members == std::vector<std::size_t>{0, 1, 2});
    CHECK(mm.self_cycles == 450);
    CHECK(mm.start_cycle == 0);
    CHECK(mm.end_cycle == 450);
    CHECK(mm.flops == 1000.0 + 2000.0 + 3000.0);
    CHECK(mm.hbm_bytes == 10u + 20u + 30u);
    CHECK(mm.busy[1] == 100u + 200u + 300u);
    CHECK(mm.bound == "compute");
    CHECK(a.kernels[1].name == "out");
    CHECK(a.kernels[1].self_cycles == 150);
    CHECK(a.op_kernel == std::vector<std::size_t>{0, 0, 0, 1});
    CHECK(a.op_self == std::vector<Cycle>{450, 0, 0, 150});
}

TEST_CASE("critical path: an overlapped collective is not a predecessor of unrelated work",
          "[kernels]") {
    // Units: bit 1 the MXU, bit 3 the ICI. A [0,100) on the MXU; X [100,500) on the MXU reads
    // A; C [120,700), a collective on the ICI issued after X, reads A; Y [500,800) on the MXU
    // reads X. Y's predecessors: X (its dep, and the last MXU node before it), not C, which
    // was issued just before it but on another unit. Y gets 800 - 500 = 300, X 500 - 100 =
    // 400, A 100; C overlapped the MXU work: 0.
    const std::uint32_t mxu = 1u << 1, ici = 1u << 3;
    const auto s = tpusim::critical_path_split(
        {on(path_node(0, 100), mxu), on(path_node(100, 500, {0}), mxu),
         on(path_node(120, 700, {0}), ici), on(path_node(500, 800, {1}), mxu)},
        800);
    CHECK(s.self == std::vector<Cycle>{100, 400, 0, 300});
}

TEST_CASE("kernels: a loop's kernels keep their trips and split the loop by weight", "[kernels]") {
    // pre [0,50); the loop (16 trips) of body ops b0 [50,900) (weight 600) and b1 [60,1000)
    // (weight 200, reads b0); post [1000,1040) reads b1; run ends at 1040.
    //   post: 1040 - 1000 = 40. The loop: 1000 - 50 = 950, b0 950 * 3/4 = 712.5 and b1 237.5:
    //   floors 712 and 237, the cycle left to the earlier of the equal remainders: b0 713,
    //   b1 237. pre: 50.
    std::vector<tpusim::KernelOpInput> ops(4);
    const char* ids[] = {"pre", "b0", "b1", "post"};
    const Cycle starts[] = {0, 50, 60, 1000}, ends[] = {50, 900, 1000, 1040};
    const double weights[] = {10, 600, 200, 10};
    for (std::size_t i = 0; i < 4; ++i) {
        ops[i].id = ids[i];
        ops[i].ran_on_core = ops[i].ran = true;
        ops[i].core_start = ops[i].start_cycle = starts[i];
        ops[i].core_end = ops[i].end_cycle = ends[i];
        ops[i].core_weight = weights[i];
        ops[i].core_units = 1;
        if (i > 0) ops[i].deps = {i - 1};
    }
    for (std::size_t i : {1, 2}) {
        ops[i].loop = 0;
        ops[i].trips = 16;
    }
    const auto a = tpusim::attribute_kernels(ops, 0, 1040);
    REQUIRE(a.kernels.size() == 4);
    CHECK(a.sum_cycles == 1040);
    CHECK(a.kernels[0].name == "b0");
    CHECK(a.kernels[0].self_cycles == 713);
    CHECK(a.kernels[0].trips == 16);
    CHECK(a.kernels[1].name == "b1");
    CHECK(a.kernels[1].self_cycles == 237);
    CHECK(a.kernels[1].trips == 16);
    CHECK(a.kernels[2].name == "pre");
    CHECK(a.kernels[2].self_cycles == 50);
    CHECK(a.kernels[3].name == "post");
    CHECK(a.kernels[3].self_cycles == 40);
    // The walk's stretches: post, the loop (both kernels, as indices into the sorted rows), pre.
    REQUIRE(a.path.size() == 3);
    CHECK(a.path[1].from == 50);
    CHECK(a.path[1].to == 1000);
    CHECK(a.path[1].nodes == std::vector<std::size_t>{0, 1});
}
