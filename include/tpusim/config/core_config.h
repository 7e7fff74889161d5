#pragma once
// TensorCore: sequencer (scalar unit + VLIW bundle slots) and vector unit.
#include <cstdint>

#include "tpusim/config/visitor.h"

namespace tpusim {

struct CoreConfig {
    std::int64_t mxus = 2;  // MXUs per TensorCore: 1 on v2, 2 on v3 [DOC3]

    void visit(ConfigVisitor& v) {
        v.value("mxus", mxus, Limits::range(1, 16), "MXUs", "matrix units per TensorCore");
    }
};

// Vector unit: sublanes x lanes of 32-bit ALUs [HC20].
struct VpuConfig {
    std::int64_t sublanes = 8;
    std::int64_t lanes = 128;
    std::int64_t alus_per_lane = 2;
    std::int64_t vregs = 32;

    std::int64_t elements_per_vreg() const { return sublanes * lanes; }

    void visit(ConfigVisitor& v) {
        v.value("sublanes", sublanes, Limits::pow2_max(64), "sublanes", "vector sublanes");
        v.value("lanes", lanes, Limits::pow2_max(1024), "lanes", "vector lanes");
        v.value("alus_per_lane", alus_per_lane, Limits::range(1, 8), "ALUs",
                "32-bit ALUs per lane and sublane");
        v.value("vregs", vregs, Limits::range(1, 1024), "registers", "vector registers");
    }
};

}  // namespace tpusim
