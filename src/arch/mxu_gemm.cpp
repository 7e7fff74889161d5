#include "tpusim/arch/mxu_gemm.h"

#include <algorithm>
#include <stdexcept>

#include "tpusim/arch/mxu_pe_array.h"

namespace tpusim {

std::vector<MxuTile> mxu_gemm_tiles(const MxuConfig& cfg, std::int64_t m, std::int64_t k,
                                    std::int64_t n) {
    std::vector<MxuTile> tiles;
    for (std::int64_t n0 = 0; n0 < n; n0 += cfg.cols) {
        for (std::int64_t k0 = 0; k0 < k; k0 += cfg.rows) {
            tiles.push_back({k0, n0, {std::min(cfg.rows, k - k0), std::min(cfg.cols, n - n0), m}});
        }
    }
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

    // Passes are handed to the array a few at a time, each with its own result buffer; the
    // array holds at most three passes between weight load and last pop (double buffering), so
    // a ring of kAhead buffers never delays the controller.
    constexpr std::size_t kAhead = 8;
    std::vector<std::vector<float>> ring(c != nullptr ? kAhead : 0);
    for (auto& buf : ring) buf.resize(static_cast<std::size_t>(m * cfg.cols));
    std::size_t submitted = 0, done = 0;
    while (done < tiles.size()) {
        while (submitted < tiles.size() && submitted - done < kAhead) {
            const MxuTile& t = tiles[submitted];
            MxuPeOperands ops;
            if (a != nullptr && b != nullptr) {
                ops.weights = b + t.k0 * n + t.n0;
                ops.ldw = n;
                ops.lhs = a + t.k0;
                ops.ldl = k;
            }
            if (c != nullptr) {
                ops.out = ring[submitted % kAhead].data();
                ops.ldo = cfg.cols;
            }
            pe.submit(t.pass, 0, 0, ops);
            ++submitted;
        }
        pe.step();
        while (pe.passes_completed() > done) {
            const MxuTile& t = tiles[done];
            if (c != nullptr) {
                // The accumulators add each K tile's partial sums in fp32, in K order.
                const float* out = ring[done % kAhead].data();
                for (std::int64_t i = 0; i < m; ++i) {
                    for (std::int64_t j = 0; j < t.pass.n; ++j) {
                        c[i * n + t.n0 + j] += out[i * cfg.cols + j];
                    }
                }
            }
            run.passes.push_back(pe.timing(done));
            ++done;
        }
    }
    run.timing.cycles = run.passes.back().results_end;
    return run;
}

}  // namespace tpusim
