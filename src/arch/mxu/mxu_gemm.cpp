#include "tpusim/arch/mxu/mxu_gemm.h"

#include <algorithm>
#include <stdexcept>

#include "tpusim/arch/mxu/mxu_block.h"
#include "tpusim/arch/mxu/mxu_pe_array.h"

namespace tpusim {

void mxu_gemm_tiles(const MxuConfig& cfg, std::int64_t m, std::int64_t k, std::int64_t n,
                    std::vector<MxuTile>& out) {
    out.clear();
    out.reserve(static_cast<std::size_t>(((n + cfg.cols - 1) / cfg.cols) *
                                         ((k + cfg.rows - 1) / cfg.rows)));
    for (std::int64_t n0 = 0; n0 < n; n0 += cfg.cols) {
        for (std::int64_t k0 = 0; k0 < k; k0 += cfg.rows) {
            out.push_back({k0, n0, {std::min(cfg.rows, k - k0), std::min(cfg.cols, n - n0), m}});
        }
    }
}

std::vector<MxuTile> mxu_gemm_tiles(const MxuConfig& cfg, std::int64_t m, std::int64_t k,
                                    std::int64_t n) {
    std::vector<MxuTile> tiles;
    mxu_gemm_tiles(cfg, m, k, n, tiles);
    return tiles;
}

PeGemmRun mxu_pe_gemm(const MxuConfig& cfg, std::int64_t m, std::int64_t k, std::int64_t n,
                      const float* a, const float* b, float* c) {
    if (m < 1 || k < 1 || n < 1) throw std::invalid_argument("mxu_pe_gemm: need M, K, N >= 1");
    const std::vector<MxuTile> tiles = mxu_gemm_tiles(cfg, m, k, n);
    MxuPeArray pe(cfg);
    PeGemmRun run;
    run.timing.useful_macs = static_cast<std::uint64_t>(m * k) * static_cast<std::uint64_t>(n);
    run.timing.array_macs = static_cast<std::uint64_t>(cfg.rows * cfg.cols * m) * tiles.size();
    run.timing.passes = tiles.size();
    if (c != nullptr) std::fill(c, c + m * n, 0.0f);

    // Every pass adds its partial sums into C as they leave the array (the accumulators); the
    // K tiles of an output column run in K order, and a later pass's row i always leaves after
    // the earlier pass's row i, so C sums the tiles in K order, as the reference does.
    const MxuBlockOperands ops{a, k, b, n, c, n};
    for (const MxuTile& t : tiles) pe.submit(t.pass, 0, 0, tile_operands(t, ops));
    pe.run_until_idle();
    for (std::size_t p = 0; p < tiles.size(); ++p) run.passes.push_back(pe.timing(p));
    run.timing.cycles = run.passes.back().results_end;
    return run;
}

}  // namespace tpusim
