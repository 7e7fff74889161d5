// Every class of bad config input is rejected with the file, the JSON pointer (or line and
// column) and what was expected; none of them crashes.
#include <catch2/catch.hpp>
#include <string>

#include "../test_util.h"
#include "config_expect.h"
#include "tpusim/common/json_io.h"
#include "tpusim/config/tpu_config.h"

using tpusim::load_config;
using tpusim::test::expect_input_error;
using tpusim::test::TempDir;

namespace {

// Loads a one-file config with this text and checks the error it raises.
void expect_file_error(const std::string& text, const std::string& where,
                       const std::string& fragment) {
    TempDir dir;
    const std::string path = dir.write("bad.json", text);
    expect_input_error([&] { load_config(path); }, path, where, fragment);
}

}  // namespace

TEST_CASE("config: unreadable input files are located errors", "[config][errors]") {
    TempDir dir;
    SECTION("missing file") {
        const std::string path = dir.path("does_not_exist.json");
        expect_input_error([&] { load_config(path); }, path, "", "cannot open file");
    }
    SECTION("a directory is not a config") {
        const std::string path = dir.write("x.json", "{}");
        const std::string d = path.substr(0, path.rfind('/'));
        // Opening a directory as a stream succeeds on Linux but reading fails or yields
        // nothing: either way it is bad input, not a crash.
        CHECK_THROWS_AS(load_config(d), tpusim::InputError);
    }
    SECTION("empty file") { expect_file_error("", "", "empty file"); }
    SECTION("whitespace only") { expect_file_error(" \n\t \r\n", "", "empty file"); }
}

TEST_CASE("config: malformed JSON names line and column", "[config][errors]") {
    SECTION("missing value") {
        expect_file_error("{\n  \"name\": \n}", "line 3, column 1", "malformed JSON");
    }
    SECTION("trailing comma") {
        expect_file_error("{\"name\": \"x\",}", "line 1, column 14", "malformed JSON");
    }
    SECTION("truncated") {
        expect_file_error("{\"mxu\": {\"rows\": 128", "line 1, column 21", "malformed JSON");
    }
    SECTION("garbage") {
        // The parser reads "no" before it knows this is no literal.
        expect_file_error("not json", "line 1, column 2", "malformed JSON");
    }
    SECTION("number too large for a double") {
        expect_file_error("{\"chip\": {\"clock_mhz\": 1e400}}", "line 1, column 24", "1e400");
    }
}

TEST_CASE("config: non-UTF-8 bytes are rejected", "[config][errors]") {
    SECTION("inside a string") {
        expect_file_error("{\"name\": \"ab\xff\xfe\"}", "line 1, column 13", "malformed JSON");
    }
    SECTION("outside a string") {
        expect_file_error("{\"name\": \"x\" \xc3}", "line 1, column 14", "malformed JSON");
    }
}

TEST_CASE("config: absurd nesting is refused before parsing", "[config][errors]") {
    const int depth = 100000;
    const std::string text = std::string(depth, '[') + std::string(depth, ']');
    // The 65th bracket (column 65) is one level too deep.
    expect_file_error(text, "line 1, column " + std::to_string(tpusim::kMaxJsonNesting + 1),
                      "nested deeper than");
    // Brackets inside strings do not count.
    TempDir dir;
    const std::string ok =
        dir.write("ok.json", "{\"description\": \"" + std::string(1000, '[') + "\"}");
    CHECK(load_config(ok).description == std::string(1000, '['));
}

TEST_CASE("config: the top level must be an object", "[config][errors]") {
    expect_file_error("[1, 2]", "", "expected a JSON object at the top level, got an array");
    expect_file_error("42", "", "got an integer");
    expect_file_error("\"tpu\"", "", "got a string");
}

TEST_CASE("config: unknown keys are rejected with their pointer", "[config][errors]") {
    SECTION("top level") {
        expect_file_error("{\"nmae\": \"x\"}", "/nmae", "unknown key \"nmae\"");
    }
    SECTION("nested") { expect_file_error("{\"mxu\": {\"row\": 128}}", "/mxu/row", "unknown key"); }
    SECTION("deeply nested") {
        expect_file_error("{\"hbm\": {\"timing\": {\"tXYZ\": 3}}}", "/hbm/timing/tXYZ",
                          "unknown key");
    }
    SECTION("the message lists the known keys") {
        expect_file_error("{\"mxu\": {\"row\": 128}}", "/mxu/row", "rows");
    }
    SECTION("pointer escaping per RFC 6901") {
        expect_file_error("{\"a/b~c\": 1}", "/a~1b~0c", "unknown key");
    }
    SECTION("extends is only a top-level key") {
        expect_file_error("{\"mxu\": {\"extends\": \"x.json\"}}", "/mxu/extends", "unknown key");
    }
}

