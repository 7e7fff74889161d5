// "extends" chains for what-if variants, their cycles, and the config dump round trip.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "../test_util.h"
#include "config_expect.h"
#include "tpusim/config/tpu_config.h"

using tpusim::config_to_json;
using tpusim::load_config;
using tpusim::test::config_path;
using tpusim::test::expect_input_error;
using tpusim::test::TempDir;

TEST_CASE("config: extends layers a variant over its base", "[config][extends]") {
    TempDir dir;
    dir.write("base.json", R"({"name": "base", "mxu": {"rows": 64, "cols": 64},
                               "chip": {"clock_mhz": 500}})");
    const std::string variant =
        dir.write("variant.json", R"({"extends": "base.json", "name": "variant",
                                      "mxu": {"cols": 256}})");
    const auto cfg = load_config(variant);
    CHECK(cfg.name == "variant");      // the variant wins
    CHECK(cfg.mxu.cols == 256);        // a sibling key inside a section is merged, not replaced
    CHECK(cfg.mxu.rows == 64);         // from the base
    CHECK(cfg.chip.clock_mhz == 500);  // a section only the base sets
    CHECK(cfg.hbm.stacks == tpusim::HbmConfig{}.stacks);  // neither sets it: the default
}

TEST_CASE("config: a three-level chain applies in order", "[config][extends]") {
    TempDir dir;
    dir.write("a.json", R"({"name": "a", "core": {"mxus": 1}, "vmem": {"capacity_mib": 8}})");
    dir.write("b.json", R"({"extends": "a.json", "name": "b", "core": {"mxus": 2}})");
    const std::string c = dir.write("c.json", R"({"extends": "b.json", "core": {"mxus": 4}})");
    const auto cfg = load_config(c);
    CHECK(cfg.name == "b");
    CHECK(cfg.core.mxus == 4);
    CHECK(cfg.vmem.capacity_mib == 8);
}

TEST_CASE("config: extends is relative to the file that names it", "[config][extends]") {
    TempDir dir;
    std::filesystem::create_directories(dir.path("boards/base"));
    dir.write("boards/base/v.json", R"({"name": "deep", "mxu": {"rows": 32}})");
    dir.write("boards/mid.json", R"({"extends": "base/v.json", "mxu": {"cols": 32}})");
    const std::string top = dir.write("top.json", R"({"extends": "boards/mid.json"})");
    const auto cfg = load_config(top);
    CHECK(cfg.name == "deep");
    CHECK(cfg.mxu.rows == 32);
    CHECK(cfg.mxu.cols == 32);
    // The same chain when loaded through a path with "..".
    const auto again = load_config(dir.path("boards/../top.json"));
    CHECK(config_to_json(again) == config_to_json(cfg));
}

TEST_CASE("config: the shipped what-if variant extends v3-8", "[config][extends]") {
    const auto v3 = load_config(config_path("tpu_v3_8.json"));
    const auto big = load_config(config_path("tpu_v3_8_mxu256.json"));
    CHECK(big.mxu.rows == 256);
    CHECK(big.mxu.cols == 256);
    // A what-if has no published figure of its own.
    CHECK(big.board.quoted_peak_tflops == 0.0);
    // Everything but the name, description, quoted figure and the MXU shape comes from v3-8.
    auto a = config_to_json(v3), b = config_to_json(big);
    for (auto* j : {&a, &b}) {
        j->erase("name");
        j->erase("description");
        (*j)["board"].erase("quoted_peak_tflops");
        (*j)["board"].erase("quoted_note");
        (*j)["mxu"].erase("rows");
        (*j)["mxu"].erase("cols");
    }
    CHECK(a == b);
}

TEST_CASE("config: extends cycles are errors", "[config][extends][errors]") {
    TempDir dir;
    SECTION("a file that extends itself") {
        const std::string self = dir.write("self.json", R"({"extends": "self.json"})");
        expect_input_error([&] { load_config(self); }, self, "/extends", "extends cycle");
    }
    SECTION("two files") {
        const std::string a = dir.write("a.json", R"({"extends": "b.json"})");
        const std::string b = dir.write("b.json", R"({"extends": "a.json"})");
        // The file that closes the cycle is named; the message lists the chain.
        const auto msg =
            expect_input_error([&] { load_config(a); }, a, "/extends", "extends cycle");
        CHECK_THAT(msg, Catch::Matchers::Contains("b.json"));
    }
    SECTION("three files, entered in the middle") {
        dir.write("x.json", R"({"extends": "y.json"})");
        const std::string y = dir.write("y.json", R"({"extends": "z.json"})");
        dir.write("z.json", R"({"extends": "x.json"})");
        expect_input_error([&] { load_config(y); }, y, "/extends", "extends cycle");
    }
    SECTION("a cycle through a subdirectory and back") {
        std::filesystem::create_directories(dir.path("sub"));
        const std::string top = dir.write("top.json", R"({"extends": "sub/inner.json"})");
        dir.write("sub/inner.json", R"({"extends": "../top.json"})");
        expect_input_error([&] { load_config(top); }, dir.path("sub/../top.json"), "/extends",
                           "extends cycle");
    }
}

