// Trace format v1 reader: the committed examples, the fields of each kind, and every
// malformed case named by the format's "Errors" section (docs/trace-format.md).
#include <filesystem>

#include "../test_util.h"
#include "trace_test_util.h"

using namespace tpusim;
using tpusim::test::error_of;
using tpusim::test::parse_text;
using tpusim::test::trace_text;

namespace {

std::string where_of(const std::string& text, std::int64_t cores = 8) {
    return error_of(text, cores).where();
}
std::string what_of(const std::string& text, std::int64_t cores = 8) {
    return error_of(text, cores).what_only();
}

const char* kMatmul = R"({"id": "mm", "kind": "matmul", "m": 128, "k": 256, "n": 512})";

}  // namespace

TEST_CASE("gemm.json: one bf16 matmul with 2*m*k*n FLOPs", "[trace]") {
    const Trace t = read_trace(test::source_dir() + "/traces/gemm.json", 8);
    REQUIRE(t.ops.size() == 1);
    const TraceOp& op = t.ops[0];
    CHECK(t.cores == 1);
    CHECK(op.kind == OpKind::Matmul);
    CHECK(op.dtype == DType::Bf16);
    CHECK(op.matmul.m == 8192);
    CHECK(op.matmul.k == 12288);
    CHECK(op.matmul.n == 12288);
    // A multiply-add is two FLOPs: 2 x 8192 x 12288 x 12288.
    CHECK(op_flops(op) == std::int64_t{2} * 8192 * 12288 * 12288);
    // bf16 operands (2 bytes): lhs m x k, rhs k x n; result m x n.
    CHECK(op_bytes_in(op) == 2 * (std::int64_t{8192} * 12288 + std::int64_t{12288} * 12288));
    CHECK(op_bytes_out(op) == 2 * std::int64_t{8192} * 12288);
    CHECK(op.line == 2);
}

TEST_CASE("every trace in traces/ reads, in topological order", "[trace]") {
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(test::source_dir() + "/traces")) {
        if (e.path().extension() != ".json") continue;
        ++files;
        INFO(e.path());
        const Trace t = read_trace(e.path().string(), 8);
        CHECK(t.name == e.path().stem().string());
        CHECK(!t.ops.empty());
        for (std::size_t i = 0; i < t.ops.size(); ++i) {
            for (std::size_t d : t.ops[i].deps) CHECK(d < i);
            CHECK(t.ops[i].line > 0);
        }
    }
    CHECK(files >= 5);
}

TEST_CASE("bert_base_train_step.json all-reduces every parameter once", "[trace]") {
    const Trace t = read_trace(test::source_dir() + "/traces/bert_base_train_step.json", 8);
    CHECK(t.cores == 8);
    // BERT-base: 12 layers of 4 h^2 + 2 h f weights, biases and LayerNorms, plus embeddings
    // (vocab + positions + 2 token types) x h with their LayerNorm, and the MLM head (h x h
    // transform, its bias and LayerNorm, the output bias): ~110 M parameters, all f32.
    const std::int64_t h = 768, f = 3072, vocab = 30522, seq = 512;
    const std::int64_t layer = 4 * (h * h + h) + 2 * h * f + f + h + 4 * h;
    const std::int64_t params = 12 * layer + (vocab + seq + 2) * h + 2 * h + h * h + 3 * h + vocab;
    std::int64_t reduced = 0, updated = 0;
    for (const auto& op : t.ops) {
        if (op.kind == OpKind::AllReduce) {
            reduced += op.bytes;
            CHECK(op.replica_groups.size() == 1);
            CHECK(op.replica_groups[0].size() == 8);
        }
        if (op.kind == OpKind::Vector && op.vector.op == VectorOp::Adam)
            updated += op.vector.elements();
    }
    CHECK(reduced == 4 * params);
    CHECK(updated == params);
}

