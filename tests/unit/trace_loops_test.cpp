// Trace loops (format version 2, docs/trace-format.md "Loops"): the reader's checks, what a
// loop means (unroll_loops), and its lowering: the same instruction stream as the loop
// written out, trip by trip, except the HBM addresses of the body's buffers, which every trip
// reuses instead of taking fresh ones.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "../test_util.h"
#include "tpusim/common/error.h"
#include "tpusim/program/from_trace.h"
#include "tpusim/program/lowering.h"
#include "tpusim/trace/trace.h"
#include "trace_test_util.h"

using namespace tpusim;

namespace {

// An input, a body of a matmul (its lhs the previous trip's result), a GELU fused into it and
// a bias add reading a weight outside the loop, then an op after the loop.
const std::string kOps = R"(
  {"id": "x", "kind": "vector", "op": "relu", "rows": 256, "cols": 512, "dtype": "f32"},
  {"id": "b", "kind": "vector", "op": "relu", "rows": 256, "cols": 512, "dtype": "f32"},
  {"id": "mm", "kind": "matmul", "m": 256, "k": 512, "n": 512, "dtype": "f32", "deps": ["x"], "carried": ["add"]},
  {"id": "act", "kind": "vector", "op": "gelu", "rows": 256, "cols": 512, "dtype": "f32", "deps": ["mm"], "fused": true},
  {"id": "add", "kind": "vector", "op": "add", "rows": 256, "cols": 512, "dtype": "f32", "deps": ["act", "b"]},
  {"id": "out", "kind": "vector", "op": "exp", "rows": 256, "cols": 512, "dtype": "f32", "deps": ["add"]}
)";

std::string looped(const std::string& loops, const std::string& ops = kOps, int version = 2) {
    return R"({"format": "tpusim.trace", "version": )" + std::to_string(version) +
           R"(, "cores": 1, "ops": [)" + ops + R"(], "loops": [)" + loops + "]}";
}

std::string body_loop(int trips) {
    return R"({"id": "w", "trips": )" + std::to_string(trips) +
           R"(, "body": ["mm", "act", "add"]})";
}

std::string what(const std::string& text) { return test::error_of(text).what_only(); }

TpuConfig v3() { return load_config(test::config_path("tpu_v3_8.json")); }

}  // namespace

TEST_CASE("trace loops: a body run N times, carried deps from the previous trip", "[trace]") {
    const Trace t = test::parse_text(looped(body_loop(4)));
    CHECK(t.version == 2);
    REQUIRE(t.loops.size() == 1);
    CHECK(t.loops[0].id == "w");
    CHECK(t.loops[0].first == 2);
    CHECK(t.loops[0].count == 3);
    CHECK(t.loops[0].trips == 4);
    CHECK(t.ops[2].carried == std::vector<std::size_t>{4});
    CHECK(op_trips(t) == std::vector<std::int64_t>{1, 1, 4, 4, 4, 1});
    // Written out: 2 + 3 x 4 + 1 ops; trip t's matmul waits on x and on trip t-1's add.
    const Trace u = unroll_loops(t);
    REQUIRE(u.ops.size() == 15);
    CHECK(u.loops.empty());
    CHECK(u.ops[5].id == "mm@1");
    CHECK(u.ops[5].deps == std::vector<std::size_t>{0, 4});
    CHECK(u.ops[6].deps == std::vector<std::size_t>{5});     // act@1 fused onto mm@1
    CHECK(u.ops[7].deps == std::vector<std::size_t>{6, 1});  // add@1: act@1 and b
    CHECK(u.ops[14].deps == std::vector<std::size_t>{13});   // out: the last trip's add
}