TEST_CASE("config: bad extends values are errors", "[config][extends][errors]") {
    TempDir dir;
    SECTION("not a string") {
        const std::string f = dir.write("f.json", R"({"extends": 3})");
        expect_input_error([&] { load_config(f); }, f, "/extends", "expected a file name");
    }
    SECTION("empty") {
        const std::string f = dir.write("f.json", R"({"extends": ""})");
        expect_input_error([&] { load_config(f); }, f, "/extends", "expected a file name");
    }
    SECTION("a missing base is the referring file's error, at its key") {
        const std::string f = dir.write("f.json", R"({"extends": "nowhere.json"})");
        expect_input_error([&] { load_config(f); }, f, "/extends",
                           "names " + dir.path("nowhere.json") + ", which does not exist");
    }
    SECTION("an error in the base names the base file") {
        dir.write("base.json", R"({"mxu": {"rows": 0}})");
        const std::string f = dir.write("f.json", R"({"extends": "base.json"})");
        expect_input_error([&] { load_config(f); }, dir.path("base.json"), "/mxu/rows",
                           "in [1, 4096]");
    }
    SECTION("a bad value in the base fixed by the variant is fine") {
        dir.write("base.json", R"({"mxu": {"rows": 0}})");
        const std::string f =
            dir.write("f.json", R"({"extends": "base.json", "mxu": {"rows": 8}})");
        CHECK(load_config(f).mxu.rows == 8);
    }
    SECTION("a chain deeper than 16") {
        dir.write("c0.json", "{}");
        for (int i = 1; i <= 20; ++i) {
            dir.write("c" + std::to_string(i) + ".json",
                      "{\"extends\": \"c" + std::to_string(i - 1) + ".json\"}");
        }
        CHECK(load_config(dir.path("c16.json")).name == "tpu");  // 16 hops: still fine
        CHECK_THROWS_WITH(load_config(dir.path("c20.json")),
                          Catch::Matchers::Contains("deeper than 16"));
    }
}

TEST_CASE("config: dump round trip gives the same config", "[config][dump]") {
    for (const char* name : {"tpu_v2_8.json", "tpu_v3_8.json", "tpu_v3_8_mxu256.json"}) {
        INFO(name);
        const auto cfg = load_config(config_path(name), {"hbm.timing.tCL=15", "name=dumped"});
        const nlohmann::json dumped = config_to_json(cfg);
        TempDir dir;
        const std::string path = dir.write("dump.json", dumped.dump(2));
        CHECK(config_to_json(load_config(path)) == dumped);
        CHECK(dumped["hbm"]["timing"]["tCL"] == 15);
        CHECK(dumped["name"] == "dumped");
        CHECK_FALSE(dumped.contains("extends"));
    }
}

TEST_CASE("config: the board files load and differ where the hardware does", "[config]") {
    const auto v2 = load_config(config_path("tpu_v2_8.json"));
    const auto v3 = load_config(config_path("tpu_v3_8.json"));
    CHECK(v2.core.mxus == 1);
    CHECK(v3.core.mxus == 2);
    CHECK(v2.chip.clock_mhz == 700);
    CHECK(v3.chip.clock_mhz == 940);
    CHECK(v2.chips() == 4);
    CHECK(v3.cores() == 8);
}

TEST_CASE("config: the key table lists every dumped key", "[config][dump]") {
    const std::string table = tpusim::config_key_table();
    const nlohmann::json dumped = config_to_json(tpusim::TpuConfig{});
    // Every leaf of the dump appears as a dotted key in the table.
    std::size_t leaves = 0;
    const nlohmann::json flat_dump = dumped.flatten();
    for (const auto& flat : flat_dump.items()) {
        std::string dotted = flat.key().substr(1);
        for (auto& c : dotted) c = c == '/' ? '.' : c;
        INFO(dotted);
        CHECK_THAT(table, Catch::Matchers::Contains("| `" + dotted + "` |"));
        ++leaves;
    }
    CHECK(leaves > 50);
}
