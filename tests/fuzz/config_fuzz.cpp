// libFuzzer harness: the config loader with "extends" and --set overrides, then the lowering of
// a small fixed trace with every config it accepts (a config that loads must be usable).
//
// Input: up to three sections, separated by a line "%%":
//   1. the config file (written as input.json),
//   2. optionally a second file (base.json), which the first may name in "extends",
//   3. optionally --set overrides, one a line.
// Both files sit in a scratch folder beside copies of the committed configs, so an input may
// also extend "tpu_v3_8.json" and the rest.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "tpusim/config/tpu_config.h"
#include "tpusim/program/from_trace.h"
#include "tpusim/trace/trace.h"

namespace fs = std::filesystem;

namespace {

// The shared scratch folder with the committed configs copied in (fuzz_support.h).
fs::path scratch() { return tpusim::fuzz::scratch_with_configs(); }

void write_file(const fs::path& p, const std::string& text) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << text;
}

// A gemm, a fused element-wise op and an all-reduce: every lowering path a config steers.
const char* const kTrace = R"({"format": "tpusim.trace", "version": 1, "ops": [
  {"id": "mm", "kind": "matmul", "m": 300, "k": 200, "n": 520, "dtype": "bf16"},
  {"id": "act", "kind": "vector", "op": "gelu", "elements": 156000, "deps": ["mm"],
   "fused": true},
  {"id": "norm", "kind": "vector", "op": "layernorm", "rows": 300, "cols": 520, "deps": ["act"]},
  {"id": "sum", "kind": "all_reduce", "bytes": 312000, "deps": ["norm"]}]})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto parts = tpusim::fuzz::split_sections(tpusim::fuzz::text_of(data, size), "%%");
    const fs::path input = scratch() / "input.json";
    write_file(input, parts[0]);
    std::error_code ec;
    fs::remove(scratch() / "base.json", ec);
    if (parts.size() > 1) write_file(scratch() / "base.json", parts[1]);
    std::vector<std::string> sets;
    if (parts.size() > 2) {
        std::istringstream lines(parts[2]);
        for (std::string line; std::getline(lines, line);) sets.push_back(line);
    }
    tpusim::fuzz::expect_input_error_only([&] {
        const tpusim::TpuConfig cfg = tpusim::load_config(input.string(), sets);
        (void)tpusim::config_to_json(cfg).dump();
        nlohmann::json trace = nlohmann::json::parse(kTrace);
        trace["cores"] = cfg.cores() < 2 ? cfg.cores() : 2;
        const tpusim::Trace t = tpusim::parse_trace(trace, "fixed.json", cfg.cores());
        (void)tpusim::lower_trace(t, cfg);
    });
    return 0;
}
