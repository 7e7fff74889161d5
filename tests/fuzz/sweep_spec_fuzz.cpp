// libFuzzer harness: the sweep spec reader (src/cli/sweep_spec.cpp, sweep_axes.cpp), spec ->
// points, with no worker process and no database: every value is checked against the base
// config's keys and types, the axes expand, and each point's workload source is substituted.
//
// Input: a sweep spec (docs/sweep.md), read as if it sat in a scratch folder beside copies of
// the committed configs: "base": "tpu_v3_8.json" and variants extending "tpu_v2_8.json" load.
// The expansion is capped at 4,096 points (tpusim sweep's cap is 1,000,000: a spec declaring
// that many is honest work, proportional to its size, and would show up as a timeout).
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "sweep.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string& dir = tpusim::fuzz::scratch_with_configs();
    const std::string text = tpusim::fuzz::text_of(data, size);
    tpusim::fuzz::expect_input_error_only([&] {
        namespace sw = tpusim::cli::sweep;
        const sw::Spec spec = sw::parse_spec(text, dir + "/fuzz.sweep.json", dir, 4096);
        for (const sw::Point& p : spec.points) (void)sw::workload_source(spec, p);
    });
    return 0;
}
