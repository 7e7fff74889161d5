// Timeline: Chrome trace-event JSON (Perfetto). Written, parsed back with nlohmann, checked.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../test_util.h"
#include "tpusim/common/error.h"
#include "tpusim/stats/timeline.h"

using nlohmann::json;
using tpusim::Cycle;
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

namespace {

// Every (pid, tid) as Perfetto sees it: [ts, ts + dur) in whole nanoseconds.
std::map<std::pair<int, int>, std::vector<std::pair<std::int64_t, std::int64_t>>> slices(
    const json& j) {
    std::map<std::pair<int, int>, std::vector<std::pair<std::int64_t, std::int64_t>>> m;
    for (const auto& e : events_with_ph(j, "X")) {
        const double ts = e["ts"].get<double>() * 1000.0;
        const double dur = e["dur"].get<double>() * 1000.0;
        CHECK(ts == Approx(std::round(ts)).margin(1e-6));  // whole nanoseconds
        CHECK(dur == Approx(std::round(dur)).margin(1e-6));
        const auto s = static_cast<std::int64_t>(std::llround(ts));
        m[{e["pid"], e["tid"]}].push_back({s, s + std::llround(dur)});
    }
    for (auto& [k, v] : m) std::sort(v.begin(), v.end());
    return m;
}

}  // namespace

TEST_CASE("timeline: overlapping spans of one unit go to separate threads", "[timeline]") {
    // Three DMA descriptors in flight at once: [0, 100), [50, 150), [60, 70), then [100, 200)
    // which can reuse the first thread. Interval partitioning needs 3 threads.
    Timeline t(1000.0);  // 1 cycle = 1 ns
    const auto dma = t.track("core 0", "DMA");
    t.span(dma, "a", 0, 100);
    t.span(dma, "b", 50, 150);
    t.span(dma, "c", 60, 70);
    t.span(dma, "d", 100, 200);
    const json j = written(t);
    const auto m = slices(j);
    CHECK(m.size() == 3);
    for (const auto& [k, v] : m) {
        for (std::size_t i = 1; i < v.size(); ++i) CHECK(v[i].first >= v[i - 1].second);
    }
    std::set<std::string> names;
    for (const auto& e : events_with_ph(j, "M")) {
        if (e["name"] == "thread_name") names.insert(e["args"]["name"].get<std::string>());
    }
    CHECK(names == std::set<std::string>{"DMA", "DMA #2", "DMA #3"});
}

TEST_CASE("timeline: back-to-back spans meet exactly; unused tracks are not declared",
          "[timeline]") {
    // At 940 MHz a cycle is 1.0638 ns: rounding ts and dur separately made neighbours
    // overlap by a fraction of a nanosecond. Boundaries are rounded once, per cycle count.
    Timeline t(940.0);
    const auto vpu = t.track("core 0", "VPU");
    t.track("core 0", "host");  // registered, never used
    t.track("core 1", "DMA");   // a whole process without events
    for (Cycle c = 0; c < 1000; c += 7) t.span(vpu, "v", c, c + 7);
    const json j = written(t);
    const auto m = slices(j);
    REQUIRE(m.size() == 1);
    const auto& v = m.begin()->second;
    REQUIRE(v.size() == 143);
    for (std::size_t i = 1; i < v.size(); ++i) CHECK(v[i].first == v[i - 1].second);
    int processes = 0, threads = 0;
    for (const auto& e : events_with_ph(j, "M")) {
        processes += e["name"] == "process_name";
        threads += e["name"] == "thread_name";
    }
    CHECK(processes == 1);
    CHECK(threads == 1);
}

TEST_CASE("timeline: limits keep chosen cores and clip spans to the window", "[timeline]") {
    Timeline t(1000.0);  // 1 cycle = 1 ns
    tpusim::TimelineLimits l;
    l.cores = {1};
    l.from = 100;
    l.to = 200;
    t.limit(l);
    const auto c0 = t.track("core 0", "MXU 0");
    const auto c1 = t.track("core 1", "MXU 0");
    const auto c10 = t.track("core 10", "MXU 0");        // "core 1" is not a prefix match
    const auto link = t.track("ici chip 0", "link +x");  // not a core: always kept
    t.span(c0, "a", 120, 130);                           // another core
    t.span(c10, "a", 120, 130);                          // another core
    t.span(c1, "b", 50, 90);                             // before the window
    t.span(c1, "c", 90, 150);                            // clipped to [100, 150)
    t.span(c1, "d", 150, 250);                           // clipped to [150, 200)
    t.span(c1, "e", 210, 220);                           // after the window
    t.span(link, "f", 120, 140);                         // kept
    CHECK(t.events() == 3);
    CHECK(t.filtered() == 4);
    std::ostringstream out;
    t.write(out);
    const json j = json::parse(out.str());
    std::map<std::string, std::pair<double, double>> got;
    for (const auto& e : j["traceEvents"])
        if (e["ph"] == "X") got[e["name"]] = {e["ts"].get<double>(), e["dur"].get<double>()};
    CHECK(got.size() == 3);
    CHECK(got["c"] == std::make_pair(0.1, 0.05));
    CHECK(got["d"] == std::make_pair(0.15, 0.05));
    CHECK(got.count("f") == 1);
}
