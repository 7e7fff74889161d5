#pragma once
// Helpers of the HLO import tests: a module's text imported as a trace, an op found by id.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "tpusim/trace/hlo.h"
#include "tpusim/trace/trace.h"

namespace tpusim::test {

inline Trace import(const std::string& text, std::int64_t board_cores = 8,
                    HloImportOptions opts = HloImportOptions{}) {
    return hlo_to_trace(parse_hlo(text, "t.hlo"), opts, board_cores);
}

inline const TraceOp& op_named(const Trace& t, const std::string& id) {
    for (const auto& op : t.ops)
        if (op.id == id) return op;
    FAIL("no op " << id);
    return t.ops.front();
}

}  // namespace tpusim::test