TEST_CASE("top-level errors name the JSON pointer", "[trace]") {
    CHECK(where_of(R"({"version": 1, "ops": []})") == "/format");
    CHECK(what_of(R"({"format": "hlo", "version": 1, "ops": []})") ==
          R"(expected "tpusim.trace", got "hlo")");
    CHECK(where_of(R"({"format": "tpusim.trace", "ops": []})") == "/version");
    CHECK(what_of(R"({"format": "tpusim.trace", "version": 3, "ops": []})") ==
          "unsupported version 3 (this tpusim reads versions 1 and 2)");
    CHECK(what_of(R"({"format": "tpusim.trace", "version": "1", "ops": []})") ==
          "unsupported version \"1\" (this tpusim reads versions 1 and 2)");
    CHECK(where_of(trace_text(kMatmul, R"(, "extra": 1)")) == "/extra");
    CHECK(what_of(trace_text("")) == "the trace has no ops");
    CHECK(what_of("[1]").find("top level must be a JSON object") != std::string::npos);
    // More cores than the board has; the default is all of the board's.
    CHECK(where_of(trace_text(kMatmul, R"(, "cores": 16)")) == "/cores");
    CHECK(what_of(trace_text(kMatmul, R"(, "cores": 4)"), 2) ==
          "the trace needs 4 cores but the board has 2");
    CHECK(parse_text(trace_text(kMatmul), 2).cores == 2);
    CHECK(where_of(trace_text(kMatmul, R"(, "cores": 0)")) == "/cores");
    // parameter_bytes: a non-negative integer when given; -1 (undeclared) by default.
    CHECK(parse_text(trace_text(kMatmul)).parameter_bytes == -1);
    CHECK(parse_text(trace_text(kMatmul, R"(, "parameter_bytes": 4096)")).parameter_bytes == 4096);
    CHECK(where_of(trace_text(kMatmul, R"(, "parameter_bytes": -1)")) == "/parameter_bytes");
    CHECK(what_of(trace_text(kMatmul, R"(, "parameter_bytes": "8")")) ==
          "expected a non-negative integer, got \"8\"");
}

