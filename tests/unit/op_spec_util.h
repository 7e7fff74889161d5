#pragma once
// Helpers for the program-layer tests (lowering, instruction streams): OpSpecs built directly,
// without a trace.
#include <cstddef>
#include <cstdint>

#include "tpusim/program/lowering.h"
#include "tpusim/program/program.h"

namespace tpusim::test {

// A bf16 matmul op (m x k) . (k x n) with no dependencies.
inline OpSpec matmul_spec(const char* id, std::int64_t m, std::int64_t k, std::int64_t n) {
    OpSpec s;
    s.id = id;
    s.kind = OpKind::Matmul;
    s.m = m;
    s.k = k;
    s.n = n;
    return s;
}

// An f32 vector op of rows x cols with `inputs` full-size operands, no dependencies.
inline OpSpec vector_spec(const char* id, VectorOp op, std::int64_t rows, std::int64_t cols,
                          std::int64_t inputs = 1, bool rowwise = false) {
    OpSpec s;
    s.id = id;
    s.kind = OpKind::Vector;
    s.vop = op;
    s.rows = rows;
    s.cols = cols;
    s.in_bytes = s.out_bytes = 4;
    s.vector_inputs = inputs;
    s.rowwise = rowwise;
    return s;
}

struct Totals {
    std::uint64_t macs = 0, dma_in = 0, dma_out = 0, vec_elems = 0;
    std::size_t mxu_instrs = 0, dma_instrs = 0, vpu_instrs = 0;
};

// What one core's instruction stream does: MACs, DMA bytes each way, VPU elements.
inline Totals totals(const CoreProgram& p) {
    Totals t;
    for (const auto& in : p.instrs) {
        switch (in.unit) {
            case Unit::Mxu:
                t.macs += static_cast<std::uint64_t>(in.mm().m * in.mm().k * in.mm().n);
                ++t.mxu_instrs;
                break;
            case Unit::Dma:
                (in.dma().to_vmem() ? t.dma_in : t.dma_out) += in.dma().bytes();
                ++t.dma_instrs;
                break;
            case Unit::Vpu:
                t.vec_elems += static_cast<std::uint64_t>(in.vec().rows * in.vec().cols);
                ++t.vpu_instrs;
                break;
            default:
                break;
        }
    }
    return t;
}

}  // namespace tpusim::test
