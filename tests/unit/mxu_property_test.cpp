// Randomised, seeded property tests: the tile model (MxuTiming) and the PE model (MxuPeArray)
// give identical timing for every pass, and the PE model's numbers equal the software reference
// GEMM bit for bit. Shapes are mostly small (and arrays mostly 4..16 PEs wide) so that the
// whole file runs in seconds; a share of cases uses the real 128 x 128 array with small M.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "../test_util.h"
#include "tpusim/arch/mxu/mxu_gemm.h"
#include "tpusim/arch/mxu/mxu_numerics.h"
#include "tpusim/arch/mxu/mxu_pe_array.h"
#include "tpusim/arch/mxu/mxu_timing.h"
#include "tpusim/config/tpu_config.h"

namespace tpusim {
namespace {

using Rng = std::mt19937_64;

std::int64_t uniform(Rng& rng, std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

// Values spread over several binades, so that rounding to bf16 and fp32 sums both matter.
std::vector<float> random_values(Rng& rng, std::int64_t count) {
    std::uniform_real_distribution<float> mant(-2.0f, 2.0f);
    std::vector<float> v(static_cast<std::size_t>(count));
    for (float& x : v) x = std::ldexp(mant(rng), static_cast<int>(uniform(rng, -6, 6)));
    return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// A random array configuration: small sizes of any integer (most not powers of two, e.g.
// 6 x 3), random switches and latencies.
MxuConfig random_config(Rng& rng, const MxuConfig& base, bool keep_size) {
    MxuConfig c = base;
    if (!keep_size) {
        c.rows = uniform(rng, 1, 16);
        c.cols = uniform(rng, 1, 16);
    }
    c.weight_load_rows_per_cycle = uniform(rng, 1, 5);
    if (c.weight_load_rows_per_cycle > c.rows) c.weight_load_rows_per_cycle = c.rows;
    c.weight_double_buffer = uniform(rng, 0, 1) == 1;
    c.overlap_tiles = uniform(rng, 0, 1) == 1;
    c.input_latency_cycles = uniform(rng, 0, 3);
    c.pass_gap_cycles = uniform(rng, 0, 2) == 0 ? 0 : uniform(rng, 1, 40);
    c.accumulator_latency_cycles = uniform(rng, 0, 3);
    c.result_pop_latency_cycles = uniform(rng, 0, 3);
    return c;
}

struct PassCase {
    MxuPass pass;
    Cycle weights_avail, lhs_avail;
    std::vector<float> w, x, out;
};

// Runs the passes through both models; checks timing equality and bit-exact numbers.
void check_passes(const MxuConfig& cfg, std::vector<PassCase>& cases) {
    MxuTiming tile(cfg);
    MxuPeArray pe(cfg);
    for (PassCase& p : cases) {
        p.out.assign(static_cast<std::size_t>(p.pass.m * p.pass.n), -1.0f);
        pe.submit(p.pass, p.weights_avail, p.lhs_avail,
                  {p.w.data(), p.pass.n, p.x.data(), p.pass.k, p.out.data(), p.pass.n});
    }
    pe.run_until_idle();
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const PassCase& p = cases[i];
        INFO("rows " << cfg.rows << " cols " << cfg.cols << " rate "
                     << cfg.weight_load_rows_per_cycle << " db " << cfg.weight_double_buffer
                     << " overlap " << cfg.overlap_tiles << " lat " << cfg.input_latency_cycles
                     << "/" << cfg.accumulator_latency_cycles << "/"
                     << cfg.result_pop_latency_cycles << " pass " << i << " k " << p.pass.k << " n "
                     << p.pass.n << " m " << p.pass.m << " avail " << p.weights_avail << "/"
                     << p.lhs_avail);
        const MxuPassTiming t = tile.schedule(p.pass, p.weights_avail, p.lhs_avail);
        const MxuPassTiming& q = pe.timing(i);
        CHECK(t.weights_start == q.weights_start);
        CHECK(t.weights_ready == q.weights_ready);
        CHECK(t.lhs_start == q.lhs_start);
        CHECK(t.lhs_end == q.lhs_end);
        CHECK(t.results_end == q.results_end);
        std::vector<float> ref(p.out.size());
        mxu_reference_gemm(cfg.rows, p.pass.m, p.pass.k, p.pass.n, p.x.data(), p.pass.k, p.w.data(),
                           p.pass.n, ref.data(), p.pass.n);
        CHECK(same_bits(ref, p.out));
    }
}

void random_pass_sequences(const MxuConfig& base, bool keep_size, std::int64_t max_m, int shapes,
                           std::uint64_t seed) {
    Rng rng(seed);
    int checked = 0;
    while (checked < shapes) {
        const MxuConfig cfg = random_config(rng, base, keep_size);
        std::vector<PassCase> cases(static_cast<std::size_t>(uniform(rng, 1, 4)));
        Cycle avail = 0;
        for (PassCase& p : cases) {
            p.pass = {uniform(rng, 1, cfg.rows), uniform(rng, 1, cfg.cols), uniform(rng, 1, max_m)};
            // Mostly ready in time, sometimes late (operands arriving from VMEM).
            avail += static_cast<Cycle>(uniform(rng, 0, 1) ? 0 : uniform(rng, 0, 60));
            p.weights_avail = avail;
            p.lhs_avail = avail + static_cast<Cycle>(uniform(rng, 0, 1) ? 0 : uniform(rng, 0, 40));
            p.w = random_values(rng, p.pass.k * p.pass.n);
            p.x = random_values(rng, p.pass.m * p.pass.k);
        }
        check_passes(cfg, cases);
        checked += static_cast<int>(cases.size());
    }
}

TEST_CASE("mxu: tile timing equals PE timing on random passes (small arrays)", "[mxu]") {
    random_pass_sequences(MxuConfig{}, false, 40, 300, 0x5eed0001);
}

TEST_CASE("mxu: tile timing equals PE timing on random passes (128 x 128, small M)", "[mxu]") {
    random_pass_sequences(MxuConfig{}, true, 24, 24, 0x5eed0002);
}

TEST_CASE("mxu: tile timing equals PE timing with the SCALE-Sim compat config", "[mxu]") {
    const TpuConfig compat = load_config(test::config_path("compat/scalesim_ws.json"));
    Rng rng(0x5eed0003);
    for (int i = 0; i < 40; ++i) {
        MxuConfig cfg = compat.mxu;
        cfg.rows = uniform(rng, 1, 16);  // keep the compat switches
        cfg.cols = uniform(rng, 1, 16);
        std::vector<PassCase> cases(static_cast<std::size_t>(uniform(rng, 1, 3)));
        for (PassCase& p : cases) {
            p.pass = {uniform(rng, 1, cfg.rows), uniform(rng, 1, cfg.cols), uniform(rng, 1, 30)};
            p.weights_avail = p.lhs_avail = 0;
            p.w = random_values(rng, p.pass.k * p.pass.n);
            p.x = random_values(rng, p.pass.m * p.pass.k);
        }
        check_passes(cfg, cases);
    }
}

// Whole GEMMs (several K and N tiles, shapes not multiples of the array): PE cycles equal the
// closed form, and the accumulated results equal the reference.
TEST_CASE("mxu: GEMM on the PE array equals mxu_gemm_timing and the reference", "[mxu]") {
    Rng rng(0x5eed0004);
    for (int i = 0; i < 60; ++i) {
        const MxuConfig cfg = random_config(rng, MxuConfig{}, false);
        const std::int64_t m = uniform(rng, 1, 50), k = uniform(rng, 1, 40),
                           n = uniform(rng, 1, 40);
        INFO("rows " << cfg.rows << " cols " << cfg.cols << " db " << cfg.weight_double_buffer
                     << " overlap " << cfg.overlap_tiles << " m " << m << " k " << k << " n " << n);
        const std::vector<float> a = random_values(rng, m * k), b = random_values(rng, k * n);
        std::vector<float> c(static_cast<std::size_t>(m * n)), ref(c.size());
        const PeGemmRun run = mxu_pe_gemm(cfg, m, k, n, a.data(), b.data(), c.data());
        mxu_reference_gemm(cfg.rows, m, k, n, a.data(), k, b.data(), n, ref.data(), n);
        CHECK(same_bits(c, ref));
        const GemmTiming t = mxu_gemm_timing(cfg, 1, m, k, n);
        CHECK(t.cycles == run.timing.cycles);
        CHECK(t.passes == run.timing.passes);
        CHECK(t.array_macs == run.timing.array_macs);
        CHECK(t.useful_macs == static_cast<std::uint64_t>(m * k * n));
    }
}

// The shapes exploration studies ask for (issue 13): square and not, none a power of two in
// both sides. The GEMM spans several K and N tiles with ragged edges on each.
TEST_CASE("mxu: 96 x 96, 8 x 6 and 128 x 96 arrays: PE equals the closed form", "[mxu]") {
    Rng rng(0x5eed0006);
    const std::pair<std::int64_t, std::int64_t> shapes[] = {{96, 96}, {8, 6}, {128, 96}};
    for (const auto& [rows, cols] : shapes) {
        MxuConfig cfg;
        cfg.rows = rows;
        cfg.cols = cols;
        const std::int64_t m = 37, k = 2 * rows + 5, n = 2 * cols + 3;
        INFO("rows " << rows << " cols " << cols);
        const std::vector<float> a = random_values(rng, m * k), b = random_values(rng, k * n);
        std::vector<float> c(static_cast<std::size_t>(m * n)), ref(c.size());
        const PeGemmRun run = mxu_pe_gemm(cfg, m, k, n, a.data(), b.data(), c.data());
        mxu_reference_gemm(cfg.rows, m, k, n, a.data(), k, b.data(), n, ref.data(), n);
        CHECK(same_bits(c, ref));
        const GemmTiming t = mxu_gemm_timing(cfg, 1, m, k, n);
        CHECK(t.cycles == run.timing.cycles);
        CHECK(t.passes == 9);  // ceil(k / rows) x ceil(n / cols) = 3 x 3 weight tiles
        CHECK(t.array_macs == static_cast<std::uint64_t>(rows * cols * m * 9));
    }
}

// The steady-state extrapolation used for huge GEMMs equals scheduling every pass.
TEST_CASE("mxu: repeated-pass closed form equals the pass-by-pass schedule", "[mxu]") {
    Rng rng(0x5eed0005);
    for (int i = 0; i < 200; ++i) {
        const MxuConfig cfg = random_config(rng, MxuConfig{}, uniform(rng, 0, 1) == 1);
        const auto count = static_cast<std::uint64_t>(uniform(rng, 1, 300));
        const std::int64_t m = uniform(rng, 1, 600);
        MxuTiming t(cfg);
        for (std::uint64_t p = 0; p < count; ++p) t.schedule({1, 1, m}, 0, 0);
        CHECK(mxu_repeated_passes_cycles(cfg, count, m) == t.results_end());
    }
}

}  // namespace
}  // namespace tpusim
