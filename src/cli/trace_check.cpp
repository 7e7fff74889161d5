// `tpusim trace check`: reads and validates a trace (docs/trace-format.md) and prints a
// one-line summary: ops by kind, FLOPs and bytes. No simulation.
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "common.h"
#include "hlo_options.h"
#include "tpusim/common/error.h"
#include "tpusim/common/types.h"
#include "tpusim/program/hbm_footprint.h"
#include "tpusim/program/program.h"
#include "tpusim/program/remat.h"
#include "tpusim/trace/hlo.h"
#include "tpusim/trace/trace.h"

namespace tpusim::cli {

namespace {

struct CheckOptions {
    std::string trace, hlo;
    HloCliOptions hlo_opts;
    std::string config;
    std::vector<std::string> sets;
    bool json = false;
    bool lower = false;
};

// Sums over every op and every core that runs it: up to 100,000 ops of up to 2^63 each.
using Total = unsigned __int128;

std::string to_string(Total v) {
    if (v == 0) return "0";
    std::string s;
    while (v > 0) {
        s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
        v /= 10;
    }
    return s;
}

void run_check(const CheckOptions& o) {
    const TpuConfig cfg = o.config.empty() ? TpuConfig{} : load_config(o.config, o.sets);
    if (o.trace.empty() == o.hlo.empty())
        throw InputError("tpusim trace check", "", "give a program: --trace T.json or --hlo F.hlo");
    HloImportStats stats;
    const Trace t = o.hlo.empty() ? read_trace(o.trace, cfg.cores())
                                  : load_hlo(o.hlo, o.hlo_opts, cfg, stats, o.json);
    // As `run` does: rematerialised where that makes it fit; a program that cannot fit is not ok.
    RematStats remat;
    const std::optional<Trace> fitted = fit_hbm(t, cfg, remat);
    const Trace& ft = fitted ? *fitted : t;
    // --lower: the lowering `run` does, without simulating, so that its errors (an op that
    // cannot fit VMEM, a DMA outside its buffer) show here too.
    std::size_t instructions = 0;
    if (o.lower) {
        const Program p = lower_with_progress(t, cfg, !o.json);
        for (const auto& core : p.cores) instructions += core.instrs.size();
        for (const auto& w : p.warnings) std::cerr << w << "\n";
    }
    const HbmFootprint fp = hbm_footprint(ft);
    std::map<std::string, std::size_t> by_kind;
    std::map<std::string, Total> flops_by_kind;
    Total flops = 0, bytes_in = 0, bytes_out = 0, ici = 0;
    const auto trips = op_trips(t);  // a loop body's figures count once per trip
    for (std::size_t i = 0; i < t.ops.size(); ++i) {
        const TraceOp& op = t.ops[i];
        const auto cores = static_cast<Total>(op_core_count(t, op)) * static_cast<Total>(trips[i]);
        ++by_kind[op_kind_name(op.kind)];
        flops += static_cast<Total>(op_flops(op)) * cores;
        flops_by_kind[op_kind_name(op.kind)] += static_cast<Total>(op_flops(op)) * cores;
        bytes_in += static_cast<Total>(op_bytes_in(op)) * cores;
        bytes_out += static_cast<Total>(op_bytes_out(op)) * cores;
        if (is_collective(op.kind)) ici += static_cast<Total>(op.bytes) * cores;
    }
    if (o.json) {
        nlohmann::json j = {{"name", t.name},
                            {"ops", t.ops.size()},
                            {"loops", t.loops.size()},
                            {"cores", t.cores},
                            {"by_kind", by_kind},
                            {"flops", to_string(flops)},
                            {"flops_by_kind", nlohmann::json::object()},
                            {"bytes_in", to_string(bytes_in)},
                            {"bytes_out", to_string(bytes_out)},
                            {"collective_bytes", to_string(ici)},
                            {"hbm_footprint_bytes_per_core", fp.peak_bytes},
                            {"rematerialized_ops", remat.ops}};
        for (const auto& [k, f] : flops_by_kind) j["flops_by_kind"][k] = to_string(f);
        if (o.lower) j["lowered_instructions"] = instructions;
        if (!o.hlo.empty()) j["warnings"] = stats.warnings;
        std::cout << j.dump(2) << "\n";
        return;
    }
    std::string kinds;
    for (const auto& [k, n] : by_kind)
        kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", k, n);
    std::cout << fmt::format(
        "{}: ok, {} ops ({}){}, {} core{}, {} FLOP, {} bytes in, {} bytes out, {} collective "
        "bytes (totals over all cores); live HBM footprint {:.3f} GiB per core at its peak "
        "(op \"{}\"){}\n",
        t.name, t.ops.size(), kinds,
        t.loops.empty()
            ? std::string()
            : fmt::format(" in {} loop{}", t.loops.size(), t.loops.size() == 1 ? "" : "s"),
        t.cores, t.cores == 1 ? "" : "s", to_string(flops), to_string(bytes_in),
        to_string(bytes_out), to_string(ici),
        static_cast<double>(fp.peak_bytes) / static_cast<double>(kGiB), ft.ops[fp.peak_op].id,
        remat.ops == 0
            ? std::string()
            : fmt::format(", after recomputing {} op{} as XLA rematerialises "
                          "({:.3f} GiB before)",
                          remat.ops, remat.ops == 1 ? "" : "s",
                          static_cast<double>(remat.peak_before) / static_cast<double>(kGiB)));
    if (o.lower)
        std::cout << fmt::format("  lowered for {}: {} instructions over {} core{}\n", cfg.name,
                                 instructions, t.cores, t.cores == 1 ? "" : "s");
}

}  // namespace

void add_trace_command(CLI::App& app) {
    const auto opts = std::make_shared<CheckOptions>();
    auto* trace = app.add_subcommand("trace", "work with trace files (docs/trace-format.md)");
    trace->require_subcommand(1);
    auto* cmd = trace->add_subcommand("check", "read and validate a trace; print a summary");
    auto* tr = cmd->add_option("--trace,-t", opts->trace, "trace file (JSON)");
    tr->excludes(cmd->add_option("--hlo", opts->hlo, "XLA HLO text module instead (docs/hlo.md)"));
    add_hlo_options(cmd, opts->hlo_opts);
    cmd->add_option("--config,-c", opts->config,
                    "board configuration; the trace may use at most its cores (default: the "
                    "built-in TPU v3-8 values)");
    cmd->add_option("--set", opts->sets, "override a config value (repeatable)")->take_all();
    cmd->add_flag("--json", opts->json, "print JSON instead of text");
    cmd->add_flag("--lower", opts->lower,
                  "also lower the program to per-core instructions as run does (no simulation), "
                  "so that lowering errors show: an op that cannot fit VMEM, a DMA outside its "
                  "buffer");
    cmd->callback([opts] { run_check(*opts); });
}

}  // namespace tpusim::cli
