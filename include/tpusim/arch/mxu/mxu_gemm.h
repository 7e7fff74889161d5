#pragma once
// A whole GEMM on one MXU at PE fidelity: the weight matrix cut into tiles (N tiles outer,
// K tiles inner, each padded to the array), every tile streamed with all M LHS rows, the tile
// results accumulated in fp32 in K order. Used by `bench mxu --fidelity pe` and the tests.
#include <cstdint>
#include <vector>

#include "tpusim/arch/mxu/mxu_timing.h"
#include "tpusim/config/mxu_config.h"

namespace tpusim {

struct MxuTile {
    std::int64_t k0 = 0, n0 = 0;  // origin of the tile in the K x N weight matrix
    MxuPass pass;
};
// The passes of an M x K x N GEMM in execution order.
std::vector<MxuTile> mxu_gemm_tiles(const MxuConfig& cfg, std::int64_t m, std::int64_t k,
                                    std::int64_t n);
// The same into `out` (cleared first), reusing its storage: the MXU's per-block call.
void mxu_gemm_tiles(const MxuConfig& cfg, std::int64_t m, std::int64_t k, std::int64_t n,
                    std::vector<MxuTile>& out);

struct PeGemmRun {
    GemmTiming timing;                  // cycles = results_end of the last pass
    std::vector<MxuPassTiming> passes;  // per pass, in execution order
};
// c (m x n, row-major) = a (m x k) * b (k x n) computed PE by PE with all operands available
// at cycle 0. a, b and c may all be null for a timing-only run (zeros flow through the array).
PeGemmRun mxu_pe_gemm(const MxuConfig& cfg, std::int64_t m, std::int64_t k, std::int64_t n,
                      const float* a, const float* b, float* c);

}  // namespace tpusim
