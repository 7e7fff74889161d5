#pragma once
// Shared by the libFuzzer harnesses (tests/fuzz/*_fuzz.cpp) and by the replay runner that feeds
// the kept corpus and regression inputs to the same entry points in the normal build.
//
// Contract of every harness: an input is either accepted or rejected with an InputError (what
// the CLI prints as one located line and exit status 2). Anything else that escapes the reader,
// the lowering or the simulation is a bug: the harness prints it and aborts, which libFuzzer and
// the replay runner both report as a failure.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tpusim/config/tpu_config.h"
#include "tpusim/trace/trace.h"

namespace tpusim::fuzz {

// Runs `body`; returns normally for success or an InputError, aborts for anything else.
void expect_input_error_only(const std::function<void()>& body);

// The input as text (libFuzzer hands bytes, not a string).
inline std::string text_of(const std::uint8_t* data, std::size_t size) {
    return std::string(reinterpret_cast<const char*>(data), size);
}

// Splits `text` at lines that are exactly `separator` (the line breaks around it go with it).
std::vector<std::string> split_sections(const std::string& text, std::string_view separator);

// Whether the harnesses lower this trace. Lowering time grows with the work the trace declares
// (tiles, chunks), which is bounded only by the HBM capacity check; a fuzzer that kept finding
// large valid programs would report their honest lowering time as timeouts. The harnesses lower
// traces of at most 2^40 FLOP and 2^30 bytes moved (thousands of tiles; a loop body's ops
// count once per trip), where any slowness is a bug.
bool small_enough_to_lower(const Trace& t);

// A committed config under configs/, loaded once per process.
const TpuConfig& committed_config(const std::string& file_name);

// A scratch folder of this process's own (removed at exit) holding copies of the committed
// configs (configs/*.json, configs/compat/*.json), so that an input may name them by file name.
const std::string& scratch_with_configs();

// The source tree (TPUSIM_SOURCE_DIR at build time; the environment variable of that name
// wins, so a moved checkout still finds its configs).
std::string source_dir();

}  // namespace tpusim::fuzz
