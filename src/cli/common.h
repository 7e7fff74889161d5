#pragma once
// Shared CLI plumbing: the options every command takes and the config they select.
#include <CLI/CLI.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tpusim/config/tpu_config.h"

namespace tpusim {
struct RunResult;
class Simulator;
struct Program;
struct Trace;
}  // namespace tpusim

namespace tpusim::cli {

// Thrown by a command that ends with a status other than 0 after saying why on stderr
// (an interrupted or incomplete sweep); main() returns `status`.
struct CliExit {
    int status = 1;
};

struct CommonOptions {
    std::string config;
    std::vector<std::string> sets;
    bool json = false;

    TpuConfig load() const { return load_config(config, sets); }
};

// --config F (required), --set key=value (repeatable), --json.
void add_common_options(CLI::App* cmd, CommonOptions& opts, bool with_json = true);

// A run over several chips that could not use SPMD symmetry (docs/pods.md) says why on stderr,
// once: "info: SPMD symmetry not used: <reason>; all N cores simulated". Nothing when it was
// used, turned off (--no-symmetry), or the program fits one chip.
void print_symmetry_info(const RunResult& r, const TpuConfig& cfg);

// lower_trace with a progress line on stderr while it works (a large trace takes seconds).
Program lower_with_progress(const Trace& trace, const TpuConfig& cfg, bool progress,
                            std::int64_t lowered_trips = 0);
// Runs this command again with `flag` added (SystemC cannot elaborate a second board in one
// process), after printing `note` on stderr; e.g. --no-reuse when reuse did not apply.
[[noreturn]] void rerun_with(const char* flag, const std::string& note);
// sim.run(program), or, when SPMD symmetry over replica groups breaks during the run
// (SymmetryBroken), this command again with --no-symmetry.
RunResult run_or_rerun_full(Simulator& sim, const Program& program);
// The lowering's warnings on stderr, "warning: " first; the first 8 and a count of the rest.
void print_warnings(const std::vector<std::string>& warnings);

// Each command registers itself; main.cpp calls these in order.
// The kernel of each op of a run report's "ops" array, for a report without "kernels"
// (`tpusim compare`, `tpusim report`): an op whose bottleneck says "fused into X" belongs to X's
// kernel, followed along the chain; any other op is its kernel's root. Keyed by every op id;
// the ops need string ids.
std::map<std::string, std::string> kernel_roots(const nlohmann::json& ops);

void add_info_command(CLI::App& app);
void add_config_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_trace_command(CLI::App& app);
void add_import_command(CLI::App& app);
void add_sweep_command(CLI::App& app);
void add_compare_command(CLI::App& app);  // compare.cpp
void add_report_command(CLI::App& app);   // report_html.cpp
// Sub-commands of `tpusim bench`.
void add_bench_commands(CLI::App& bench);
void add_bench_peak_command(CLI::App& bench);
void add_bench_mxu_command(CLI::App& bench);
void add_bench_hbm_command(CLI::App& bench);
void add_bench_ici_command(CLI::App& bench);
void add_bench_vpu_command(CLI::App& bench);

}  // namespace tpusim::cli
