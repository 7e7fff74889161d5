// `tpusim bench vpu`: one vector op, shown two ways. The VPU part is the loop the op lowers to
// (docs/vpu.md): its body per iteration (instructions and slot-cycles per VLIW slot), the
// bound each slot puts on the initiation interval, the binding slot, and the cycles of the
// whole loop from the VectorCostModel a Vpu owns in a run. The end-to-end part runs the op as a
// one-op trace on one core through the path `tpusim run` takes (lowering into HBM passes, DMA,
// VMEM, the Vpu module), so HBM-bound ops show as such.
#include <fmt/format.h>

#include <array>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "common.h"
#include "tpusim/arch/vpu/vector_cost.h"
#include "tpusim/common/error.h"
#include "tpusim/program/from_trace.h"
#include "tpusim/program/vector_lowering.h"
#include "tpusim/sim/simulator.h"
#include "tpusim/stats/report.h"
#include "tpusim/trace/trace.h"

namespace tpusim::cli {

namespace {

struct VpuBenchOptions {
    CommonOptions common;
    std::string op = "softmax";
    std::int64_t rows = 4096, cols = 4096;
    std::string dtype = "f32";
};

struct SlotRow {
    const char* unit;
    std::int64_t slots;
    double instrs;       // per iteration
    double slot_cycles;  // per iteration
    double bound;        // slot_cycles / slots: cycles per iteration this slot allows at best
};

void run_bench_vpu(const VpuBenchOptions& o) {
    const TpuConfig cfg = o.common.load();
    const std::string who = "tpusim bench vpu";
    if (o.dtype != "f32" && o.dtype != "bf16") throw InputError(who, "--dtype", "f32 or bf16");
    // The op as a one-op trace: the trace parser checks the name and the shape as `run` does.
    const nlohmann::json tj = {{"format", "tpusim.trace"},
                               {"version", 1},
                               {"name", "bench_vpu"},
                               {"cores", 1},
                               {"ops",
                                {{{"id", o.op},
                                  {"kind", "vector"},
                                  {"op", o.op},
                                  {"rows", o.rows},
                                  {"cols", o.cols},
                                  {"dtype", o.dtype}}}}};
    const Trace trace = parse_trace(tj, who, cfg.cores());
    const VectorShape& v = trace.ops.at(0).vector;
    const std::int64_t bytes = o.dtype == "bf16" ? 2 : 4;
    const VectorOpDesc desc{v.op, v.saved_mask, v.rows, v.cols, bytes, bytes};

    // VPU alone: the loop body and the whole loop's cost on this config.
    const VectorLoop loop = scheduled_vector_loop(desc, cfg.vpu, cfg.vmem);
    VectorCostModel model(cfg.vpu, cfg.vmem);
    const VectorOpCost cost = model.cost(desc);
    std::array<std::uint64_t, kVUnits> instrs{};
    for (const VInstr& in : loop.body) {
        ++instrs[static_cast<std::size_t>(vop_unit(in.op))];
        if (vop_unit(in.op) == VUnit::Eup) ++instrs[static_cast<std::size_t>(VUnit::Valu)];
    }
    const std::array<std::int64_t, kVUnits> slots = {cfg.vpu.valu_slots, cfg.vpu.vld_slots,
                                                     cfg.vpu.vst_slots, cfg.vpu.xlu.units,
                                                     cfg.vpu.eup_units};
    const auto iters = static_cast<double>(loop.iterations);
    std::vector<SlotRow> table;
    std::size_t binding = 0;
    for (std::size_t u = 0; u < kVUnits; ++u) {
        // Slot-cycles per iteration from the whole loop's counts, less the prologue's splats.
        const double busy = static_cast<double>(cost.busy_cycles[u]) / iters;
        table.push_back({vunit_name(static_cast<VUnit>(u)), slots[u],
                         static_cast<double>(instrs[u]), busy,
                         busy / static_cast<double>(slots[u])});
        if (table[u].bound > table[binding].bound) binding = u;
    }
    const double per_iter = static_cast<double>(cost.cycles) / iters;

    // End to end: the one-op trace through `run`'s path on one core.
    const Program program = lower_trace(trace, cfg);
    RunOptions ro;
    ro.progress = false;
    Simulator sim(cfg, ro);
    const RunResult r = sim.run(program);
    const double mhz = cfg.chip.clock_mhz;
    const double vpu_seconds = static_cast<double>(cost.cycles) / (mhz * 1e6);
    const double elements = static_cast<double>(o.rows * o.cols);

    nlohmann::json body;
    body["op"] = o.op;
    body["rows"] = o.rows;
    body["cols"] = o.cols;
    body["dtype"] = o.dtype;
    body["iteration"] = loop.row_op ? "row group" : "tile";
    body["iterations"] = loop.iterations;
    body["body_instructions"] = loop.body.size();
    body["reg_sets"] = loop.reg_sets;
    body["ii_cycles"] = loop.ii();
    for (const SlotRow& s : table) {
        body["slots"][s.unit] = {{"slots", s.slots},
                                 {"instructions_per_iteration", s.instrs},
                                 {"slot_cycles_per_iteration", s.slot_cycles},
                                 {"bound_cycles_per_iteration", s.bound}};
    }
    body["binding_slot"] = table[binding].unit;
    body["vpu_cycles"] = cost.cycles;
    body["vpu_cycles_per_iteration"] = per_iter;
    body["vpu_seconds"] = vpu_seconds;
    body["run_cycles"] = r.cycles;
    body["run_seconds"] = r.seconds;
    body["run_hbm_bytes"] = r.hbm_bytes_read + r.hbm_bytes_written;
    body["run_elements_per_second"] = r.seconds > 0 ? elements / r.seconds : 0.0;
    if (o.common.json) {
        std::cout << make_report("bench vpu", cfg, body).dump(2) << "\n";
        return;
    }
    std::cout << fmt::format(
        "bench vpu on {}: {} {} x {} {}, one core\n"
        "  loop: {} iterations of one {} ({} instructions, {} register sets), II {:.2f}\n"
        "  per iteration:\n"
        "    slot   slots  instrs  slot-cycles  bound (cycles)\n",
        cfg.name, o.op, o.rows, o.cols, o.dtype, loop.iterations,
        loop.row_op ? "row group" : "tile", loop.body.size(), loop.reg_sets, loop.ii());
    for (std::size_t u = 0; u < table.size(); ++u) {
        const SlotRow& s = table[u];
        std::cout << fmt::format("    {:<6} {:>5}  {:>6.0f}  {:>11.2f}  {:>8.2f}{}\n", s.unit,
                                 s.slots, s.instrs, s.slot_cycles, s.bound,
                                 u == binding ? "  <- binding" : "");
    }
    std::cout << fmt::format(
        "  VPU: {} cycles = {:.2f} per iteration ({:.1f}% above the binding slot) = {:.4f} ms\n"
        "  run (HBM, DMA, VMEM and VPU, as `tpusim run`): {:.4f} ms, {:.2f} MiB HBM, "
        "{:.2f} G elements/s\n",
        cost.cycles, per_iter, 100.0 * (per_iter / table[binding].bound - 1.0), vpu_seconds * 1e3,
        r.seconds * 1e3,
        static_cast<double>(r.hbm_bytes_read + r.hbm_bytes_written) / (1024.0 * 1024.0),
        r.seconds > 0 ? elements / r.seconds / 1e9 : 0.0);
}

}  // namespace

void add_bench_vpu_command(CLI::App& bench) {
    const auto o = std::make_shared<VpuBenchOptions>();
    auto* cmd = bench.add_subcommand(
        "vpu", "one vector op: its loop's per-slot schedule on the VPU and its time as run");
    add_common_options(cmd, o->common);
    cmd->add_option("--op", o->op, "vector op of the trace format (softmax, gelu, layernorm, ...)");
    cmd->add_option("--rows", o->rows, "rows")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30));
    cmd->add_option("--cols", o->cols, "columns (the reduced axis of row ops)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30));
    cmd->add_option("--dtype", o->dtype, "f32 or bf16");
    cmd->callback([o] { run_bench_vpu(*o); });
}

}  // namespace tpusim::cli
