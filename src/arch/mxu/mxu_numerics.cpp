#include "tpusim/arch/mxu/mxu_numerics.h"

#include <algorithm>
#include <vector>

namespace tpusim {

void mxu_reference_gemm(std::int64_t tile_k, std::int64_t m, std::int64_t k, std::int64_t n,
                        const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                        float* c, std::int64_t ldc) {
    std::vector<float> partial(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < m; ++i) {
        float* out = c + i * ldc;
        std::fill(out, out + n, 0.0f);
        for (std::int64_t k0 = 0; k0 < k; k0 += tile_k) {
            std::fill(partial.begin(), partial.end(), 0.0f);
            for (std::int64_t r = k0; r < std::min(k, k0 + tile_k); ++r) {
                const float x = round_to_bf16(a[i * lda + r]);
                const float* w = b + r * ldb;
                for (std::int64_t j = 0; j < n; ++j) {
                    const float prod = x * round_to_bf16(w[j]);  // exact: 8 x 8 significant bits
                    partial[static_cast<std::size_t>(j)] += prod;
                }
            }
            for (std::int64_t j = 0; j < n; ++j) out[j] += partial[static_cast<std::size_t>(j)];
        }
    }
}

}  // namespace tpusim
