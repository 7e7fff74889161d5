// ProgressLine: what a long run prints on a file or a pipe (CI logs): whole lines with the
// state, the share done and the time left, throttled; nothing during the quiet start.
#include "tpusim/common/progress.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

using tpusim::ProgressLine;

namespace {

std::string contents(std::FILE* f) {
    std::rewind(f);
    std::string s;
    char buf[512];
    while (std::fgets(buf, sizeof buf, f)) s += buf;
    return s;
}

}  // namespace

TEST_CASE("progress: on a file, whole lines with %, elapsed and time left", "[progress]") {
    std::FILE* f = std::tmpfile();
    REQUIRE(f != nullptr);
    {
        ProgressLine p(true, f, 0.0);
        p.update("simulated 1.000 ms", 0.25);
        p.update("simulated 2.000 ms", 0.5);  // within 10 s of the first: throttled
    }
    const std::string s = contents(f);
    std::fclose(f);
    CHECK(s.find('\r') == std::string::npos);
    CHECK(s == "[tpusim] simulated 1.000 ms, 25.0% done, 0 s elapsed, about 0 s left\n");
}

TEST_CASE("progress: unknown share, quiet start, disabled", "[progress]") {
    std::FILE* f = std::tmpfile();
    REQUIRE(f != nullptr);
    {
        ProgressLine unknown(true, f, 0.0);
        unknown.update("lowering 3 ops", -1.0);
        ProgressLine quiet(true, f, 3600.0);
        quiet.update("never", 0.5);
        ProgressLine off(false, f, 0.0);
        off.update("never", 0.5);
    }
    const std::string s = contents(f);
    std::fclose(f);
    CHECK(s == "[tpusim] lowering 3 ops, 0 s elapsed\n");
}
