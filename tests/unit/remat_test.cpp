// Rematerialisation (program/remat.h): what is recomputed, where the copy goes, what it
// frees, and when nothing can be. Footprints are derived by hand from the ops' sizes.
#include "tpusim/program/remat.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "../test_util.h"
#include "tpusim/common/error.h"
#include "tpusim/program/from_trace.h"
#include "tpusim/program/hbm_footprint.h"
#include "tpusim/trace/trace.h"

using namespace tpusim;

namespace {

// Elements of the small arrays: 1,344 x 1,024, so that a v3 core's share of a 64-row HBM
// (32 MiB) lies between the peaks with and without recomputation (the last test).
constexpr std::int64_t kN = 1344 * 1024;

// One core. b = gelu(a), in f32, is read early by c and late by g; a stays live until h, so b
// can be recomputed from it. big (4N) and its reduction r are the peak:
//   at r: parameters x (2N B) and big's input (8N B), results a (2N B), b (4N B), c (2N B),
//   big (8N B) and r: 26N B + r's result. Recomputing b (the largest result live there)
//   frees its 4N B: 22N B + r's result; the copy runs after big is freed (18N B + r's).
// `a_late`: whether h also reads a (without it b's operand dies early: no candidate).
Trace peak_trace(bool a_late) {
    const std::string n = std::to_string(kN), n4 = std::to_string(4 * kN),
                      r_rows = std::to_string(4 * kN / 1024);
    const std::string h = a_late ? R"({"id": "h", "kind": "vector", "op": "add", "elements": )" +
                                       n + R"(, "deps": ["g", "a"]})"
                                 : R"({"id": "h", "kind": "vector", "op": "relu", "elements": )" +
                                       n + R"(, "deps": ["g"]})";
    const std::string text = R"({"format": "tpusim.trace", "version": 1, "name": "t",
        "cores": 1, "ops": [
        {"id": "a", "kind": "vector", "op": "relu", "elements": )" +
                             n + R"(},
        {"id": "b", "kind": "vector", "op": "gelu", "elements": )" +
                             n + R"(, "deps": ["a"], "out_dtype": "f32"},
        {"id": "c", "kind": "vector", "op": "relu", "elements": )" +
                             n + R"(, "deps": ["b"], "dtype": "f32", "out_dtype": "bf16"},
        {"id": "big", "kind": "vector", "op": "relu", "elements": )" +
                             n4 + R"(},
        {"id": "r", "kind": "vector", "op": "reduce_sum", "rows": )" +
                             r_rows + R"(, "cols": 1024,
         "deps": ["big"]},
        {"id": "g", "kind": "vector", "op": "relu", "elements": )" +
                             n + R"(, "deps": ["b"], "dtype": "f32", "out_dtype": "bf16"},
        )" + h + "]}";
    return parse_trace(nlohmann::json::parse(text), "t.json", 8);
}

std::size_t index_of(const Trace& t, const std::string& id) {
    for (std::size_t i = 0; i < t.ops.size(); ++i)
        if (t.ops[i].id == id) return i;
    FAIL("no op " << id);
    return 0;
}

}  // namespace

TEST_CASE("rematerialisation recomputes an op live across the peak before its late consumer",
          "[remat]") {
    const Trace t = peak_trace(true);
    const std::int64_t r = op_bytes_out(t.ops[4]);
    const HbmFootprint before = hbm_footprint(t);
    REQUIRE(before.peak_bytes == 26 * kN + r);
    CHECK(t.ops[before.peak_op].id == "r");

    // Fits: left alone.
    CHECK_FALSE(rematerialize(t, 26 * kN + r).has_value());

    RematStats st;
    const auto fitted = rematerialize(t, 23 * kN, &st);
    REQUIRE(fitted.has_value());
    const Trace& f = *fitted;
    REQUIRE(f.ops.size() == t.ops.size() + 1);
    const std::size_t copy = index_of(f, "b.remat");
    CHECK(copy == index_of(f, "g") - 1);  // just before the late consumer
    CHECK(f.ops[copy].deps == std::vector<std::size_t>{index_of(f, "a")});
    CHECK_FALSE(f.ops[copy].fused);
    CHECK(f.ops[index_of(f, "g")].deps == std::vector<std::size_t>{copy});
    CHECK(f.ops[index_of(f, "c")].deps == std::vector<std::size_t>{index_of(f, "b")});
    CHECK(f.ops[index_of(f, "h")].deps ==
          std::vector<std::size_t>{index_of(f, "g"), index_of(f, "a")});
    CHECK(st.ops == 1);
    CHECK(st.peak_before == 26 * kN + r);
    CHECK(st.peak_after == 22 * kN + r);
    CHECK(hbm_footprint(f).peak_bytes == 22 * kN + r);
    CHECK(st.recomputed_bytes == 4 * kN);
}

