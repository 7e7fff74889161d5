// Reports: the envelope every command writes (tool, version, revision, command, config).
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "../test_util.h"
#include "tpusim/common/error.h"
#include "tpusim/common/text_output.h"
#include "tpusim/config/tpu_config.h"
#include "tpusim/stats/report.h"
#include "tpusim/stats/stats.h"

using nlohmann::json;

TEST_CASE("report: envelope keys, body and the config in effect", "[report]") {
    const auto cfg =
        tpusim::load_config(tpusim::test::config_path("tpu_v2_8.json"), {"mxu.rows=64"});
    tpusim::StatGroup stats("board");
    std::uint64_t cycles = 12345;
    stats.counter("cycles", cycles, "cycles", "simulated cycles");
    const json body = {{"cycles", cycles}, {"stats", stats.to_json()}};
    const json r = tpusim::make_report("bench mxu", cfg, body);
    CHECK(r["tool"] == "tpusim");
    CHECK(r["version"] == std::string(tpusim::ToolInfo::version()));
    CHECK_FALSE(r["version"].get<std::string>().empty());
    CHECK(r["git_revision"] == std::string(tpusim::ToolInfo::git_revision()));
    CHECK_FALSE(r["git_revision"].get<std::string>().empty());
    CHECK(r["command"] == "bench mxu");
    CHECK(r["config"] == tpusim::config_to_json(cfg));
    CHECK(r["config"]["mxu"]["rows"] == 64);  // the config in effect, overrides included
    CHECK(r["cycles"] == 12345);
    CHECK(r["stats"]["cycles"] == 12345);
    // A non-object body still gives a well-formed envelope.
    const json bare = tpusim::make_report("info", cfg, json::array());
    CHECK(bare["tool"] == "tpusim");
    CHECK(bare.size() == 5);
}

TEST_CASE("report: write_json round trip and unwritable paths", "[report]") {
    const auto cfg = tpusim::load_config(tpusim::test::config_path("tpu_v3_8.json"));
    const json r = tpusim::make_report("run", cfg, {{"seconds", 0.5}});
    tpusim::test::TempDir dir;
    const std::string path = dir.path("report.json");
    tpusim::write_json(path, r);
    std::ifstream in(path);
    CHECK(json::parse(in) == r);
    try {
        tpusim::write_json(dir.path("missing/dir/report.json"), r);
        FAIL("expected InputError");
    } catch (const tpusim::InputError& e) {
        CHECK(e.file() == dir.path("missing/dir/report.json"));
        CHECK(e.what_only() == "cannot write file");
    }
}

TEST_CASE("report: write_text names what it could not write", "[report]") {
    tpusim::test::TempDir dir;
    const std::string path = dir.path("ops.csv");
    tpusim::write_text(path, "id,kind\n", "the CSV file");
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    CHECK(line == "id,kind");
    try {
        tpusim::write_text(dir.path("missing/ops.csv"), "x", "the CSV file");
        FAIL("expected InputError");
    } catch (const tpusim::InputError& e) {
        CHECK(e.what_only() == "cannot write the CSV file");
    }
}