TEST_CASE("config: wrong types are rejected with what was expected", "[config][errors]") {
    SECTION("string for an integer") {
        expect_file_error("{\"mxu\": {\"rows\": \"128\"}}", "/mxu/rows",
                          "expected an integer, got a string");
    }
    SECTION("fraction for an integer") {
        expect_file_error("{\"mxu\": {\"rows\": 128.5}}", "/mxu/rows", "expected an integer");
    }
    SECTION("integer too large for 64 bits") {
        expect_file_error("{\"hbm\": {\"rows\": 18446744073709551615}}", "/hbm/rows",
                          "integer out of range");
    }
    SECTION("string for a number") {
        expect_file_error("{\"chip\": {\"clock_mhz\": \"fast\"}}", "/chip/clock_mhz",
                          "expected a number, got a string");
    }
    SECTION("null for a number") {
        expect_file_error("{\"chip\": {\"clock_mhz\": null}}", "/chip/clock_mhz",
                          "expected a number, got null");
    }
    SECTION("number for a boolean") {
        expect_file_error("{\"mxu\": {\"weight_double_buffer\": 1}}", "/mxu/weight_double_buffer",
                          "expected true or false");
    }
    SECTION("number for a string") {
        expect_file_error("{\"name\": 5}", "/name", "expected a string, got an integer");
    }
    SECTION("string outside its choices") {
        expect_file_error("{\"ici\": {\"all_reduce_algorithm\": \"tree\"}}",
                          "/ici/all_reduce_algorithm", "expected one of ring, torus2d");
    }
    SECTION("scalar for a section") {
        expect_file_error("{\"mxu\": 128}", "/mxu", "expected an object, got an integer");
    }
    SECTION("array for a section") {
        expect_file_error("{\"hbm\": {\"timing\": [14]}}", "/hbm/timing",
                          "expected an object, got an array");
    }
}

TEST_CASE("config: out-of-range values are rejected", "[config][errors]") {
    SECTION("negative size") {
        expect_file_error("{\"vmem\": {\"capacity_mib\": -1}}", "/vmem/capacity_mib",
                          "expected an integer in [1, 1024], got -1");
    }
    SECTION("zero clock") {
        expect_file_error("{\"chip\": {\"clock_mhz\": 0}}", "/chip/clock_mhz",
                          "expected a number in [1, 10000], got 0");
    }
    SECTION("zero bandwidth") {
        expect_file_error("{\"ici\": {\"link_bandwidth_gbps\": 0.0}}", "/ici/link_bandwidth_gbps",
                          "expected a number in [0.01, 10000]");
    }
    SECTION("negative data rate") {
        expect_file_error("{\"hbm\": {\"data_rate_mtps\": -1757.8}}", "/hbm/data_rate_mtps",
                          "in [100, 20000]");
    }
    SECTION("non-power-of-two HBM geometry, with the reason") {
        expect_file_error("{\"hbm\": {\"bank_groups\": 3}}", "/hbm/bank_groups",
                          "expected a power of two (the HBM address map takes it as a bit "
                          "field) in [1, 16], got 3");
    }
    SECTION("an array of no rows") {
        expect_file_error("{\"mxu\": {\"rows\": 0}}", "/mxu/rows",
                          "expected an integer in [1, 4096], got 0");
    }
    SECTION("above the maximum") {
        expect_file_error("{\"mxu\": {\"cols\": 8192}}", "/mxu/cols", "in [1, 4096]");
    }
    SECTION("zero chips") {
        expect_file_error("{\"board\": {\"chips_x\": 0}}", "/board/chips_x", "in [1, 64]");
    }
    SECTION("fraction above one") {
        expect_file_error("{\"hbm\": {\"write_drain_high\": 1.5}}", "/hbm/write_drain_high",
                          "in [0, 1]");
    }
}

TEST_CASE("config: values inconsistent with each other are rejected", "[config][errors]") {
    SECTION("weight load faster than the array is tall") {
        expect_file_error("{\"mxu\": {\"rows\": 64, \"weight_load_rows_per_cycle\": 128}}",
                          "/mxu/weight_load_rows_per_cycle", "at most mxu.rows (64)");
    }
    SECTION("write drain thresholds out of order") {
        expect_file_error("{\"hbm\": {\"write_drain_low\": 0.8, \"write_drain_high\": 0.5}}",
                          "/hbm/write_drain_low", "less than hbm.write_drain_high");
    }
    SECTION("tRAS shorter than tRCD") {
        expect_file_error("{\"hbm\": {\"timing\": {\"tRAS\": 10, \"tRCD\": 14}}}",
                          "/hbm/timing/tRAS", "at least tRCD");
    }
    SECTION("row smaller than a burst") {
        // 64-bit pseudo-channel x BL64 = 4096 bits = 512 B > a 256 B row.
        expect_file_error("{\"hbm\": {\"row_bytes\": 256, \"timing\": {\"burst_length\": 64}}}",
                          "/hbm/row_bytes", "at least one burst");
    }
    SECTION("address mapping with a repeated field") {
        expect_file_error("{\"hbm\": {\"address_mapping\": \"ro-ba-ba-co-pc-ch-st\"}}",
                          "/hbm/address_mapping", "each of ro, ba, bg, co, pc, ch, st once");
    }
    SECTION("address mapping missing a field") {
        expect_file_error("{\"hbm\": {\"address_mapping\": \"ro-ba-co-pc-ch-st\"}}",
                          "/hbm/address_mapping", "once");
    }
    SECTION("channels that do not split between the cores") {
        expect_file_error("{\"chip\": {\"cores_per_chip\": 3}}", "/chip/cores_per_chip",
                          "split into a power of two per core");
    }
}

TEST_CASE("config: a relation error names the source that set the offending value",
          "[config][errors]") {
    // The file is consistent; the override breaks the relation through the other field, so
    // the error must blame the override and its key, not the defaults.
    const std::string v3 = tpusim::test::config_path("tpu_v3_8.json");
    const std::string set = "hbm.write_drain_high=0.1";
    expect_input_error([&] { load_config(v3, {set}); }, "--set " + set, "/hbm/write_drain_high",
                       "greater than hbm.write_drain_low");
}
