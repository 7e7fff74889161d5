// libFuzzer harness: the trace reader (JSON syntax, every op and the links between ops) and the
// program lowering of every trace it accepts, on the committed TPU v3-8 config. No simulation
// (trace_sim_fuzz.cpp simulates small traces).
//
// Input: a trace file (docs/trace-format.md).
#include <cstdint>

#include "fuzz_support.h"
#include "tpusim/program/from_trace.h"
#include "tpusim/trace/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const tpusim::TpuConfig& cfg = tpusim::fuzz::committed_config("tpu_v3_8.json");
    const std::string text = tpusim::fuzz::text_of(data, size);
    tpusim::fuzz::expect_input_error_only([&] {
        const tpusim::Trace t = tpusim::parse_trace_text(text, "fuzz.json", cfg.cores());
        if (tpusim::fuzz::small_enough_to_lower(t)) (void)tpusim::lower_trace(t, cfg);
    });
    return 0;
}
