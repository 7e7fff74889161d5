// StatGroup: counters registered once and read when the report is written, formulas evaluated
// lazily, children nested by name.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tpusim/stats/stats.h"

using tpusim::StatGroup;

namespace {

// A component as the models write them: plain integer members, registered once.
struct Unit {
    std::uint64_t busy_cycles_ = 0;
    std::uint64_t elapsed_cycles_ = 0;
    StatGroup stats_;
    explicit Unit(const std::string& name) : stats_(name, "a unit") {
        stats_.counter("busy_cycles", busy_cycles_, "cycles", "cycles doing work");
        stats_.counter("elapsed_cycles", elapsed_cycles_, "cycles", "cycles simulated");
        stats_.formula(
            "utilization",
            [this] {
                return static_cast<double>(busy_cycles_) / static_cast<double>(elapsed_cycles_);
            },
            "fraction", "busy / elapsed");
    }
};

}  // namespace

TEST_CASE("stats: counters are read when the report is written", "[stats]") {
    Unit u("mxu0");
    u.busy_cycles_ = 3;
    u.elapsed_cycles_ = 4;
    auto j = u.stats_.to_json();
    CHECK(j["busy_cycles"] == 3);
    CHECK(j["elapsed_cycles"] == 4);
    CHECK(j["utilization"].get<double>() == Approx(0.75));
    // The hot path increments the member; the group sees it without re-registering.
    u.busy_cycles_ += 1;
    j = u.stats_.to_json();
    CHECK(j["busy_cycles"] == 4);
    CHECK(j["utilization"].get<double>() == Approx(1.0));
    CHECK(u.stats_.name() == "mxu0");
}

TEST_CASE("stats: a formula that is not finite is written as null", "[stats]") {
    Unit u("idle");  // 0 / 0 cycles
    const auto j = u.stats_.to_json();
    CHECK(j["utilization"].is_null());
    CHECK(std::isnan(u.stats_.lookup("utilization")));
}

TEST_CASE("stats: counters hold 64-bit values exactly", "[stats]") {
    Unit u("big");
    u.busy_cycles_ = std::numeric_limits<std::uint64_t>::max();
    CHECK(u.stats_.to_json()["busy_cycles"].get<std::uint64_t>() ==
          std::numeric_limits<std::uint64_t>::max());
}

TEST_CASE("stats: children nest by name; lookup and describe follow the tree", "[stats]") {
    StatGroup chip("chip0", "chip 0");
    std::uint64_t hbm_bytes = 1024;
    chip.counter("hbm_bytes", hbm_bytes, "B", "bytes moved to and from HBM");
    Unit core0("core0"), core1("core1");
    core0.busy_cycles_ = 10;
    core0.elapsed_cycles_ = 20;
    core1.busy_cycles_ = 5;
    core1.elapsed_cycles_ = 20;
    chip.add_child(core0.stats_);
    chip.add_child(core1.stats_);

    const auto j = chip.to_json();
    CHECK(j["hbm_bytes"] == 1024);
    CHECK(j["core0"]["busy_cycles"] == 10);
    CHECK(j["core1"]["busy_cycles"] == 5);
    CHECK(j["core1"]["utilization"].get<double>() == Approx(0.25));

    CHECK(chip.lookup("hbm_bytes") == 1024.0);
    CHECK(chip.lookup("core0.busy_cycles") == 10.0);
    CHECK(chip.lookup("core0.utilization") == Approx(0.5));
    CHECK_THROWS_AS(chip.lookup("core2.busy_cycles"), std::out_of_range);
    CHECK_THROWS_AS(chip.lookup("core0.nothing"), std::out_of_range);
    CHECK_THROWS_AS(chip.lookup("nothing"), std::out_of_range);

    nlohmann::json d = nlohmann::json::object();
    chip.describe(d);
    CHECK(d.size() == 1 + 2 * 3);
    CHECK(d["chip0.hbm_bytes"]["unit"] == "B");
    CHECK(d["chip0.core0.busy_cycles"]["unit"] == "cycles");
    CHECK(d["chip0.core1.utilization"]["unit"] == "fraction");
    CHECK(d["chip0.core1.utilization"]["description"] == "busy / elapsed");
    nlohmann::json p = nlohmann::json::object();
    core0.stats_.describe(p, "board");
    CHECK(p.contains("board.core0.busy_cycles"));
}

TEST_CASE("stats: a copy reports its original's figures under its own names", "[stats]") {
    // Chip 1 was not simulated: it runs as chip 0 does (SPMD symmetry). Its group is a copy of
    // chip 0's, its core renamed, so the report lists it and totals count chip 0's core twice.
    StatGroup board("board", "the board");
    StatGroup chip0("chip0", "one chip");
    std::uint64_t hbm_bytes = 1024;
    chip0.counter("hbm_bytes", hbm_bytes, "B", "bytes moved to and from HBM");
    Unit core0("core0");
    core0.busy_cycles_ = 10;
    core0.elapsed_cycles_ = 20;
    chip0.add_child(core0.stats_);
    board.add_child(chip0);
    const StatGroup chip1("chip1", chip0, {{&core0.stats_, "core1"}});
    board.add_child(chip1);

    core0.busy_cycles_ = 15;  // read when the report is written, as the original's
    const auto j = board.to_json();
    CHECK(j["chip1"]["hbm_bytes"] == 1024);
    CHECK(j["chip1"]["core1"]["busy_cycles"] == 15);
    CHECK(j["chip1"]["core1"]["utilization"].get<double>() == Approx(0.75));
    CHECK_FALSE(j["chip1"].contains("core0"));
    CHECK(j["chip1"] == nlohmann::json({{"hbm_bytes", 1024}, {"core1", j["chip0"]["core0"]}}));

    const auto n = board.multiplicities();
    CHECK(n.at(&chip0) == 2);
    CHECK(n.at(&core0.stats_) == 2);
    CHECK(n.at(&board) == 1);
    CHECK(n.count(&chip1) == 0);  // a copy counts for its original

    // A copy of a copy stands for the original too.
    const StatGroup chip2("chip2", chip1, {});
    board.add_child(chip2);
    CHECK(board.multiplicities().at(&core0.stats_) == 3);
    CHECK(board.to_json()["chip2"]["core1"]["busy_cycles"] == 15);
}
