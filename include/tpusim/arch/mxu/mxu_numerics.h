#pragma once
// MXU arithmetic: bf16 inputs, exact products, fp32 accumulation (TPU v2/v3 MXU [DOC3]), and a
// software reference GEMM with the same rounding and the same order of additions, against which
// MxuPeArray must agree bit for bit.
#include <cstdint>
#include <cstring>

namespace tpusim {

// fp32 -> bf16 (kept in a float) with round to nearest, ties to even. NaN stays NaN (quiet).
inline float round_to_bf16(float x) {
    std::uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0) {
        bits |= 0x00400000u;  // quiet the NaN so that truncation cannot make it infinite
    } else {
        bits += 0x7fffu + ((bits >> 16) & 1u);
    }
    bits &= 0xffff0000u;
    float r;
    std::memcpy(&r, &bits, sizeof r);
    return r;
}

// C (m x n, leading dimension ldc) = A (m x k) * B (k x n), the way the MXU computes it: K is
// cut into tiles of `tile_k` (the array's rows); within a tile the partial sum of each output
// starts at +0 and adds bf16(a) * bf16(b) in increasing k, each product exact and each sum
// rounded to fp32 (a bf16 x bf16 product has 16 significant bits, so it is exact in fp32);
// the tile partials are added to C, which starts at +0, in increasing tile order.
void mxu_reference_gemm(std::int64_t tile_k, std::int64_t m, std::int64_t k, std::int64_t n,
                        const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                        float* c, std::int64_t ldc);

}  // namespace tpusim
