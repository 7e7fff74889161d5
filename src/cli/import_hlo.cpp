// `tpusim import hlo FILE.hlo -o T.json`: an XLA HLO module as a trace (format v1, or v2 with
// loops), so that
// imported programs can be inspected, edited and replayed with `run --trace` (docs/hlo.md).
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "common.h"
#include "hlo_options.h"
#include "tpusim/common/error.h"
#include "tpusim/common/text_output.h"
#include "tpusim/trace/hlo.h"

namespace tpusim::cli {

void add_hlo_options(CLI::App* cmd, HloCliOptions& o) {
    cmd->add_option("--hlo-passes", o.passes,
                    fmt::format("passes of XLA's TPU pipeline to apply: all (default), none, or "
                                "a comma list of {} (docs/hlo.md)",
                                hlo_pass_names()));
    cmd->add_option("--while-trips", o.while_trips,
                    "trips of a while loop whose trip count the module does not tell");
    cmd->add_flag("--unroll-loops", o.unroll_loops,
                  "write every trip of a while loop out as trace ops instead of one trace loop "
                  "(docs/hlo.md)");
    cmd->add_option("--after-passes", o.after_passes,
                    "also write the module as tpusim runs it, after its passes, as HLO text "
                    "(fusions made by the pass written as fusion instructions; docs/hlo.md)");
}

Trace load_hlo(const std::string& path, const HloCliOptions& o, const TpuConfig& cfg,
               HloImportStats& stats, bool quiet) {
    HloImportOptions opts;
    opts.mxu_rows = cfg.mxu.rows;
    opts.mxu_cols = cfg.mxu.cols;
    const std::int64_t board_cores = cfg.cores();
    apply_hlo_passes(o.passes, opts);
    if (o.while_trips < 0) throw InputError("--while-trips", "", "must be a positive integer");
    opts.while_trips = o.while_trips;
    opts.unroll_loops = o.unroll_loops;
    Trace t;
    if (o.after_passes.empty()) {
        t = read_hlo_trace(path, opts, board_cores, &stats);
    } else {
        const HloModule m = read_hlo(path);
        const std::string text = print_hlo(hlo_after_passes(m, opts));
        write_text(o.after_passes, text);
        t = hlo_to_checked_trace(m, opts, board_cores, &stats);
    }
    if (!quiet)
        for (const auto& w : stats.warnings) std::cerr << w << "\n";
    return t;
}

namespace {

struct ImportHloOptions {
    std::string hlo, out, config;
    std::vector<std::string> sets;
    HloCliOptions ho;
};

}  // namespace

void add_import_command(CLI::App& app) {
    const auto o = std::make_shared<ImportHloOptions>();
    auto* imp = app.add_subcommand("import", "convert other program formats into traces");
    imp->require_subcommand(1);
    auto* cmd = imp->add_subcommand(
        "hlo", "an XLA HLO text module -> trace JSON (format v1; v2 with loops)");
    cmd->add_option("file", o->hlo, "HLO text file (XLA_FLAGS=--xla_dump_to=DIR writes them)")
        ->required();
    cmd->add_option("-o,--output", o->out, "write the trace here (default: stdout)");
    cmd->add_option("--config,-c", o->config,
                    "board configuration; the module may use at most its cores (default: the "
                    "built-in TPU v3-8 values)");
    cmd->add_option("--set", o->sets, "override a config value (repeatable)")->take_all();
    add_hlo_options(cmd, o->ho);
    cmd->callback([o] {
        const std::string &hlo = o->hlo, &out = o->out, &config = o->config;
        const TpuConfig cfg = config.empty() ? TpuConfig{} : load_config(config, o->sets);
        HloImportStats stats;
        const Trace t = load_hlo(hlo, o->ho, cfg, stats, false);
        const std::string text = trace_to_json(t);
        write_text(out.empty() ? "-" : out, text);
        if (out.empty()) return;
        std::cerr << fmt::format("{}: {} HLO instructions -> {} trace ops{} on {} core{} ({})\n",
                                 hlo, stats.instructions, t.ops.size(),
                                 t.loops.empty()
                                     ? std::string()
                                     : fmt::format(
                                           " ({} in {} loop{})",
                                           [&] {
                                               std::size_t n = 0;
                                               for (const auto& l : t.loops) n += l.count;
                                               return n;
                                           }(),
                                           t.loops.size(), t.loops.size() == 1 ? "" : "s"),
                                 t.cores, t.cores == 1 ? "" : "s", out);
    });
}

}  // namespace tpusim::cli
