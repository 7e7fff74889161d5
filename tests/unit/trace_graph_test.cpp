// Trace ops as a program: deps, cycles, order, cores and replica groups, send/recv pairing,
// and the FLOP / byte figures the program layer lowers from.
#include <fmt/format.h>

#include <chrono>

#include "trace_test_util.h"

using namespace tpusim;
using tpusim::test::error_of;
using tpusim::test::parse_text;
using tpusim::test::trace_text;

namespace {

std::string copy_op(const std::string& id, const std::string& deps = "") {
    return fmt::format(R"({{"id": "{}", "kind": "copy", "bytes": 64, "deps": [{}]}})", id, deps);
}

std::string located(const InputError& e) { return e.where() + ": " + e.what_only(); }

}  // namespace

TEST_CASE("deps may point forward; ops come out in topological, otherwise file, order", "[trace]") {
    // File order: c (needs b), a, b (needs a), d. Ready ops are taken in file order.
    const Trace t = parse_text(trace_text(copy_op("c", R"("b")") + "," + copy_op("a") + "," +
                                          copy_op("b", R"("a", "a")") + "," + copy_op("d")));
    REQUIRE(t.ops.size() == 4);
    CHECK(t.ops[0].id == "a");
    CHECK(t.ops[1].id == "b");
    CHECK(t.ops[2].id == "c");
    CHECK(t.ops[3].id == "d");
    CHECK(t.ops[1].deps == std::vector<std::size_t>{0});  // a repeated dep counts once
    CHECK(t.ops[2].deps == std::vector<std::size_t>{1});
    CHECK(t.ops[3].deps.empty());
}

TEST_CASE("deps keep their listed order: the first is a fused op's primary operand", "[trace]") {
    // b lists its deps late-first: c was produced after a, and is b's primary operand.
    const Trace t = parse_text(
        trace_text(copy_op("a") + "," + copy_op("c") + "," + copy_op("b", R"("c", "a", "c")")));
    REQUIRE(t.ops.size() == 3);
    CHECK(t.ops[2].id == "b");
    CHECK(t.ops[2].deps == std::vector<std::size_t>{1, 0});
}

TEST_CASE("dependency cycles are reported with the ids on the cycle", "[trace]") {
    // x is outside the cycle b -> c -> d -> b but depends on it.
    const InputError e = error_of(
        trace_text(copy_op("a") + "," + copy_op("x", R"("d")") + "," + copy_op("b", R"("a", "d")") +
                   "," + copy_op("c", R"("b")") + "," + copy_op("d", R"("c")")));
    CHECK(located(e) == R"(op "b": dependency cycle: "b" -> "c" -> "d" -> "b")");
    CHECK(located(error_of(trace_text(copy_op("s", R"("s")")))) ==
          R"(op "s": dependency cycle: it depends on itself)");
    CHECK(located(error_of(trace_text(copy_op("a", R"("zz")")))) ==
          R"(op "a": dep "zz" names no op in the trace)");
    CHECK(located(error_of(trace_text(copy_op("a") + "," + copy_op("a")))) ==
          R"(op "a": duplicate id (first used by ops[0]))");
}

TEST_CASE("a long cycle is shortened in the message", "[trace]") {
    std::string ops;
    const int n = 50;
    for (int i = 0; i < n; ++i) {
        ops += (i ? "," : "") +
               copy_op(fmt::format("o{}", i), fmt::format(R"("o{}")", (i + n - 1) % n));
    }
    const std::string what = error_of(trace_text(ops)).what_only();
    CHECK(what.rfind(R"(dependency cycle: "o0" -> "o1" -> )", 0) == 0);
    CHECK(what.find("... (50 ops) -> \"o0\"") != std::string::npos);
}