TEST_CASE("op errors name the op and the problem", "[trace]") {
    auto op_error = [](const std::string& op) {
        const InputError e = error_of(trace_text(op));
        return e.where() + ": " + e.what_only();
    };
    CHECK(op_error(R"({"kind": "matmul", "m": 1, "k": 1, "n": 1})") == R"(ops[0]: missing "id")");
    CHECK(op_error(R"({"id": 7, "kind": "copy", "bytes": 1})") ==
          R"(ops[0]: "id" must be a string, got an integer)");
    CHECK(op_error(R"({"id": "x", "kind": "fft"})").rfind(R"(op "x": unknown kind "fft")", 0) == 0);
    CHECK(op_error(R"({"id": "x"})").rfind(R"(op "x": missing "kind")", 0) == 0);
    CHECK(op_error(R"({"id": "mm", "kind": "matmul", "m": 1, "n": 1})") ==
          R"(op "mm": missing "k" (a matmul needs m, k and n))");
    CHECK(op_error(R"({"id": "mm", "kind": "matmul", "m": 2.5, "k": 1, "n": 1})") ==
          R"(op "mm": "m" must be an integer, got a non-integer number)");
    CHECK(op_error(R"({"id": "mm", "kind": "matmul", "m": [1], "k": 1, "n": 1})") ==
          R"(op "mm": "m" must be an integer, got an array)");
    CHECK(op_error(R"({"id": "mm", "kind": "matmul", "m": 0, "k": 1, "n": 1})") ==
          R"(op "mm": "m" must be a positive integer, got 0)");
    CHECK(op_error(R"({"id": "c", "kind": "copy", "bytes": -1})") ==
          R"(op "c": "bytes" must be a positive integer, got -1)");
    CHECK(op_error(R"({"id": "mm", "kind": "matmul", "m": 1, "k": 1, "n": 1, "colz": 1})") ==
          R"(op "mm": unknown key "colz" for a matmul op)");
    // A field of another kind is unknown here too.
    CHECK(op_error(R"({"id": "c", "kind": "copy", "bytes": 8, "m": 1})") ==
          R"(op "c": unknown key "m" for a copy op)");
    CHECK(op_error(R"({"id": "mm", "kind": "matmul", "m": 1, "k": 1, "n": 1, "fused": 1})") ==
          R"(op "mm": "fused" must be true or false, got an integer)");
    CHECK(op_error(R"({"id": "mm", "kind": "matmul", "m": 1, "k": 1, "n": 1, "dtype": "fp8"})")
              .rfind(R"(op "mm": unknown dtype "fp8")", 0) == 0);
    CHECK(op_error(R"({"id": "v", "kind": "vector", "op": "softmax", "elements": 8})") ==
          R"(op "v": softmax needs "rows" and "cols" (it runs along cols))");
    CHECK(op_error(R"({"id": "v", "kind": "vector", "op": "add", "elements": 8, "rows": 2})") ==
          R"(op "v": give either "elements" or "rows" and "cols")");
    CHECK(op_error(R"({"id": "v", "kind": "vector", "op": "nope", "elements": 8})")
              .rfind(R"(op "v": unknown vector op "nope")", 0) == 0);
    CHECK(op_error(R"({"id": "k", "kind": "conv2d", "batch": 1, "h": 2, "w": 2, "c_in": 1,
                       "c_out": 1, "kh": 3, "kw": 3, "padding": "valid"})") ==
          R"(op "k": a 3x3 filter does not fit a 2x2 input with "valid" padding)");
    CHECK(op_error(R"({"id": "c", "kind": "copy", "bytes": 8, "vmem_operands": [0]})") ==
          R"(op "c": "vmem_operands" applies to matmul, conv2d and vector ops only)");
    CHECK(op_error(R"({"id": "v", "kind": "vector", "op": "relu", "elements": 8,
                       "vmem_operands": [1]})") ==
          R"(op "v": "vmem_operands": operand 1 does not exist (this op has 1: its inputs))");
    CHECK(op_error(R"({"id": "v", "kind": "vector", "op": "relu", "elements": 8, "fused": true,
                       "vmem_operands": [0]})")
              .rfind(R"(op "v": "vmem_operands" applies to a vector op that is not fused)", 0) ==
          0);
    CHECK(op_error(R"({"id": "d", "kind": "copy", "bytes": 8, "deps": [1]})") ==
          R"(op "d": "deps" must list op ids (strings), got an integer)");
}

