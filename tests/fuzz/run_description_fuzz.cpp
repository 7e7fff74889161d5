// libFuzzer harness: the train run-description reader (src/train/run_description.cpp) and what
// `tpusim train` builds from it before simulating: the device step (infeed ops taken out), the
// infeed bytes per sample resolved from it, the lowered step and its warm-up repetition
// (repeat_steps), and the host model's pipeline over the whole run with a fixed device step
// (simulate_pipeline: saturation, the run-length cap). No board simulation.
//
// Input: a run description (docs/train.md); optionally, after a line "%%", the step program as
// a trace (docs/trace-format.md). Without one, a small fixed step with an infeed op is used.
#include <algorithm>
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "tpusim/common/json_io.h"
#include "tpusim/program/from_trace.h"
#include "tpusim/trace/trace.h"
#include "tpusim/train/input_pipeline.h"
#include "tpusim/train/run_description.h"
#include "tpusim/train/step_program.h"

namespace {

// Infeed, a gemm on it, a fused activation and an all-reduce of the gradient on two cores.
const char* const kStep = R"({"format": "tpusim.trace", "version": 1, "cores": 2, "ops": [
  {"id": "x", "kind": "infeed", "bytes": 65536},
  {"id": "mm", "kind": "matmul", "m": 256, "k": 128, "n": 256, "dtype": "bf16", "deps": ["x"]},
  {"id": "act", "kind": "vector", "op": "gelu", "elements": 65536, "deps": ["mm"],
   "fused": true},
  {"id": "grad", "kind": "all_reduce", "bytes": 131072, "deps": ["act"]}]})";

// tpusim train's default --warmup: the steps simulated before reuse.
constexpr std::int64_t kWarmup = 3;
// Runs of up to this many steps go through the host model (a few ms under the sanitizers);
// longer ones are valid but would slow the fuzzer without reaching new code.
constexpr std::int64_t kMaxPipelineSteps = 1 << 16;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const tpusim::TpuConfig& cfg = tpusim::fuzz::committed_config("tpu_v3_8.json");
    const auto parts = tpusim::fuzz::split_sections(tpusim::fuzz::text_of(data, size), "%%");
    tpusim::fuzz::expect_input_error_only([&] {
        tpusim::RunDescription run = tpusim::parse_run_description(
            tpusim::parse_json_text(parts[0], "fuzz.run.json"), "fuzz.run.json");
        const std::string program = parts.size() > 1 ? "step.json" : "fixed_step.json";
        const tpusim::Trace trace =
            tpusim::parse_trace_text(parts.size() > 1 ? parts[1] : kStep, program, cfg.cores());
        const tpusim::StepProgram step = tpusim::device_step(trace);
        tpusim::resolve_step_inputs(run, step, program);
        (void)run.steps_per_epoch();
        const std::int64_t total = run.epochs * run.steps_per_epoch();
        if (total <= kMaxPipelineSteps) {
            const tpusim::HostTiming h =
                tpusim::host_timing(cfg.host, run, cfg.chips(), step.ops, cfg.chip.clock_mhz);
            (void)tpusim::simulate_pipeline(h, run, [](std::int64_t) { return 1000000; });
        }
        if (tpusim::fuzz::small_enough_to_lower(step.trace))
            (void)tpusim::repeat_steps(tpusim::lower_trace(step.trace, cfg),
                                       std::min(total, kWarmup));
    });
    return 0;
}