TEST_CASE("a chain of 100000 ops listed backwards reads and reorders", "[trace]") {
    // Every op depends on the one before, listed in reverse so the reader must reorder them.
    const int n = 100000;
    std::string ops;
    ops.reserve(static_cast<std::size_t>(n) * 80);
    for (int i = n - 1; i >= 0; --i) {
        ops += copy_op(fmt::format("op{}", i), i ? fmt::format(R"("op{}")", i - 1) : "");
        if (i) ops += ",";
    }
    const Trace t = parse_text(trace_text(ops));
    REQUIRE(t.ops.size() == static_cast<std::size_t>(n));
    CHECK(t.ops.front().id == "op0");
    CHECK(t.ops.back().id == fmt::format("op{}", n - 1));
    CHECK(t.ops.back().deps == std::vector<std::size_t>{static_cast<std::size_t>(n - 2)});
}

TEST_CASE("cores: an op may run on a subset of the program's cores", "[trace]") {
    const Trace t = parse_text(trace_text(
        R"({"id": "mm", "kind": "matmul", "m": 8, "k": 8, "n": 8, "cores": [3, 1]},
           {"id": "ar", "kind": "all_reduce", "bytes": 64, "cores": [3, 1]},
           {"id": "all", "kind": "all_reduce", "bytes": 64, "dtype": "f32"})",
        R"(, "cores": 4)"));
    CHECK(t.ops[0].cores == std::vector<int>{3, 1});
    CHECK(op_core_count(t, t.ops[0]) == 2);
    CHECK(op_core_count(t, t.ops[2]) == 4);
    // The default replica group is every core that runs the op.
    CHECK(t.ops[1].replica_groups == std::vector<std::vector<int>>{{1, 3}});
    CHECK(t.ops[2].replica_groups == std::vector<std::vector<int>>{{0, 1, 2, 3}});
    CHECK(t.ops[2].dtype == DType::F32);
    auto err = [](const std::string& op) {
        return located(error_of(trace_text(op, R"(, "cores": 4)")));
    };
    CHECK(err(R"({"id": "m", "kind": "copy", "bytes": 8, "cores": [4]})") ==
          R"(op "m": core 4 in "cores" is outside the program's 4 cores (0..3))");
    CHECK(err(R"({"id": "m", "kind": "copy", "bytes": 8, "cores": [1, 1]})") ==
          R"(op "m": core 1 is listed twice in "cores")");
    CHECK(err(R"({"id": "m", "kind": "copy", "bytes": 8, "cores": []})") ==
          R"(op "m": "cores" is empty (leave it out to run on every core))");
}

TEST_CASE("replica groups must partition the op's cores into equal groups", "[trace]") {
    auto ar = [](const std::string& groups, const std::string& extra = "") {
        return trace_text(R"({"id": "ar", "kind": "all_reduce", "bytes": 1024, )" + extra +
                              R"("replica_groups": )" + groups + "}",
                          R"(, "cores": 8)");
    };
    const Trace t = parse_text(ar("[[0, 2, 4, 6], [1, 3, 5, 7]]"));
    CHECK(t.ops[0].replica_groups == std::vector<std::vector<int>>{{0, 2, 4, 6}, {1, 3, 5, 7}});
    auto what = [](const std::string& text) { return error_of(text).what_only(); };
    CHECK(what(ar("[[0, 1, 2, 3], [3, 4, 5, 6]]")) == "core 3 appears twice in replica_groups");
    CHECK(what(ar("[[0, 1, 2, 3]]")) ==
          "replica_groups must partition the op's cores; core 4 is in no group");
    CHECK(what(ar("[[0, 1], [2, 3, 4, 5, 6, 7]]")) ==
          "replica_groups must all have the same size (got 2 and 6)");
    CHECK(what(ar("[[0, 1], [2, 3]]", R"("cores": [0, 1], )")) ==
          "core 2 in replica_groups does not run this op");
    CHECK(what(ar("[[0, 8]]")) ==
          R"(core 8 in "replica_groups" is outside the program's 8 cores (0..7))");
    CHECK(what(ar("[[]]")) == "replica_groups has an empty group");
    CHECK(what(ar("[0, 1]")) == R"("replica_groups" must be an array, got an integer)");
}