TEST_CASE("absurd sizes and 64-bit overflow are errors, 2^40 is not", "[trace]") {
    auto mm = [](const std::string& fields) {
        return trace_text(R"({"id": "mm", "kind": "matmul", )" + fields + "}");
    };
    CHECK(what_of(mm(R"("m": 1099511627777, "k": 1, "n": 1)")) ==
          R"("m" is absurdly large: 1099511627777 (at most 2^40))");
    CHECK(what_of(mm(R"("m": 18446744073709551615, "k": 1, "n": 1)")) ==
          R"("m" is out of range (at most 2^40))");
    CHECK(what_of(mm(R"("m": 1e30, "k": 1, "n": 1)")) == R"("m" is out of range (at most 2^40))");
    // 2 x 2^20 x 2^20 x 2^20 x 2^20 = 2^81 FLOPs.
    CHECK(what_of(mm(R"("batch": 1048576, "m": 1048576, "k": 1048576, "n": 1048576)")) ==
          "its FLOP count overflows 64 bits");
    // 2 x 2^40 x 2^10 x 2^10 = 2^61 FLOPs fits, but the lhs is 2^50 elements x 2 bytes and
    // the result 2^50 x 2 bytes: also fine (2^51 < 2^63).
    const Trace t = parse_text(mm(R"("m": 1099511627776, "k": 1024, "n": 1024)"));
    CHECK(op_flops(t.ops[0]) == (std::int64_t{1} << 61));
    CHECK(op_bytes_out(t.ops[0]) == (std::int64_t{1} << 51));
    // A 2^40 x 2^40 vector op overflows bytes (2^81 elements) before FLOPs are looked at.
    CHECK(what_of(trace_text(R"({"id": "v", "kind": "vector", "op": "convert", "rows":
              1099511627776, "cols": 1099511627776})")) == "its operand bytes overflow 64 bits");
}

TEST_CASE("op lines come from the file", "[trace]") {
    test::TempDir dir;
    const std::string path = dir.write("lines.json", R"({"format": "tpusim.trace", "version": 1,
 "ops": [
  {"id": "a", "kind": "copy", "bytes": 64},

  {"id": "b", "kind": "copy",
   "bytes": 64, "deps": ["a"]},
  {"id": "a", "kind": "copy", "bytes": 64}
]})");
    try {
        read_trace(path, 8);
        FAIL("duplicate id not detected");
    } catch (const InputError& e) {
        CHECK(e.file() == path);
        CHECK(e.where() == R"(op "a")");
        CHECK(e.what_only() == "duplicate id (first used by ops[0], line 3)");
    }
    const std::string ok = dir.write("ok.json", R"({"format": "tpusim.trace", "version": 1,
 "name": "n", "ops": [{"id": "a", "kind": "copy", "bytes": 64},
  {"id": "b", "kind": "copy", "bytes": 64, "comment": "[{ \" ]}"}, {"id": "c", "kind": "copy",
  "bytes": 64}]})");
    const Trace t = read_trace(ok, 8);
    CHECK(t.name == "n");
    REQUIRE(t.ops.size() == 3);
    CHECK(t.ops[0].line == 2);
    CHECK(t.ops[1].line == 3);
    CHECK(t.ops[2].line == 3);
}

TEST_CASE("every file in traces/bad/ is rejected with a located error", "[trace]") {
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(test::source_dir() + "/traces/bad")) {
        ++files;
        INFO(e.path());
        try {
            read_trace(e.path().string(), 8);
            FAIL("accepted");
        } catch (const InputError& err) {
            CHECK(err.file() == e.path().string());
            CHECK(!err.what_only().empty());
        }
    }
    CHECK(files >= 30);
}

TEST_CASE("a matmul's operands may each have their own dtype", "[trace]") {
    // An f32 activation into a bf16 matmul (XLA's convert fused into the dot).
    const Trace t = parse_text(trace_text(
        R"({"id": "mm", "kind": "matmul", "m": 256, "k": 512, "n": 128, "lhs_dtype": "f32"})"));
    const TraceOp& mm = t.ops.at(0);
    CHECK(mm.lhs_type() == DType::F32);
    CHECK(mm.rhs_type() == DType::Bf16);
    CHECK(op_hbm_bytes_in(mm) == std::int64_t{256} * 512 * 4 + std::int64_t{512} * 128 * 2);
    CHECK(op_bytes_out(mm) == std::int64_t{256} * 128 * 2);
    // A conv2d's filter in f32, the input as the dtype says.
    const Trace c = parse_text(trace_text(
        R"({"id": "c", "kind": "conv2d", "batch": 1, "h": 8, "w": 8, "c_in": 4, "c_out": 8,
            "kh": 3, "kw": 3, "rhs_dtype": "f32"})"));
    CHECK(op_hbm_bytes_in(c.ops.at(0)) == 8 * 8 * 4 * 2 + 3 * 3 * 4 * 8 * 4);
    // Only matmul and conv2d have operands of their own types.
    CHECK(
        error_of(
            trace_text(
                R"({"id": "v", "kind": "vector", "op": "relu", "elements": 8, "lhs_dtype": "f32"})"))
            .what_only() == R"(unknown key "lhs_dtype" for a vector op)");
    CHECK(error_of(
              trace_text(
                  R"({"id": "mm", "kind": "matmul", "m": 1, "k": 1, "n": 1, "rhs_dtype": "f64"})"))
              .what_only()
              .rfind(R"(unknown rhs_dtype "f64")", 0) == 0);
}

