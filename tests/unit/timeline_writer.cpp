// Timeline: Chrome trace-event JSON (Perfetto). Written, parsed back with nlohmann, checked.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "../test_util.h"
#include "tpusim/common/error.h"
#include "tpusim/stats/timeline.h"

using nlohmann::json;
using tpusim::Timeline;

namespace {

json written(const Timeline& t) {
    std::ostringstream out;
    t.write(out);
    return json::parse(out.str());  // throws (fails the test) on anything Perfetto could not read
}

std::vector<json> events_with_ph(const json& trace, const std::string& ph) {
    std::vector<json> v;
    for (const auto& e : trace["traceEvents"]) {
        if (e["ph"] == ph) v.push_back(e);
    }
    return v;
}

}  // namespace

TEST_CASE("timeline: spans become complete events in microseconds", "[timeline]") {
    const double mhz = 940.0;
    Timeline t(mhz);
    const auto mxu0 = t.track("core 0", "MXU 0");
    const auto mxu1 = t.track("core 0", "MXU 1");
    const auto dma = t.track("core 1", "DMA");
    CHECK(t.track("core 0", "MXU 1") == mxu1);  // idempotent
    t.span(mxu0, "matmul \"a\"", 0, 940);       // one microsecond at 940 MHz
    t.span(mxu1, "matmul", 470, 1880);
    t.span(dma, "copy", 100, 50);  // end before start is clamped to an empty span
    REQUIRE(t.events() == 3);

    const json j = written(t);
    CHECK(j["otherData"]["clock_mhz"].get<double>() == mhz);
    CHECK(j["otherData"]["dropped_events"] == 0);
    const auto x = events_with_ph(j, "X");
    REQUIRE(x.size() == 3);
    CHECK(x[0]["name"] == "matmul \"a\"");
    CHECK(x[0]["ts"].get<double>() == Approx(0.0));
    CHECK(x[0]["dur"].get<double>() == Approx(940 / mhz));
    CHECK(x[1]["ts"].get<double>() == Approx(470 / mhz).margin(1e-4));
    CHECK(x[1]["dur"].get<double>() == Approx((1880 - 470) / mhz).margin(1e-4));
    CHECK(x[1]["args"]["start_cycle"] == 470);
    CHECK(x[1]["args"]["end_cycle"] == 1880);
    CHECK(x[2]["dur"].get<double>() == 0.0);
    // Two tracks of one process share its pid and differ in tid; the other process differs.
    CHECK(x[0]["pid"] == x[1]["pid"]);
    CHECK(x[0]["tid"] != x[1]["tid"]);
    CHECK(x[2]["pid"] != x[0]["pid"]);

    // Metadata names every process and thread that events refer to.
    std::map<int, std::string> processes;
    std::map<std::pair<int, int>, std::string> threads;
    for (const auto& m : events_with_ph(j, "M")) {
        if (m["name"] == "process_name") processes[m["pid"]] = m["args"]["name"];
        if (m["name"] == "thread_name") threads[{m["pid"], m["tid"]}] = m["args"]["name"];
    }
    CHECK(processes.at(x[0]["pid"]) == "core 0");
    CHECK(processes.at(x[2]["pid"]) == "core 1");
    CHECK(threads.at({x[0]["pid"], x[0]["tid"]}) == "MXU 0");
    CHECK(threads.at({x[1]["pid"], x[1]["tid"]}) == "MXU 1");
    CHECK(threads.at({x[2]["pid"], x[2]["tid"]}) == "DMA");
}

TEST_CASE("timeline: events past the cap are counted as dropped", "[timeline]") {
    Timeline t(1000.0, true, 3);
    const auto tr = t.track("core 0", "VPU");
    for (int i = 0; i < 5; ++i) t.span(tr, "op", i * 10, i * 10 + 5);
    CHECK(t.events() == 3);
    CHECK(t.dropped() == 2);
    const json j = written(t);
    CHECK(events_with_ph(j, "X").size() == 3);
    CHECK(j["otherData"]["dropped_events"] == 2);
}

TEST_CASE("timeline: a disabled timeline records nothing", "[timeline]") {
    Timeline t(1000.0, false);
    CHECK_FALSE(t.enabled());
    const auto tr = t.track("core 0", "MXU 0");
    t.span(tr, "matmul", 0, 100);
    CHECK(t.events() == 0);
    CHECK(t.dropped() == 0);
    CHECK(events_with_ph(written(t), "X").empty());
}

TEST_CASE("timeline: write_file round trip and unwritable paths", "[timeline]") {
    tpusim::test::TempDir dir;
    Timeline t(700.0);
    t.span(t.track("chip 0", "ICI +x"), "send", 7, 707);
    const std::string path = dir.path("t.trace.json");
    t.write_file(path);
    std::ifstream in(path);
    const json j = json::parse(in);
    const auto x = events_with_ph(j, "X");
    REQUIRE(x.size() == 1);
    CHECK(x[0]["dur"].get<double>() == Approx(1.0));
    CHECK_THROWS_AS(t.write_file(dir.path("no/such/dir/t.json")), tpusim::InputError);
}
