#pragma once
// Helpers for the trace tests: parse a trace from text, or capture the error it raises.
#include <catch2/catch.hpp>
#include <string>

#include "tpusim/common/error.h"
#include "tpusim/common/json_io.h"
#include "tpusim/trace/trace.h"

namespace tpusim::test {

// A v1 trace around `ops` (the text inside "ops": [...]) and extra top-level members.
inline std::string trace_text(const std::string& ops, const std::string& extra = "") {
    return R"({"format": "tpusim.trace", "version": 1)" + extra + R"(, "ops": [)" + ops + "]}";
}

inline Trace parse_text(const std::string& text, std::int64_t board_cores = 8) {
    return parse_trace(parse_json_text(text, "t.json"), "t.json", board_cores);
}

// The InputError that parsing `text` raises; fails the test when there is none.
inline InputError error_of(const std::string& text, std::int64_t board_cores = 8) {
    try {
        parse_text(text, board_cores);
    } catch (const InputError& e) {
        return e;
    }
    FAIL("no error for: " << text);
    return InputError("", "", "");
}

}  // namespace tpusim::test