TEST_CASE("rematerialisation recomputes a dead operand with the value (a block, as XLA does)",
          "[remat]") {
    const Trace t = peak_trace(false);  // a dies after b: the copy of b needs a again
    const std::int64_t r = op_bytes_out(t.ops[4]);
    REQUIRE(hbm_footprint(t).peak_bytes == 24 * kN + r);
    RematStats st;
    const auto fitted = rematerialize(t, 21 * kN, &st);
    REQUIRE(fitted.has_value());
    const Trace& f = *fitted;
    REQUIRE(f.ops.size() == t.ops.size() + 2);
    const std::size_t ca = index_of(f, "a.remat"), cb = index_of(f, "b.remat");
    CHECK(ca + 1 == cb);
    CHECK(cb + 1 == index_of(f, "g"));
    CHECK(f.ops[ca].deps.empty());  // a reads a parameter, resident throughout
    CHECK(f.ops[cb].deps == std::vector<std::size_t>{ca});
    CHECK(f.ops[index_of(f, "g")].deps == std::vector<std::size_t>{cb});
    CHECK(st.ops == 2);
    CHECK(st.kernels == 1);
    CHECK(st.recomputed_bytes == 4 * kN);
    // At r: x (2N) and big's input (8N), results c (2N), big (8N) and r; b (4N) and a (2N)
    // are gone. The copies run after big is freed.
    CHECK(st.peak_after == 20 * kN + r);
    CHECK(hbm_footprint(f).peak_bytes == 20 * kN + r);
}