TEST_CASE("operands name the dep each HBM operand reads, or null for a parameter", "[trace]") {
    const Trace t = parse_text(trace_text(
        R"({"id": "s", "kind": "vector", "op": "exp", "rows": 1, "cols": 1},
           {"id": "x", "kind": "vector", "op": "exp", "rows": 64, "cols": 128},
           {"id": "a", "kind": "vector", "op": "add", "rows": 64, "cols": 128,
            "deps": ["s", "x", "s"], "operands": [null, "x"]})"));
    const TraceOp& a = t.ops[2];
    REQUIRE(a.deps.size() == 2);  // s once, at its first place
    CHECK(a.operands == std::vector<int>{-1, 1});
    CHECK(op_operand_dep(a, 0) == -1);  // a parameter
    CHECK(op_operand_dep(a, 1) == 1);   // x
    CHECK(op_operand_dep(a, 2) == -1);  // past the list
    // Without the list, operand j is deps[j].
    const Trace u = parse_text(trace_text(
        R"({"id": "x", "kind": "vector", "op": "exp", "rows": 64, "cols": 128},
           {"id": "a", "kind": "vector", "op": "add", "rows": 64, "cols": 128, "deps": ["x"]})"));
    CHECK(op_operand_dep(u.ops[1], 0) == 0);
    CHECK(op_operand_dep(u.ops[1], 1) == -1);
    CHECK(what_of(trace_text(
              R"({"id": "x", "kind": "vector", "op": "exp", "rows": 64, "cols": 128},
                 {"id": "a", "kind": "vector", "op": "add", "rows": 64, "cols": 128,
                  "operands": ["x"]})")) == "\"operands\" names \"x\", which is not in \"deps\"");
    CHECK(what_of(trace_text(
                      R"({"id": "a", "kind": "vector", "op": "add", "rows": 64, "cols": 128,
                  "operands": [3]})"))
              .find("\"operands\" must list op ids of \"deps\" or null") == 0);
}

TEST_CASE("one JSON scan: element lines of the named array, duplicate keys, nesting", "[trace]") {
    // "ops" as a value and in a nested object must not count; only the top-level key's array.
    const std::string text =
        "{\"name\": \"ops\", \"meta\": {\"ops\": [{}]},\n"
        " \"ops\": [\n"
        "  {\"id\": \"a\\\"[{\"},\n"
        "  {\"id\": \"b\",\n"
        "   \"x\": [1, {\"y\": 2}]}, {\"id\": \"c\"}\n"
        " ]}\n";
    tpusim::JsonLines lines{"ops", {}};
    const auto j = tpusim::parse_json_text(text, "t.json", &lines);
    CHECK(j["ops"].size() == 3);
    CHECK(lines.element_lines == std::vector<int>{3, 4, 5});
    // The second "b" is at line 2, column 13; reported after the text parses.
    auto message = [](const std::string& json) {
        try {
            tpusim::parse_json_text(json, "x.json");
        } catch (const tpusim::InputError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK(message("{\"a\": {\"b\": 1,\n \"c\": 2, \"b\": 3}}") ==
          "x.json: line 2, column 10: duplicate key \"b\" (an object names each key once)");
    // A malformed text with a duplicate key is reported as malformed, where it breaks.
    CHECK(message("{\"a\": 1, \"a\": }").find("malformed JSON") != std::string::npos);
    const std::string deep(tpusim::kMaxJsonNesting + 1, '[');
    CHECK(message(deep) == "x.json: line 1, column " + std::to_string(tpusim::kMaxJsonNesting + 1) +
                               ": JSON nested deeper than " +
                               std::to_string(tpusim::kMaxJsonNesting) + " levels");
}
