// `tpusim bench mxu`: one GEMM on one MXU alone, through the SystemC Mxu module a TensorCore
// holds, driven as the core drives it (one matmul instruction), at tile or PE fidelity. The PE run
// computes real numbers on seeded random operands; --check compares them with the reference GEMM
// bit for bit.
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "common.h"
#include "tpusim/arch/mxu/mxu.h"
#include "tpusim/arch/mxu/mxu_gemm.h"
#include "tpusim/arch/mxu/mxu_numerics.h"
#include "tpusim/common/error.h"

namespace tpusim::cli {

namespace {

struct MxuBenchOptions {
    CommonOptions common;
    std::int64_t m = 0, k = 0, n = 0;
    std::string fidelity = "tile";
    std::string vcd;
    bool check = false;
    std::uint64_t seed = 1;
};

// Issues the GEMM to the MXU as one matmul instruction, through the unit interface the
// TensorCore uses, with every operand available at cycle 0, and records its completion. With
// real operands (PE fidelity) the block adds its results into C as they leave the array (the
// accumulators), K tiles in order.
class MxuBenchDriver : public sc_core::sc_module, public UnitDoneIf {
 public:
    sc_core::sc_port<UnitIf> mxu_out{"mxu_out"};

    SC_HAS_PROCESS(MxuBenchDriver);
    MxuBenchDriver(sc_core::sc_module_name name, std::int64_t m, std::int64_t k, std::int64_t n)
        : sc_module(name) {
        gemm_.unit = Unit::Mxu;
        gemm_.mm() = MatmulInstr{0, m, k, n};
        SC_THREAD(run);
    }
    Cycle end_cycle = 0;

 private:
    void run() { mxu_out->issue(gemm_, UnitRequest{UnitReply{this, 0}, Issuer{}}); }
    void done(std::uint64_t, const UnitDone& d) override { end_cycle = d.end; }

    Instr gemm_;
};

void run_bench_mxu(const MxuBenchOptions& o) {
    const TpuConfig cfg = o.common.load();
    const MxuConfig& mc = cfg.mxu;
    const std::string who = "tpusim bench mxu";
    if (o.m < 1 || o.k < 1 || o.n < 1) throw InputError(who, "--m/--k/--n", "expected >= 1");
    MxuFidelity fidelity;
    try {
        fidelity = parse_mxu_fidelity(o.fidelity);
    } catch (const std::invalid_argument& e) {
        throw InputError(who, "--fidelity", e.what());
    }
    if (!o.vcd.empty() && fidelity != MxuFidelity::Pe) {
        throw InputError(who, "--vcd", "a waveform needs --fidelity pe");
    }
    if (o.check && fidelity != MxuFidelity::Pe) {
        throw InputError(who, "--check", "numbers are computed at --fidelity pe only");
    }

    // Operands: seeded values over a few binades (PE fidelity only; tile fidelity has none).
    std::vector<float> a, b, c;
    if (fidelity == MxuFidelity::Pe) {
        std::mt19937_64 rng(o.seed);
        std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
        a.resize(static_cast<std::size_t>(o.m * o.k));
        b.resize(static_cast<std::size_t>(o.k * o.n));
        c.assign(static_cast<std::size_t>(o.m * o.n), 0.0f);
        for (float& x : a) x = dist(rng);
        for (float& x : b) x = dist(rng);
    }
    Mxu mxu("mxu", mc, fidelity, cfg.sequencer.unit_queue_depth);
    MxuBenchDriver driver("driver", o.m, o.k, o.n);
    driver.mxu_out.bind(mxu.core_in);
    if (fidelity == MxuFidelity::Pe)
        mxu.compute_next({a.data(), o.k, b.data(), o.n, c.data(), o.n});
    sc_core::sc_trace_file* tf = nullptr;
    if (!o.vcd.empty()) {
        std::string base = o.vcd;
        if (base.size() > 4 && base.compare(base.size() - 4, 4, ".vcd") == 0)
            base.resize(base.size() - 4);
        tf = sc_core::sc_create_vcd_trace_file(base.c_str());
        // SystemC announces the time unit as an info report on stdout, which would corrupt --json.
        const auto old =
            sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
        tf->set_time_unit(1, sc_core::SC_NS);  // one VCD time unit per core cycle
        sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, old);
        mxu.trace(tf, 16);
    }
    // Wall time is what users see; CPU time of this process is the figure that does not depend
    // on other work sharing the machine.
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t cpu0 = std::clock();
    sc_core::sc_start();
    const double cpu = static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (tf != nullptr) sc_core::sc_close_vcd_trace_file(tf);

