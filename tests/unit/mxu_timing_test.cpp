// Unit tests of the MXU timing whose expected cycles are derived here from the config, following
// docs/mxu.md. Each case runs the tile model and the PE model and expects both to match.
#include "tpusim/arch/mxu/mxu_timing.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "../test_util.h"
#include "tpusim/arch/mxu/mxu_numerics.h"
#include "tpusim/arch/mxu/mxu_pe_array.h"
#include "tpusim/config/tpu_config.h"

namespace tpusim {
namespace {

// Named quantities of docs/mxu.md, from the config.
struct Derived {
    Cycle R, C, Lw, Lin, Lacc, Lpop;
    explicit Derived(const MxuConfig& c)
        : R(c.rows),
          C(c.cols),
          Lw((c.rows + c.weight_load_rows_per_cycle - 1) / c.weight_load_rows_per_cycle),
          Lin(c.input_latency_cycles),
          Lacc(c.accumulator_latency_cycles),
          Lpop(c.result_pop_latency_cycles) {}
    // From lhs_start: row 0 reaches PE(0,0) after Lin, the last row m - 1 cycles later; it
    // crosses R - 1 rows and C - 1 columns, leaves, and is de-skewed and popped.
    Cycle results_end(Cycle lhs_start, Cycle m) const {
        return lhs_start + Lin + (m - 1) + (R - 1) + (C - 1) + 1 + Lacc + Lpop;
    }
};

// Both models on the same passes (operands available at cycle 0); returns the tile timings
// after checking that the PE array agrees.
std::vector<MxuPassTiming> run_both(const MxuConfig& cfg, const std::vector<MxuPass>& passes) {
    MxuTiming tile(cfg);
    MxuPeArray pe(cfg);
    std::vector<MxuPassTiming> out;
    for (const MxuPass& p : passes) {
        out.push_back(tile.schedule(p, 0, 0));
        pe.submit(p, 0, 0);
    }
    pe.run_until_idle();
    for (std::size_t i = 0; i < passes.size(); ++i) CHECK(pe.timing(i) == out[i]);
    return out;
}

TEST_CASE("mxu timing: one full tile", "[mxu]") {
    const MxuConfig cfg;  // TPU v3: 128 x 128, one weight row per cycle, latencies 1
    const Derived d(cfg);
    const Cycle m = 200;
    const auto t = run_both(cfg, {{cfg.rows, cfg.cols, static_cast<std::int64_t>(m)}})[0];
    CHECK(t.weights_start == 0);
    CHECK(t.weights_ready == d.Lw);  // 128 rows at one row per cycle
    // The first LHS row is pushed so that it reaches the edge exactly when the weights are in.
    CHECK(t.lhs_start == d.Lw - d.Lin);
    CHECK(t.lhs_end == t.lhs_start + m);
    CHECK(t.results_end == d.results_end(d.Lw - d.Lin, m));
    CHECK(t.results_end == 127 + 1 + 199 + 127 + 127 + 1 + 1 + 1);  // the same, in numbers
}

TEST_CASE("mxu timing: M = 1 pays the whole fill and drain", "[mxu]") {
    MxuConfig cfg;
    cfg.weight_load_rows_per_cycle = 4;  // Lw = 32
    const Derived d(cfg);
    const auto t = run_both(cfg, {{cfg.rows, cfg.cols, 1}})[0];
    CHECK(t.weights_ready == 32);
    CHECK(t.results_end == d.results_end(d.Lw - d.Lin, 1));
}

TEST_CASE("mxu timing: K < rows and N < cols cost a full tile; MACs say what was useful", "[mxu]") {
    const MxuConfig cfg;
    const Derived d(cfg);
    const auto small = run_both(cfg, {{5, 7, 64}})[0];
    const auto full = run_both(cfg, {{cfg.rows, cfg.cols, 64}})[0];
    CHECK(small == full);  // padded to the array: timing does not depend on k, n
    CHECK(small.results_end == d.results_end(d.Lw - d.Lin, 64));
    MxuTiming t(cfg);
    t.schedule({5, 7, 64}, 0, 0);
    CHECK(t.useful_macs() == 5u * 7u * 64u);
    CHECK(t.padded_macs() == 128u * 128u * 64u);
    CHECK(t.busy_cycles() == small.results_end);  // one pass from cycle 0
}

TEST_CASE("mxu timing: back-to-back tiles with double buffering have no bubble", "[mxu]") {
    const MxuConfig cfg;
    const Derived d(cfg);
    // The next load starts once the swap wave has reached the last PE (Lin + R + C - 1 cycles
    // after the first push) and takes Lw; with m at least that long it hides completely.
    const Cycle m = d.R + d.C - 1 + d.Lw;
    const auto t = run_both(
        cfg, {{128, 128, static_cast<std::int64_t>(m)}, {128, 128, static_cast<std::int64_t>(m)}});
    CHECK(t[1].weights_start == t[0].lhs_start + d.Lin + d.R + d.C - 1);
    CHECK(t[1].lhs_start == t[0].lhs_end);
    CHECK(t[1].results_end == t[0].results_end + m);

    // A shorter stream exposes the load: the next push waits for weights_ready - Lin.
    const Cycle short_m = 50;
    const auto s = run_both(cfg, {{128, 128, 50}, {128, 128, 50}});
    const Cycle ws1 = s[0].lhs_start + d.Lin + d.R + d.C - 1;
    CHECK(s[1].lhs_start == ws1 + d.Lw - d.Lin);
    CHECK(s[1].lhs_start > s[0].lhs_end);
    CHECK(s[1].results_end == d.results_end(ws1 + d.Lw - d.Lin, short_m));
}

TEST_CASE("mxu timing: the sequencer's pass gap idles the LHS port between passes", "[mxu]") {
    MxuConfig cfg;
    cfg.pass_gap_cycles = 19;
    const Derived d(cfg);
    const Cycle G = cfg.pass_gap_cycles;
    // A stream long enough to hide the weight load: the next pass starts G cycles after the
    // previous pass's last row, so the period is m + G (docs/mxu.md).
    const Cycle m = d.R + d.C - 1 + d.Lw + 100;
    const auto t = run_both(cfg, {{128, 128, static_cast<std::int64_t>(m)},
                                  {128, 128, static_cast<std::int64_t>(m)},
                                  {128, 128, static_cast<std::int64_t>(m)}});
    CHECK(t[1].lhs_start == t[0].lhs_end + G);
    CHECK(t[2].results_end - t[1].results_end == m + G);
    // A short stream is bound by the weight swap, which the gap does not reach.
    const auto s = run_both(cfg, {{128, 128, 50}, {128, 128, 50}});
    CHECK(s[1].lhs_start == s[0].lhs_start + d.Lin + d.R + d.C - 1 + d.Lw - d.Lin);
}

TEST_CASE("mxu timing: back-to-back tiles without double buffering wait for the drain", "[mxu]") {
    MxuConfig cfg;
    cfg.weight_double_buffer = false;
    const Derived d(cfg);
    const Cycle m = 300;
    const auto t = run_both(cfg, {{128, 128, 300}, {128, 128, 300}});
    // The single weight register is free after the last LHS row leaves PE(R-1, C-1).
    const Cycle last_exit0 = t[0].lhs_start + d.Lin + (m - 1) + (d.R - 1) + (d.C - 1);
    CHECK(t[1].weights_start == last_exit0 + 1);
    CHECK(t[1].lhs_start == last_exit0 + 1 + d.Lw - d.Lin);
    CHECK(t[1].results_end == d.results_end(t[1].lhs_start, m));
    // Double buffering saves the difference.
    const auto db = run_both(MxuConfig{}, {{128, 128, 300}, {128, 128, 300}});
    CHECK(db[1].results_end < t[1].results_end);
}

TEST_CASE("mxu timing: without overlap the next tile starts after the last pop", "[mxu]") {
    MxuConfig cfg;
    cfg.overlap_tiles = false;
    const Derived d(cfg);
    const auto t = run_both(cfg, {{128, 128, 500}, {128, 128, 500}});
    CHECK(t[1].lhs_start == t[0].results_end);
    CHECK(t[1].results_end == d.results_end(t[0].results_end, 500));
}

TEST_CASE("mxu timing: late operands delay the pass", "[mxu]") {
    const MxuConfig cfg;
    const Derived d(cfg);
    MxuTiming t(cfg);
    const MxuPassTiming p = t.schedule({128, 128, 10}, 1000, 5000);
    CHECK(p.weights_start == 1000);
    CHECK(p.lhs_start == 5000);
    CHECK(p.results_end == d.results_end(5000, 10));
}

TEST_CASE("mxu timing: the SCALE-Sim compat config follows its closed form", "[mxu]") {
    const TpuConfig compat = load_config(test::config_path("compat/scalesim_ws.json"));
    const MxuConfig& cfg = compat.mxu;
    CHECK(compat.core.mxus == 1);
    // SCALE-Sim v2, weight stationary: each fold loads R weight rows serially, then streams M
    // rows with full fill and drain: 2R + C + M - 2 cycles per fold; folds = ceil(K/R) ceil(N/C).
    for (const auto& [m, k, n] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{1, 1, 1},
                                  {100, 300, 200},
                                  {784, 1152, 256},
                                  {3136, 64, 64},
                                  {49, 4608, 512}}) {
        const std::uint64_t folds = ceil_div(k, cfg.rows) * ceil_div(n, cfg.cols);
        const Cycle expected = folds * (2 * cfg.rows + cfg.cols + m - 2);
        CHECK(mxu_gemm_timing(cfg, 1, m, k, n).cycles == expected);
    }
}

TEST_CASE("mxu timing: two MXUs split N tiles, or M when N fits one tile", "[mxu]") {
    const MxuConfig cfg;
    // 32 N tiles: each MXU takes 16 of them with all 32 K tiles.
    CHECK(mxu_gemm_timing(cfg, 2, 4096, 4096, 4096).cycles ==
          mxu_repeated_passes_cycles(cfg, 16 * 32, 4096));
    // One N tile: the MXUs share the 1000 rows, 500 each, over all 8 K tiles.
    const GemmTiming g = mxu_gemm_timing(cfg, 2, 1000, 1024, 100);
    CHECK(g.cycles == mxu_repeated_passes_cycles(cfg, 8, 500));
    CHECK(g.passes == 16);
    CHECK(g.useful_macs == 1000u * 1024u * 100u);
    CHECK(g.array_macs == 8u * 128u * 128u * 1000u);
}

TEST_CASE("mxu timing: a 4096^3 GEMM on one MXU is within 2% of M K N / (R C)", "[mxu]") {
    const MxuConfig cfg;
    const GemmTiming g = mxu_gemm_timing(cfg, 1, 4096, 4096, 4096);
    const double ideal = 4096.0 * 4096.0 * 4096.0 / (128.0 * 128.0);
    CHECK(static_cast<double>(g.cycles) >= ideal);
    CHECK(static_cast<double>(g.cycles) <= 1.02 * ideal);
    const GemmTiming huge = mxu_gemm_timing(cfg, 1, 8192, 32768, 32768);
    CHECK(huge.passes == 256u * 256u);
    CHECK(static_cast<double>(huge.cycles) <= 1.02 * 8192.0 * 32768.0 * 32768.0 / 16384.0);
}

TEST_CASE("mxu numerics: bf16 rounds to nearest even", "[mxu]") {
    CHECK(round_to_bf16(1.0f) == 1.0f);
    CHECK(round_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 1.0f);  // tie, 1.0 is even
    CHECK(round_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 1.0f + std::ldexp(1.0f, -6));  // tie up
    CHECK(round_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)) ==
          1.0f + std::ldexp(1.0f, -7));  // above the tie
    CHECK(round_to_bf16(-2.5f) == -2.5f);
    CHECK(std::isinf(round_to_bf16(std::numeric_limits<float>::max())));
    CHECK(std::isnan(round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
}

}  // namespace
}  // namespace tpusim
