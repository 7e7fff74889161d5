// `tpusim bench peak`: one large GEMM on every core of the board, through the full path
// (HBM, DMA, VMEM, MXU). The achieved figure is simulated; the peak is derived from the config.
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <memory>

#include "common.h"
#include "tpusim/program/lowering.h"
#include "tpusim/sim/derived.h"
#include "tpusim/sim/run_energy.h"
#include "tpusim/sim/simulator.h"
#include "tpusim/stats/report.h"

namespace tpusim::cli {

namespace {

struct BenchPeakOptions {
    CommonOptions common;
    std::int64_t size = 8192;
};

}  // namespace

void add_bench_peak_command(CLI::App& bench) {
    const auto o = std::make_shared<BenchPeakOptions>();
    auto* cmd = bench.add_subcommand(
        "peak", "a large bf16 GEMM on every core through HBM, DMA, VMEM and the MXUs");
    add_common_options(cmd, o->common);
    cmd->add_option("--size", o->size, "M = K = N of the GEMM each core runs")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
    cmd->callback([o] {
        const CommonOptions& opts = o->common;
        const std::int64_t size = o->size;
        const auto t0 = std::chrono::steady_clock::now();
        const TpuConfig cfg = opts.load();
        OpSpec gemm;
        gemm.id = fmt::format("gemm_{}", size);
        gemm.kind = OpKind::Matmul;
        gemm.m = gemm.k = gemm.n = size;
        LoweringOptions lo;
        lo.cores = cfg.cores();
        const Program program = lower_ops({gemm}, cfg, lo, "bench peak");
        RunOptions ro;
        ro.progress = false;
        Simulator sim(cfg, ro);
        RunResult r = sim.run(program);
        const double wall =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const DerivedFigures d = derive(cfg);
        nlohmann::json body;
        body["gemm"] = {{"m", size}, {"k", size}, {"n", size}, {"dtype", "bf16"}};
        body["cores"] = r.cores;
        body["cycles"] = r.cycles;
        body["seconds"] = r.seconds;
        body["achieved_bf16_tflops"] = r.achieved_tflops;
        body["peak_bf16_tflops"] = d.peak_flops_total / 1e12;
        body["fraction_of_peak"] = r.achieved_tflops / (d.peak_flops_total / 1e12);
        body["hbm_gbps_per_chip"] = r.hbm_gbps_per_chip;
        body["wall_seconds"] = wall;
        const RunEnergy energy = run_energy(r, cfg);
        body["energy"] = run_energy_json(energy, cfg);
        if (opts.json) {
            std::cout << make_report("bench peak", cfg, body).dump(2) << "\n";
            return;
        }
        std::cout << fmt::format(
            "bench peak on {}: {} x {} x {} bf16 GEMM on each of {} cores\n"
            "  {} cycles = {:.3f} ms; achieved {:.2f} TFLOPS of {:.2f} derived peak = {:.2f}%\n"
            "  HBM {:.1f} GB/s per chip; simulated in {:.2f} s wall\n",
            cfg.name, size, size, size, r.cores, r.cycles, r.seconds * 1e3, r.achieved_tflops,
            d.peak_flops_total / 1e12, 100.0 * body["fraction_of_peak"].get<double>(),
            r.hbm_gbps_per_chip, wall);
        std::cout << run_energy_line(energy, cfg);
    });
}

}  // namespace tpusim::cli