    const GemmTiming closed = mxu_gemm_timing(mc, 1, o.m, o.k, o.n);
    const Cycle cycles = driver.end_cycle;
    const double array = static_cast<double>(mc.rows * mc.cols);
    nlohmann::json j;
    j["cycles"] = cycles;
    j["fidelity"] = to_string(fidelity);
    j["wall_seconds"] = wall;
    j["array_cycles_per_second"] = wall > 0 ? static_cast<double>(cycles) / wall : 0.0;
    j["cpu_seconds"] = cpu;
    j["array_cycles_per_cpu_second"] = cpu > 0 ? static_cast<double>(cycles) / cpu : 0.0;
    j["m"] = o.m;
    j["k"] = o.k;
    j["n"] = o.n;
    j["rows"] = mc.rows;
    j["cols"] = mc.cols;
    j["passes"] = closed.passes;
    j["useful_macs"] = closed.useful_macs;
    j["array_macs"] = closed.array_macs;
    j["padding_waste"] =
        1.0 - static_cast<double>(closed.useful_macs) / static_cast<double>(closed.array_macs);
    j["utilization"] =
        static_cast<double>(closed.useful_macs) / (array * static_cast<double>(cycles));
    j["ideal_cycles"] = ceil_div(closed.useful_macs, static_cast<std::uint64_t>(mc.rows * mc.cols));
    j["cycles_over_ideal"] = static_cast<double>(cycles) / j["ideal_cycles"].get<double>();
    j["tile_model_cycles"] = closed.cycles;
    if (o.check) {
        std::vector<float> ref(c.size());
        mxu_reference_gemm(mc.rows, o.m, o.k, o.n, a.data(), o.k, b.data(), o.n, ref.data(), o.n);
        j["bit_exact"] = std::memcmp(ref.data(), c.data(), c.size() * sizeof(float)) == 0;
    }
    if (!o.vcd.empty()) j["vcd"] = o.vcd;
    if (o.common.json) {
        std::cout << j.dump(2) << "\n";
        return;
    }
    std::cout << fmt::format("MXU {} x {}, GEMM {} x {} x {} ({} fidelity), {} passes\n", mc.rows,
                             mc.cols, o.m, o.k, o.n, to_string(fidelity), closed.passes);
    std::cout << fmt::format("  cycles       {} (ideal {}, x{:.4f}); closed form {}\n", cycles,
                             j["ideal_cycles"].get<std::uint64_t>(),
                             j["cycles_over_ideal"].get<double>(), closed.cycles);
    std::cout << fmt::format("  utilisation  {:.4f}; padding waste {:.4f} of the array's MACs\n",
                             j["utilization"].get<double>(), j["padding_waste"].get<double>());
    std::cout << fmt::format(
        "  wall         {:.3f} s, {:.0f} array-cycles/s ({:.3f} s CPU, {:.0f} "
        "array-cycles per CPU second)\n",
        wall, j["array_cycles_per_second"].get<double>(), cpu,
        j["array_cycles_per_cpu_second"].get<double>());
    if (o.check)
        std::cout << "  bit-exact    " << (j["bit_exact"].get<bool>() ? "yes" : "NO") << "\n";
}

}  // namespace

void add_bench_mxu_command(CLI::App& bench) {
    const auto o = std::make_shared<MxuBenchOptions>();
    auto* cmd = bench.add_subcommand("mxu", "one GEMM on one MXU (tile or PE fidelity)");
    add_common_options(cmd, o->common);
    cmd->add_option("--m", o->m, "LHS rows (M)")->required();
    cmd->add_option("--k", o->k, "reduction dimension (K)")->required();
    cmd->add_option("--n", o->n, "output columns (N)")->required();
    cmd->add_option("--fidelity", o->fidelity, "tile (closed form, default) or pe (PE by PE)");
    cmd->add_option("--vcd", o->vcd, "write a waveform of the top-left 16 x 16 PEs (pe)");
    cmd->add_flag("--check", o->check, "compare the PE results with the reference GEMM");
    cmd->add_option("--seed", o->seed, "seed of the random operands (pe)");
    cmd->callback([o] { run_bench_mxu(*o); });
}

}  // namespace tpusim::cli
