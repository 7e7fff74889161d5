// `--set dotted.key=value` overrides: type-checked, applied after every file, and every numeric
// parameter rejects -1 and non-numbers naming its key.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../test_util.h"
#include "config_expect.h"
#include "tpusim/common/json_io.h"
#include "tpusim/config/tpu_config.h"

using tpusim::AllReduceAlgorithm;
using tpusim::load_config;
using tpusim::test::config_path;
using tpusim::test::expect_input_error;
using tpusim::test::TempDir;

namespace {

const std::string& v3() {
    static const std::string p = config_path("tpu_v3_8.json");
    return p;
}

// Collects the dotted key and JSON pointer of every numeric parameter.
class NumericKeys : public tpusim::ConfigVisitor {
 public:
    struct Key {
        std::string dotted, pointer;
    };
    std::vector<Key> keys;
    void value(const char* key, std::int64_t&, tpusim::Limits, const char*, const char*) override {
        add(key);
    }
    void value(const char* key, double&, tpusim::Limits, const char*, const char*) override {
        add(key);
    }
    void value(const char*, bool&, const char*) override {}
    void value(const char*, std::string&, const std::vector<std::string>&, const char*) override {}

 protected:
    bool begin_section(const char* key, const char*) override {
        stack_.push_back(stack_.empty()
                             ? Key{key, tpusim::json_pointer_child("", key)}
                             : Key{stack_.back().dotted + "." + key,
                                   tpusim::json_pointer_child(stack_.back().pointer, key)});
        return true;
    }
    void end_section() override { stack_.pop_back(); }

 private:
    void add(const char* key) {
        if (stack_.empty()) {
            keys.push_back({key, tpusim::json_pointer_child("", key)});
        } else {
            keys.push_back({stack_.back().dotted + "." + key,
                            tpusim::json_pointer_child(stack_.back().pointer, key)});
        }
    }
    std::vector<Key> stack_;
};

}  // namespace

TEST_CASE("overrides: values replace the file's and later ones win", "[config][overrides]") {
    const auto base = load_config(v3());
    REQUIRE(base.mxu.rows == 128);
    const auto cfg = load_config(v3(), {"mxu.rows=256", "chip.clock_mhz=1000.5",
                                        "mxu.weight_double_buffer=false", "mxu.rows=512"});
    CHECK(cfg.mxu.rows == 512);  // the last --set of a key wins
    CHECK(cfg.mxu.cols == base.mxu.cols);
    CHECK(cfg.chip.clock_mhz == 1000.5);
    CHECK_FALSE(cfg.mxu.weight_double_buffer);
    // Overrides apply after the whole extends chain.
    const auto big = load_config(config_path("tpu_v3_8_mxu256.json"), {"mxu.cols=64"});
    CHECK(big.mxu.rows == 256);
    CHECK(big.mxu.cols == 64);
    // Arrays of any shape (issue 13): no power of two needed.
    const auto odd =
        load_config(v3(), {"mxu.rows=96", "mxu.cols=6", "mxu.weight_load_rows_per_cycle=3"});
    CHECK(odd.mxu.rows == 96);
    CHECK(odd.mxu.cols == 6);
}

TEST_CASE("overrides: strings may be bare words or JSON", "[config][overrides]") {
    CHECK(load_config(v3(), {"name=whatif"}).name == "whatif");
    CHECK(load_config(v3(), {"name=\"quoted\""}).name == "quoted");
    CHECK(load_config(v3(), {"name=123"}).name == "123");  // a string field takes the text
    CHECK(load_config(v3(), {"name=true"}).name == "true");
    CHECK(load_config(v3(), {"description="}).description.empty());
    CHECK(load_config(v3(), {"description=a=b"}).description == "a=b");  // first '=' splits
    CHECK(load_config(v3(), {"ici.all_reduce_algorithm=ring"}).ici.all_reduce_algorithm ==
          AllReduceAlgorithm::Ring);
    // A whole section as a JSON object.
    const auto cfg = load_config(v3(), {R"(mxu={"rows": 64, "cols": 32})"});
    CHECK(cfg.mxu.rows == 64);
    CHECK(cfg.mxu.cols == 32);
}

TEST_CASE("overrides: bad overrides name the override and the key", "[config][overrides]") {
    auto expect = [](const std::string& set, const std::string& where, const std::string& what) {
        expect_input_error([&] { load_config(v3(), {set}); }, "--set " + set, where, what);
    };
    SECTION("non-number for an integer") {
        expect("mxu.rows=abc", "/mxu/rows", "expected an integer, got a string");
    }
    SECTION("non-number for a number") {
        expect("chip.clock_mhz=fast", "/chip/clock_mhz", "expected a number");
    }
    SECTION("negative") {
        expect("chip.clock_mhz=-1", "/chip/clock_mhz", "expected a number in [1, 10000], got -1");
    }
    SECTION("non-power-of-two where the address map needs one") {
        expect("hbm.rows=1000", "/hbm/rows", "power of two (the HBM address map");
    }
    SECTION("too large for a double") {
        expect("chip.clock_mhz=1e400", "/chip/clock_mhz", "range of a double");
    }
    SECTION("non-boolean") {
        expect("mxu.overlap_tiles=maybe", "/mxu/overlap_tiles", "expected true or false");
    }
    SECTION("bad choice") {
        expect("ici.all_reduce_algorithm=tree", "/ici/all_reduce_algorithm",
               "one of ring, torus2d");
    }
    SECTION("unknown key") { expect("mxu.depth=3", "/mxu/depth", "unknown key \"depth\""); }
    SECTION("unknown section") { expect("gpu.rows=3", "/gpu", "unknown key \"gpu\""); }
    SECTION("key below a value") {
        expect("mxu.rows.x=1", "/mxu/rows", "expected an integer, got an object");
    }
    SECTION("scalar for a section") { expect("mxu=1", "/mxu", "expected an object"); }
    SECTION("extends cannot be overridden") {
        expect("extends=tpu_v2_8.json", "/extends", "cannot be overridden");
    }
    SECTION("no '='") { expect("mxu.rows", "", "expected dotted.key=value"); }
    SECTION("no key") { expect("=3", "", "expected dotted.key=value"); }
    SECTION("empty component") { expect("mxu..rows=3", "", "empty component"); }
    SECTION("relation broken by an override") {
        expect("mxu.weight_load_rows_per_cycle=256", "/mxu/weight_load_rows_per_cycle",
               "at most mxu.rows (128)");
    }
}

TEST_CASE("overrides: every numeric parameter rejects -1 and a non-number", "[config][overrides]") {
    NumericKeys visitor;
    tpusim::TpuConfig probe;
    probe.visit(visitor);
    REQUIRE(visitor.keys.size() > 40);
    for (const auto& k : visitor.keys) {
        for (const std::string value : {"-1", "abc"}) {
            const std::string set = k.dotted + "=" + value;
            INFO(set);
            expect_input_error([&] { load_config(v3(), {set}); }, "--set " + set, k.pointer,
                               "expected");
        }
    }
}