TEST_CASE("collective sizes: bytes is the per-core input buffer", "[trace]") {
    const Trace t = parse_text(trace_text(
        R"({"id": "rs", "kind": "reduce_scatter", "bytes": 4096, "dtype": "f32"},
           {"id": "ag", "kind": "all_gather", "bytes": 4096, "replica_groups": [[0, 1], [2, 3]]},
           {"id": "a2a", "kind": "all_to_all", "bytes": 4096},
           {"id": "p", "kind": "collective_permute", "bytes": 512,
            "source_target_pairs": [[0, 1], [1, 2], [2, 3], [3, 0]]},
           {"id": "s", "kind": "send", "bytes": 256, "cores": [0], "peer": 2},
           {"id": "r", "kind": "recv", "bytes": 256, "cores": [2], "peer": 0})",
        R"(, "cores": 4)"));
    CHECK(op_bytes_in(t.ops[0]) == 4096);
    CHECK(op_bytes_out(t.ops[0]) == 4096 / 4);  // one quarter per core of the group of 4
    CHECK(op_bytes_out(t.ops[1]) == 4096 * 2);  // groups of 2
    CHECK(op_bytes_out(t.ops[2]) == 4096);
    CHECK(t.ops[3].source_target_pairs.size() == 4);
    CHECK(op_bytes_in(t.ops[4]) == 256);
    CHECK(op_bytes_out(t.ops[4]) == 0);
    CHECK(op_bytes_in(t.ops[5]) == 0);
    CHECK(op_bytes_out(t.ops[5]) == 256);
    for (const auto& op : t.ops) {
        CHECK(is_collective(op.kind));
        CHECK(op_flops(op) == 0);
    }
    auto what = [](const std::string& op) {
        return error_of(trace_text(op, R"(, "cores": 4)")).what_only();
    };
    CHECK(what(R"({"id": "s", "kind": "send", "bytes": 8, "cores": [0], "peer": 1})") ==
          "no matching recv of 8 bytes from core 0 to core 1");
    CHECK(what(R"({"id": "r", "kind": "recv", "bytes": 8, "cores": [1], "peer": 0})") ==
          "no matching send of 8 bytes from core 0 to core 1");
    CHECK(what(R"({"id": "s", "kind": "send", "bytes": 8, "peer": 1})") ==
          R"(send and recv need "cores" with exactly one core (the one that runs it))");
    CHECK(what(R"({"id": "rs", "kind": "reduce_scatter", "bytes": 6})") ==
          "3 elements do not split evenly over groups of 4 cores");
    CHECK(what(R"({"id": "p", "kind": "collective_permute", "bytes": 8,
                   "replica_groups": [[0, 1, 2, 3]], "source_target_pairs": [[0, 1]]})") ==
          R"(unknown key "replica_groups" for a collective_permute op)");
    CHECK(what(R"({"id": "p", "kind": "collective_permute", "bytes": 8,
                   "source_target_pairs": [[0, 1], [0, 2]]})") == "core 0 is a source twice");
}

TEST_CASE("conv2d: output size and the equivalent implicit GEMM", "[trace]") {
    const Trace t = parse_text(trace_text(
        R"({"id": "same", "kind": "conv2d", "batch": 32, "h": 224, "w": 224, "c_in": 3,
            "c_out": 64, "kh": 7, "kw": 7, "stride_h": 2, "stride_w": 2},
           {"id": "valid", "kind": "conv2d", "batch": 2, "h": 10, "w": 12, "c_in": 8,
            "c_out": 16, "kh": 3, "kw": 5, "padding": "valid", "dtype": "f32"})"));
    const Conv2dShape& s = t.ops[0].conv;
    CHECK(s.out_h() == 112);  // "same": ceil(224 / 2)
    const MatmulShape g = conv_as_matmul(s);
    CHECK(g.m == 32 * 112 * 112);
    CHECK(g.k == 7 * 7 * 3);
    CHECK(g.n == 64);
    CHECK(op_flops(t.ops[0]) == 2 * g.m * g.k * g.n);
    const Conv2dShape& v = t.ops[1].conv;
    CHECK(v.out_h() == 8);  // "valid": (10 - 3) / 1 + 1
    CHECK(v.out_w() == 8);  // (12 - 5) / 1 + 1
    // f32: input 2x10x12x8, filter 3x5x8x16; output 2x8x8x16.
    CHECK(op_operand_bytes(t.ops[1]) ==
          std::vector<std::int64_t>{4 * 2 * 10 * 12 * 8, 4 * 3 * 5 * 8 * 16});
    CHECK(op_bytes_out(t.ops[1]) == 4 * 2 * 8 * 8 * 16);
}

