#pragma once
// Helpers for the program-layer tests (lowering, instruction streams): OpSpecs built directly,
// without a trace.
#include <cstdint>

#include "tpusim/program/lowering.h"

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

}  // namespace tpusim::test