namespace {

// The peak of peak_trace with b = gelu(a) in bf16 (2N B), early reader c, late reader g, and a
// built as `a_op` from a parameter: fused into b (a's tiles stay on chip) or not.
Trace block_trace(const std::string& a_op, bool b_fused) {
    const std::string n = std::to_string(kN), n4 = std::to_string(4 * kN),
                      r_rows = std::to_string(4 * kN / 1024);
    const std::string text = R"({"format": "tpusim.trace", "version": 1, "name": "t",
        "cores": 1, "ops": [
        {"id": "a", "kind": "vector", "op": ")" +
                             a_op + R"(", "elements": )" + n + R"(},
        {"id": "b", "kind": "vector", "op": "gelu", "elements": )" +
                             n + R"(, "deps": ["a"], "fused": )" + (b_fused ? "true" : "false") +
                             R"(},
        {"id": "c", "kind": "vector", "op": "relu", "elements": )" +
                             n + R"(, "deps": ["b"]},
        {"id": "big", "kind": "vector", "op": "relu", "elements": )" +
                             n4 + R"(},
        {"id": "r", "kind": "vector", "op": "reduce_sum", "rows": )" +
                             r_rows +
                             R"(, "cols": 1024, "deps": ["big"]},
        {"id": "g", "kind": "vector", "op": "relu", "elements": )" +
                             n + R"(, "deps": ["b"]},
        {"id": "h", "kind": "vector", "op": "relu", "elements": )" +
                             n + R"(, "deps": ["g"]}]})";
    return parse_trace(nlohmann::json::parse(text), "t.json", 8);
}

}  // namespace

TEST_CASE(
    "rematerialisation recomputes a fused kernel whole: its first op from HBM, the rest "
    "on chip",
    "[remat]") {
    const Trace t = block_trace("relu", true);
    // At r: x (2N) and big's input (8N), results b (2N; a is on chip), c (2N), big (8N), r.
    const std::int64_t r = op_bytes_out(t.ops[4]);
    REQUIRE(hbm_footprint(t).peak_bytes == 22 * kN + r);
    RematStats st;
    const auto fitted = rematerialize(t, 21 * kN, &st);
    REQUIRE(fitted.has_value());
    const Trace& f = *fitted;
    const std::size_t ca = index_of(f, "a.remat"), cb = index_of(f, "b.remat");
    CHECK_FALSE(f.ops[ca].fused);
    CHECK(f.ops[cb].fused);
    CHECK(f.ops[cb].deps == std::vector<std::size_t>{ca});
    CHECK(f.ops[index_of(f, "g")].deps == std::vector<std::size_t>{cb});
    CHECK(st.ops == 2);
    CHECK(st.kernels == 1);
    CHECK(results_kept_on_chip(f)[ca]);  // the copy of a hands its tiles to b's copy
    CHECK(st.peak_after == 20 * kN + r);
}

TEST_CASE(
    "rematerialisation needs the operands live at the copy or recomputable; otherwise "
    "nothing changes",
    "[remat]") {
    // a is a dropout (random bits: never recomputed) that dies after b; keeping it alive for
    // the copy would hold as much as recomputing b frees.
    const Trace t = block_trace("dropout", false);
    const std::int64_t r = op_bytes_out(t.ops[4]);
    REQUIRE(hbm_footprint(t).peak_bytes == 22 * kN + r);
    RematStats st;
    CHECK_FALSE(rematerialize(t, 21 * kN, &st).has_value());
    CHECK(st.ops == 0);
    CHECK(st.kernels == 0);
}

TEST_CASE("the lowering rematerialises a program over the HBM, and says so; off, it is rejected",
          "[remat]") {
    const Trace t = peak_trace(true);
    const std::int64_t r = op_bytes_out(t.ops[4]);
    TpuConfig cfg = load_config(test::config_path("tpu_v3_8.json"));
    // HBM rows (a power of two, as the config requires) so that a core's share lies between
    // the peaks after and before.
    cfg.hbm.rows = 64;
    const std::int64_t cap = hbm_bytes_per_core(cfg);
    REQUIRE(cap >= 22 * kN + r);
    REQUIRE(cap < 26 * kN + r);

    const Program p = lower_trace(t, cfg);
    REQUIRE_FALSE(p.warnings.empty());
    CHECK(p.warnings.front().find("1 vector op recomputed") != std::string::npos);
    CHECK(
        std::any_of(p.ops.begin(), p.ops.end(), [](const OpInfo& o) { return o.id == "b.remat"; }));

    cfg.lowering.rematerialize = false;
    CHECK_THROWS_WITH(lower_trace(t, cfg), Catch::Contains("resource exhausted"));
}

TEST_CASE("rematerialisation keeps the program a valid graph and never raises the footprint",
          "[remat]") {
    // Random vector-op graphs (relu, gelu, add; some results read much later), squeezed to
    // 95% and to 60% of their peak: a rematerialised program fits, every op of the original
    // is still there in order, each copy reads its original's operands and deps point
    // backwards; a program left as it is (none of that fits it) reports nothing recomputed.
    std::uint64_t seed = 12345;
    auto next = [&seed](std::uint64_t n) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        return (seed >> 33) % n;
    };
    std::size_t rematerialised = 0;
    for (int round = 0; round < 200; ++round) {
        nlohmann::json ops = nlohmann::json::array();
        const std::size_t n = 8 + next(24);
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint64_t kind = i == 0 ? 0 : next(3);
            nlohmann::json op = {{"id", "o" + std::to_string(i)},
                                 {"kind", "vector"},
                                 {"op", kind == 0   ? "relu"
                                        : kind == 1 ? "gelu"
                                                    : "add"},
                                 {"elements", 1024 * (1 + next(64))}};
            nlohmann::json deps = nlohmann::json::array();
            for (std::uint64_t d = 0; i > 0 && d < (kind == 2 ? 2u : 1u); ++d)
                if (next(4) != 0) deps.push_back("o" + std::to_string(next(i)));
            if (!deps.empty()) op["deps"] = deps;
            ops.push_back(op);
        }
        const Trace t = parse_trace(
            nlohmann::json{{"format", "tpusim.trace"}, {"version", 1}, {"name", "r"}, {"ops", ops}},
            "r.json", 8);
        const std::int64_t before = hbm_footprint(t).peak_bytes;
        for (const std::int64_t cap : {before * 95 / 100, before * 60 / 100}) {
            RematStats st;
            const auto f = rematerialize(t, cap, &st);
            INFO("round " << round << ", capacity " << cap << " of " << before);
            if (!f) {
                CHECK(st.ops == 0);
                CHECK(st.peak_after == before);
                continue;
            }
            ++rematerialised;
            CHECK(f->ops.size() == t.ops.size() + st.ops);
            CHECK(hbm_footprint(*f).peak_bytes <= cap);
            CHECK(st.peak_after == hbm_footprint(*f).peak_bytes);
            std::size_t k = 0;  // original ops, in order
            for (std::size_t i = 0; i < f->ops.size(); ++i) {
                const TraceOp& op = f->ops[i];
                for (std::size_t d : op.deps) CHECK(d < i);
                const auto remat = op.id.find(".remat");
                if (remat == std::string::npos) {
                    REQUIRE(k < t.ops.size());
                    CHECK(op.id == t.ops[k++].id);
                    continue;
                }
                // The same producers, or their own copies.
                const TraceOp& orig = f->ops[index_of(*f, op.id.substr(0, remat))];
                REQUIRE(op.deps.size() == orig.deps.size());
                auto base = [&](std::size_t d) {
                    return f->ops[d].id.substr(0, f->ops[d].id.find(".remat"));
                };
                for (std::size_t j = 0; j < op.deps.size(); ++j)
                    CHECK(base(op.deps[j]) == base(orig.deps[j]));
            }
            CHECK(k == t.ops.size());
        }
    }
    CHECK(rematerialised > 10);  // the property was exercised
}