TEST_CASE("vector ops: shapes, FLOPs per element and operand bytes", "[trace]") {
    const Trace t = parse_text(trace_text(
        R"({"id": "mm", "kind": "matmul", "batch": 4, "m": 64, "k": 32, "n": 16, "out_dtype": "f32"},
           {"id": "sm", "kind": "vector", "op": "softmax", "rows": 256, "cols": 16,
            "dtype": "f32", "deps": ["mm"], "fused": true},
           {"id": "b", "kind": "vector", "op": "bias_add", "rows": 256, "cols": 16, "deps": ["mm"]},
           {"id": "r", "kind": "vector", "op": "reduce_sum", "rows": 256, "cols": 16, "deps": ["sm"]},
           {"id": "adam", "kind": "vector", "op": "adam", "elements": 1000, "dtype": "f32"})"));
    const auto& mm = t.ops[0];
    CHECK(op_bytes_in(mm) == 2 * (4 * 64 * 32 + 4 * 32 * 16));  // bf16 operands, batched
    CHECK(op_bytes_out(mm) == 4 * (4 * 64 * 16));               // f32 result
    const auto& sm = t.ops[1];
    CHECK(op_flops(sm) == 256 * 16 * vector_op_info(VectorOp::Softmax).flops_per_element);
    // Fused: its input arrives on chip, so it reads nothing from HBM.
    CHECK(op_hbm_bytes_in(sm) == 0);
    CHECK(op_operand_bytes(t.ops[2]) == std::vector<std::int64_t>{2 * 256 * 16, 2 * 16});
    CHECK(op_bytes_out(t.ops[3]) == 2 * 256);  // one sum per row
    // Adam reads param, grad, m, v and writes param, m, v.
    CHECK(op_bytes_in(t.ops[4]) == 4 * 4 * 1000);
    CHECK(op_bytes_out(t.ops[4]) == 3 * 4 * 1000);
    // mm feeds a fused and an unfused consumer, so its result still goes to HBM; sm's only
    // consumer is not fused.
    const auto kept = results_kept_on_chip(t);
    CHECK(kept == std::vector<bool>{false, false, false, false, false});
    const Trace chain = parse_text(trace_text(
        R"({"id": "a", "kind": "vector", "op": "exp", "elements": 8},
           {"id": "b", "kind": "vector", "op": "relu", "elements": 8, "deps": ["a"], "fused": true})"));
    CHECK(results_kept_on_chip(chain) == std::vector<bool>{true, false});
}

TEST_CASE("dropout with a saved mask writes it, and its gradient reads it", "[trace]") {
    const Trace t = parse_text(trace_text(
        R"({"id": "d", "kind": "vector", "op": "dropout", "elements": 1000, "mask": "saved"},
           {"id": "g", "kind": "vector", "op": "dropout_grad", "elements": 1000,
            "mask": "saved", "deps": ["d", "d"]},
           {"id": "r", "kind": "vector", "op": "dropout_grad", "elements": 1000,
            "mask": "regenerated"})"));
    // y and the mask (pred: one byte per element) out; dy and the mask in.
    CHECK(op_bytes_out(t.ops[0]) == 2 * 1000 + 1000);
    CHECK(op_operand_bytes(t.ops[1]) == std::vector<std::int64_t>{2 * 1000, 1000});
    CHECK(op_flops(t.ops[1]) == 2 * 1000);  // dy * mask * scale
    // Regenerated (the default): dy alone, the mask made again from the seed.
    CHECK(op_operand_bytes(t.ops[2]) == std::vector<std::int64_t>{2 * 1000});
    CHECK(op_flops(t.ops[2]) == 1000 * vector_op_info(VectorOp::DropoutGrad).flops_per_element);
}
