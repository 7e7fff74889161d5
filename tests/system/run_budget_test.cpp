// RunOptions::max_cycles: a run that passes its budget of simulated cycles stops with
// CycleBudgetExceeded (the fuzzer's simulating harness relies on it; docs/limits.md).
#include <catch2/catch.hpp>

#include "../test_util.h"
#include "tpusim/program/lowering.h"
#include "tpusim/sim/simulator.h"

using namespace tpusim;

TEST_CASE("a run past its cycle budget stops with CycleBudgetExceeded", "[board][system]") {
    const TpuConfig cfg = load_config(test::config_path("tpu_v2_8.json"));
    OpSpec gemm;
    gemm.id = "gemm";
    gemm.kind = OpKind::Matmul;
    gemm.m = gemm.k = gemm.n = 2048;
    LoweringOptions lo;
    lo.cores = 1;
    const Program program = lower_ops({gemm}, cfg, lo, "budget test");
    // The MXUs do at most rows * cols MACs a cycle each, so the GEMM needs at least
    // m * k * n / (rows * cols * mxus) cycles: far past the budget.
    const double min_cycles =
        2048.0 * 2048.0 * 2048.0 / static_cast<double>(cfg.mxu.rows * cfg.mxu.cols * cfg.core.mxus);
    RunOptions ro;
    ro.progress = false;
    ro.max_cycles = Cycle{1} << 16;
    REQUIRE(min_cycles > 4.0 * static_cast<double>(ro.max_cycles));
    Simulator sim(cfg, ro);
    CHECK_THROWS_AS(sim.run(program), CycleBudgetExceeded);
}