TEST_CASE("trace loops: bad loops are located errors", "[trace]") {
    CHECK(test::error_of(looped(body_loop(0))).where() == "/loops/0");
    CHECK(what(looped(body_loop(0))) == "\"trips\" must be an integer from 1 to 2^40, got 0");
    CHECK(what(looped(R"({"id": "w", "trips": 2.5, "body": ["mm"]})")).find("\"trips\" must be") !=
          std::string::npos);
    CHECK(what(looped(R"({"id": "w", "trips": 2199023255553, "body": ["mm"]})"))
              .find("from 1 to 2^40") != std::string::npos);
    CHECK(what(looped(R"({"id": "w", "body": ["mm"]})")) ==
          "missing \"trips\" (a positive integer)");
    CHECK(what(looped(R"({"id": "w", "trips": 2, "body": []})")) ==
          "\"body\" must be a non-empty array of op ids");
    CHECK(what(looped(R"({"id": "w", "trips": 2, "body": ["nope"]})")) ==
          "body op \"nope\" names no op in the trace");
    CHECK(what(looped(R"({"id": "mm", "trips": 2, "body": ["mm"]})"))
              .find("already the id of an op") != std::string::npos);
    CHECK(what(looped(body_loop(2) + "," + R"({"id": "v", "trips": 2, "body": ["add"]})")) ==
          "op \"add\" is already in the body of a loop");
    CHECK(what(looped(R"({"id": "w", "trips": 2, "body": ["mm"], "step": 1})"))
              .find("unknown key \"step\"") != std::string::npos);
    // Loops are version 2.
    CHECK(test::error_of(looped(body_loop(2), kOps, 1)).where() == "/loops");
    // A dep that crosses the boundary: "b" depends on a body op and the body's "add" on "b",
    // so "b" would have to run inside the loop.
    std::string crossing = kOps;
    crossing.replace(
        crossing.find(
            R"("id": "b", "kind": "vector", "op": "relu", "rows": 256, "cols": 512, "dtype": "f32"})"),
        std::string(
            R"("id": "b", "kind": "vector", "op": "relu", "rows": 256, "cols": 512, "dtype": "f32"})")
            .size(),
        R"("id": "b", "kind": "vector", "op": "relu", "rows": 256, "cols": 512, "dtype": "f32", "deps": ["act"]})");
    CHECK(what(looped(body_loop(2), crossing)) ==
          "op \"b\" is not in the body but must run between body ops \"mm\" and \"add\" (the "
          "deps cross the loop's boundary)");
    // Carried deps stay in their own body; fused ops never cross the boundary.
    CHECK(what(looped(R"({"id": "w", "trips": 2, "body": ["mm"]})")) ==
          "carried dep \"add\" is not an op of the same loop body");
    std::string carried_outside = kOps;
    carried_outside.replace(carried_outside.find(R"("deps": ["add"]})"), 16,
                            R"("deps": ["add"], "carried": ["add"]})");
    CHECK(test::error_of(looped(body_loop(2), carried_outside)).where() == "op \"out\"");
    std::string uncarried = kOps;
    uncarried.erase(uncarried.find(R"(, "carried": ["add"])"), 20);
    CHECK(what(looped(R"({"id": "w", "trips": 2, "body": ["act", "add"]})", uncarried))
              .find("across the boundary") != std::string::npos);
}

TEST_CASE("trace loops: lowered trip by trip, the stream of the loop written out", "[trace]") {
    // The lowering of a loop emits, trip after trip, the instructions the unrolled trace's
    // copies of the body get: the same units, sizes, waits and order. Only HBM addresses
    // differ: the loop's body writes the same buffers in every trip (trip-invariant), the
    // unrolled copies each get their own. The cycles are therefore identical wherever HBM
    // timing does not depend on which rows the buffers occupy (tests/cli/loops.sh measures it).
    const TpuConfig cfg = v3();
    for (int trips : {1, 2, 3}) {
        const Trace t = test::parse_text(looped(body_loop(trips)));
        const Program loop = lower_trace(t, cfg);
        const Program flat = lower_trace(unroll_loops(t), cfg);
        REQUIRE(loop.cores.size() == 1);
        const SharedInstrs& a = loop.cores[0].instrs;
        const SharedInstrs& b = flat.cores[0].instrs;
        REQUIRE(a.size() == b.size());
        std::size_t differ_in_address = 0;
        for (std::size_t i = 0; i < a.size(); ++i) {
            INFO("trips " << trips << ", instruction " << i);
            REQUIRE(a[i].unit == b[i].unit);
            REQUIRE(a[i].waits == b[i].waits);
            CHECK(loop.ops[a[i].op].id ==
                  flat.ops[b[i].op].id.substr(0, flat.ops[b[i].op].id.find('@')));
            if (a[i].unit == Unit::Dma) {
                CHECK(a[i].dma().dir == b[i].dma().dir);
                CHECK(a[i].dma().vmem_addr == b[i].dma().vmem_addr);
                CHECK(a[i].dma().bytes() == b[i].dma().bytes());
                CHECK(a[i].dma().rows == b[i].dma().rows);
                differ_in_address += a[i].dma().hbm_addr != b[i].dma().hbm_addr;
            } else if (a[i].unit == Unit::Mxu) {
                CHECK(a[i].mm().m == b[i].mm().m);
                CHECK(a[i].mm().n == b[i].mm().n);
                CHECK(a[i].mm().k == b[i].mm().k);
            } else if (a[i].unit == Unit::Vpu) {
                CHECK(a[i].vec().op == b[i].vec().op);
                CHECK(a[i].vec().rows == b[i].vec().rows);
            }
        }
        // One trip: nothing is reused, so nothing differs.
        if (trips == 1) CHECK(differ_in_address == 0);
        // Per op, the loop's figures are the sum of the copies': FLOPs and HBM bytes N times
        // the body's.
        for (std::size_t i = 0; i < loop.ops.size(); ++i) {
            double flops = 0;
            Bytes hbm = 0;
            for (const auto& f : flat.ops) {
                if (f.id.substr(0, f.id.find('@')) != loop.ops[i].id) continue;
                flops += f.flops;
                hbm += f.hbm_bytes;
            }
            INFO(loop.ops[i].id);
            CHECK(loop.ops[i].flops == flops);
            CHECK(loop.ops[i].hbm_bytes == hbm);
            CHECK(loop.ops[i].trips == (i >= 2 && i < 5 ? trips : 1));
        }
    }
}
