// MXU block timing as the TensorCore drives it: the PE-by-PE array must give exactly the
// cycles of the closed-form tile schedule for any sequence of blocks the lane can issue.
#include "tpusim/arch/mxu/mxu_block.h"

#include <catch2/catch.hpp>
#include <random>

using namespace tpusim;

namespace {

MxuConfig small_mxu(bool double_buffer, bool overlap) {
    MxuConfig c;
    c.rows = 16;
    c.cols = 8;
    c.weight_double_buffer = double_buffer;
    c.overlap_tiles = overlap;
    return c;
}

void check_same(const MxuBlockTiming& a, const MxuBlockTiming& b) {
    CHECK(a.first_weights_start == b.first_weights_start);
    CHECK(a.lhs_end == b.lhs_end);
    CHECK(a.results_end == b.results_end);
    CHECK(a.busy_cycles == b.busy_cycles);
    CHECK(a.useful_macs == b.useful_macs);
    CHECK(a.array_macs == b.array_macs);
    CHECK(a.passes == b.passes);
}

}  // namespace

TEST_CASE("a block's passes tile K within each N strip and cover every MAC once", "[mxu][block]") {
    std::vector<MxuPass> v;
    for (const MxuTile& t : mxu_gemm_tiles(small_mxu(true, true), 5, 40, 20)) v.push_back(t.pass);
    REQUIRE(v.size() == 3u * 3u);  // ceil(20/8) strips x ceil(40/16) K tiles
    std::int64_t macs = 0;
    for (const auto& p : v) {
        CHECK(p.m == 5);
        macs += p.m * p.k * p.n;
    }
    CHECK(macs == 5 * 40 * 20);
    CHECK(v[0].k == 16);
    CHECK(v[2].k == 8);  // the K remainder closes the first strip
    CHECK(v.back().n == 4);
}

TEST_CASE("pe and tile block timers agree cycle for cycle on random block sequences",
          "[mxu][block]") {
    for (const bool db : {true, false}) {
        for (const bool ov : {true, false}) {
            const MxuConfig cfg = small_mxu(db, ov);
            auto tile = make_mxu_block_timer(cfg, MxuFidelity::Tile);
            auto pe = make_mxu_block_timer(cfg, MxuFidelity::Pe);
            std::mt19937 rng(db * 2 + ov + 7);
            std::uniform_int_distribution<std::int64_t> m(1, 40), kn(1, 40), gap(0, 60);
            Cycle now = 3;
            for (int b = 0; b < 30; ++b) {
                const auto passes = mxu_gemm_tiles(cfg, m(rng), kn(rng), kn(rng));
                INFO("double_buffer " << db << " overlap " << ov << " block " << b << " at "
                                      << now);
                const MxuBlockTiming t = tile->run(passes, now);
                const MxuBlockTiming p = pe->run(passes, now);
                check_same(t, p);
                // The lane issues the next block at lhs_end or later, sometimes after a gap
                // long enough for the array to drain.
                now = std::max(now, t.lhs_end) + (b % 3 == 0 ? gap(rng) : 0);
            }
        }
    }
}
