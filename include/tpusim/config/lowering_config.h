#pragma once
// How the program layer places ops on a core: tile sizes and chunking, the choices a compiler
// (XLA) makes. Modelling choices that decide results, so they are config keys; none is fitted
// to a measurement.
#include <cstdint>

#include "tpusim/config/visitor.h"

namespace tpusim {

struct LoweringConfig {
    // A matmul's tiles (A, B, the f32 accumulator and a fused consumer's buffers) may use this
    // fraction of VMEM per pipeline stage; two stages are in flight (double buffering).
    double matmul_vmem_fraction = 0.45;
    // Largest matmul tile before the VMEM budget shrinks it (K and N round up to the array).
    std::int64_t matmul_max_tile_m = 1024;
    std::int64_t matmul_max_tile_k = 2048;
    std::int64_t matmul_max_tile_n = 1024;
    // Target bytes per vector-op chunk (inputs + output) staged through VMEM.
    std::int64_t vector_chunk_bytes = 1 << 20;
    // When a program's live HBM exceeds a core's share, recompute cheap vector ops before
    // their late consumers as XLA's rematerialisation does (program/remat.h); off: such a
    // program is rejected as it stands.
    bool rematerialize = true;

    void visit(ConfigVisitor& v) {
        v.value("matmul_vmem_fraction", matmul_vmem_fraction, Limits::range(0.01, 0.5), "fraction",
                "share of VMEM one matmul pipeline stage may use (two stages in flight)");
        v.value("matmul_max_tile_m", matmul_max_tile_m, Limits::range(8, 1 << 20), "rows",
                "largest matmul tile along M");
        v.value("matmul_max_tile_k", matmul_max_tile_k, Limits::range(1, 1 << 20), "elements",
                "largest matmul tile along K (rounded up to mxu.rows)");
        v.value("matmul_max_tile_n", matmul_max_tile_n, Limits::range(1, 1 << 20), "elements",
                "largest matmul tile along N (rounded up to mxu.cols; whole rows when a "
                "row-wise op is fused)");
        v.value("vector_chunk_bytes", vector_chunk_bytes, Limits::range(1024, 1 << 30), "B",
                "target bytes (inputs + output) per vector-op chunk staged through VMEM");
        v.value("rematerialize", rematerialize,
                "recompute cheap vector ops when the live HBM exceeds a core's share, as XLA "
                "does");
    }
};

}  // namespace tpusim
