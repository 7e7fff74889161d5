// libFuzzer harness: small traces read, lowered and simulated on the committed TPU v3-8 config,
// within a budget of simulated cycles. A trace the reader accepts must simulate to its end, or
// pass the budget; a stall or any other error is a bug.
//
// Input: a trace file (docs/trace-format.md). Only small programs are simulated (kMaxOps ops,
// kMaxInstructions instructions over all cores), so that one input takes milliseconds.
//
// SystemC elaborates once per simulation context, and libFuzzer runs every input in one process:
// each simulated input gets a fresh context, in which the board is built anew.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <systemc>

#include "fuzz_support.h"
#include "tpusim/common/sanitizer.h"
#include "tpusim/program/from_trace.h"
#include "tpusim/sim/simulator.h"
#include "tpusim/trace/trace.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TPUSIM_FUZZ_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TPUSIM_FUZZ_ASAN 1
#endif

#ifdef TPUSIM_FUZZ_ASAN
#include <sanitizer/asan_interface.h>
#include <sys/syscall.h>
#include <unistd.h>

// SystemC maps each coroutine stack with mmap and unmaps it when its context is deleted;
// ASan (clang 14) intercepts mmap but not munmap, so the poison that instrumented frames left
// in the stack's shadow (redzones, use-after-scope) outlives the mapping. The next context's
// stacks map at the same addresses, and live frames there were reported on that stale poison
// (tests/fuzz/regressions/README.md). This program's munmap, which libsystemc's calls reach,
// clears the shadow of what it unmaps first.
extern "C" int munmap(void* addr, std::size_t len) {
    __asan_unpoison_memory_region(addr, len);
    return static_cast<int>(syscall(SYS_munmap, addr, len));
}
#endif

namespace {

constexpr std::size_t kMaxOps = 24;
constexpr std::size_t kMaxInstructions = 4096;
// About 4 ms of TPU time at 940 MHz: enough for every small op to finish, small enough that
// a trace of huge copies stops within the fuzzer's time limit per input.
constexpr tpusim::Cycle kMaxCycles = tpusim::Cycle{1} << 22;

// A new simulation context for the next board (the old board is gone by now). The context that
// existed when libsystemc was loaded stays: the library's static events (sc_event::none ...)
// belong to it and unregister from it at exit. Later ones are deleted after their run.
void fresh_systemc_context() {
    static sc_core::sc_simcontext* const original = sc_core::sc_get_curr_simcontext();
    if (sc_core::sc_curr_simcontext != original) delete sc_core::sc_curr_simcontext;
    sc_core::sc_curr_simcontext = new sc_core::sc_simcontext;
    sc_core::sc_default_global_context = sc_core::sc_curr_simcontext;
}

// Reads, lowers and simulates one trace; InputError for bad input, as the CLI.
void simulate(const std::string& text) {
    const tpusim::TpuConfig& cfg = tpusim::fuzz::committed_config("tpu_v3_8.json");
    const tpusim::Trace t = tpusim::parse_trace_text(text, "fuzz.json", cfg.cores());
    if (t.ops.size() > kMaxOps || !tpusim::fuzz::small_enough_to_lower(t)) return;
    const tpusim::Program program = tpusim::lower_trace(t, cfg);
    std::size_t instructions = 0;
    for (const auto& core : program.cores) instructions += core.instrs.size();
    if (instructions > kMaxInstructions) return;
    tpusim::RunOptions opts;
    opts.progress = false;
    opts.max_cycles = kMaxCycles;
    try {
        tpusim::Simulator sim(cfg, opts);
        (void)sim.run(program);
    } catch (const tpusim::CycleBudgetExceeded&) {
        // Too long for a fuzzer: not a finding.
    }
    tpusim::announce_main_stack_to_sanitizers();
    fresh_systemc_context();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    setenv("SC_COPYRIGHT_MESSAGE", "DISABLE", 0);
    // The first board calibrates its HBM model (seconds under the sanitizers; cached for the
    // process): here, outside the time limit per input.
    simulate(R"({"format": "tpusim.trace", "version": 1, "cores": 1,
                 "ops": [{"id": "mm", "kind": "matmul", "m": 8, "k": 8, "n": 8}]})");
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text = tpusim::fuzz::text_of(data, size);
    tpusim::fuzz::expect_input_error_only([&] { simulate(text); });
    return 0;
}
