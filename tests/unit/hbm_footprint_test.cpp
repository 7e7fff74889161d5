// The live HBM footprint of a trace, and the capacity check that fails a program that does
// not fit (XLA's "resource exhausted") before anything is lowered.
#include "tpusim/program/hbm_footprint.h"

#include <catch2/catch.hpp>

#include "../test_util.h"
#include "config_expect.h"
#include "trace_test_util.h"

using tpusim::check_hbm_capacity;
using tpusim::hbm_footprint;
using tpusim::load_config;
using tpusim::test::parse_text;
using tpusim::test::trace_text;

TEST_CASE("hbm footprint: parameters stay, results live until their last consumer",
          "[hbm][capacity]") {
    // x (infeed, 4 MiB) -> a = x @ W1 (W1 1024 x 2048: 4 MiB; a 8 MiB) -> b = gelu(a) (8 MiB)
    // -> c = b @ W2 (W2 2048 x 1024: 4 MiB; c 4 MiB). Parameters: W1 + W2 = 8 MiB. Live
    // results at each op: x: 4; a: 4 + 8 = 12; b: a + b = 16 (x freed after a); c: b + c = 12
    // (a freed after b). Peak at b: 8 + 16 = 24 MiB.
    const auto t = parse_text(trace_text(R"(
        {"id": "x", "kind": "infeed", "bytes": 4194304},
        {"id": "a", "kind": "matmul", "m": 2048, "k": 1024, "n": 2048, "dtype": "bf16", "deps": ["x"]},
        {"id": "b", "kind": "vector", "op": "gelu", "rows": 2048, "cols": 2048, "dtype": "bf16", "deps": ["a"]},
        {"id": "c", "kind": "matmul", "m": 2048, "k": 2048, "n": 1024, "dtype": "bf16", "deps": ["b"]})",
                                         R"(, "cores": 1)"));
    const auto f = hbm_footprint(t);
    const std::int64_t MiB = 1 << 20;
    CHECK(f.parameter_bytes == 8 * MiB);
    CHECK(f.peak_bytes == 24 * MiB);
    CHECK(t.ops[f.peak_op].id == "b");
}

TEST_CASE("hbm footprint: declared parameter_bytes count each parameter once", "[hbm][capacity]") {
    // The same weight W (1024 x 1024 bf16, 2 MiB) read by two matmuls, each from its own
    // infeed x1, x2 (2048 x 1024: 4 MiB each; results 4 MiB each). Undeclared, each read of
    // W is a parameter of its own: 4 MiB; declared (the trace names W's 2 MiB once), 2 MiB.
    // Live results: x1 (4); a1: x1 + a1 = 8; x2: a1 + x2 = 8 (x1 freed after a1, a1 is an
    // output and stays); a2: a1 + x2 + a2 = 12.
    const char* ops = R"(
        {"id": "x1", "kind": "infeed", "bytes": 4194304},
        {"id": "a1", "kind": "matmul", "m": 2048, "k": 1024, "n": 1024, "dtype": "bf16", "deps": ["x1"]},
        {"id": "x2", "kind": "infeed", "bytes": 4194304},
        {"id": "a2", "kind": "matmul", "m": 2048, "k": 1024, "n": 1024, "dtype": "bf16", "deps": ["x2"]})";
    const std::int64_t MiB = 1 << 20;
    const auto undeclared = hbm_footprint(parse_text(trace_text(ops, R"(, "cores": 1)")));
    CHECK(undeclared.parameter_bytes == 4 * MiB);
    CHECK(undeclared.peak_bytes == 16 * MiB);
    const auto declared =
        hbm_footprint(parse_text(trace_text(ops, R"(, "cores": 1, "parameter_bytes": 2097152)")));
    CHECK(declared.parameter_bytes == 2 * MiB);
    CHECK(declared.peak_bytes == 14 * MiB);
}

TEST_CASE("hbm footprint: a result kept on chip by a fused consumer takes no HBM",
          "[hbm][capacity]") {
    // a's only consumer is fused, so a stays in VMEM: the peak is a's operands (no producer:
    // parameters, 4 + 4 MiB) + b (8 MiB) = 16 MiB, not 24.
    const auto t = parse_text(trace_text(R"(
        {"id": "a", "kind": "matmul", "m": 2048, "k": 1024, "n": 2048, "dtype": "bf16"},
        {"id": "b", "kind": "vector", "op": "gelu", "rows": 2048, "cols": 2048, "dtype": "bf16", "deps": ["a"], "fused": true})",
                                         R"(, "cores": 1)"));
    CHECK(hbm_footprint(t).peak_bytes == 16 << 20);
}

TEST_CASE("hbm footprint: softmax holds its exponentials while it runs", "[hbm][capacity]") {
    // x (infeed, 4 MiB f32: 1024 x 1024) -> y = softmax(x). While y runs, XLA's exp kernel
    // has stored e = exp(x - max) (4 MiB, x's type) for the quotient kernel: x + y + e =
    // 12 MiB. Fused into its producer, the softmax works on x's tiles in VMEM, stores no e,
    // and x, whose only consumer is fused, stays on chip: y alone, 4 MiB.
    const std::int64_t MiB = 1 << 20;
    const char* ops = R"(
        {"id": "x", "kind": "infeed", "bytes": 4194304},
        {"id": "y", "kind": "vector", "op": "softmax", "rows": 1024, "cols": 1024, "dtype": "f32", "deps": ["x"]FUSED})";
    auto text = [&](const char* fused) {
        std::string o = ops;
        o.replace(o.find("FUSED"), 5, fused);
        return trace_text(o.c_str(), R"(, "cores": 1)");
    };
    const auto plain = hbm_footprint(parse_text(text("")));
    CHECK(plain.peak_bytes == 12 * MiB);
    const auto fused = hbm_footprint(parse_text(text(R"(, "fused": true)")));
    CHECK(fused.peak_bytes == 4 * MiB);
}

TEST_CASE("hbm capacity: a program beyond a core's share of HBM is a located error",
          "[hbm][capacity]") {
    // v2: 16 GiB per chip, 2 cores: 8 GiB per core. A 65536^3 bf16 matmul holds 8 GiB of
    // each operand and 8 GiB of result.
    const auto cfg = load_config(tpusim::test::config_path("tpu_v2_8.json"));
    const auto big = parse_text(trace_text(
        R"({"id": "mm", "kind": "matmul", "m": 65536, "k": 65536, "n": 65536, "dtype": "bf16"})",
        R"(, "cores": 1)"));
    tpusim::test::expect_input_error([&] { check_hbm_capacity(big, cfg); }, "t.json", "op \"mm\"",
                                     "resource exhausted: core 0 needs 24.00 GiB");
    // Inside: 32768 x 65536 x 16384 holds 4 + 2 + 1 = 7 GiB.
    const auto fits = parse_text(trace_text(
        R"({"id": "mm", "kind": "matmul", "m": 32768, "k": 65536, "n": 16384, "dtype": "bf16"})",
        R"(, "cores": 1)"));
    CHECK(hbm_footprint(fits).peak_bytes == 7LL << 30);
    CHECK_NOTHROW(check_hbm_capacity(fits, cfg));
}
