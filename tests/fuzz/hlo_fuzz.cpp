// libFuzzer harness: the XLA HLO text reader and the import that turns a module into a trace
// (src/trace/hlo/), as `tpusim run --hlo` uses them, then the program lowering of the trace, on
// the committed TPU v3-8 config. No simulation.
//
// Input: an HLO text module (docs/hlo.md). A while loop whose trip count cannot be found runs
// twice (as --while-trips 2 would make it). Traces past small_enough_to_lower are not lowered.
#include <cstdint>

#include "fuzz_support.h"
#include "tpusim/program/from_trace.h"
#include "tpusim/trace/hlo.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const tpusim::TpuConfig& cfg = tpusim::fuzz::committed_config("tpu_v3_8.json");
    std::string text = tpusim::fuzz::text_of(data, size);
    tpusim::fuzz::expect_input_error_only([&] {
        tpusim::HloImportOptions opts;
        opts.mxu_rows = cfg.mxu.rows;
        opts.mxu_cols = cfg.mxu.cols;
        opts.while_trips = 2;
        // A smaller budget than the default: modules that expand past it fail alike, within
        // milliseconds per input.
        opts.max_instructions = std::int64_t{1} << 14;
        const tpusim::HloModule m = tpusim::parse_hlo(std::move(text), "fuzz.hlo");
        const tpusim::Trace t = tpusim::hlo_to_checked_trace(m, opts, cfg.cores());
        (void)tpusim::trace_to_json(t);
        if (tpusim::fuzz::small_enough_to_lower(t)) (void)tpusim::lower_trace(t, cfg);
    });
    return 0;
}
