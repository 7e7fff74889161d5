#pragma once
// TensorCore: sequencer (scalar unit + VLIW bundle slots) and vector unit.
#include <cstdint>

#include "tpusim/config/visitor.h"
#include "tpusim/config/vpu_config.h"  // VpuConfig lives there; kept visible here

namespace tpusim {

struct CoreConfig {
    std::int64_t mxus = 2;  // MXUs per TensorCore: 1 on v2, 2 on v3 [DOC3]

    void visit(ConfigVisitor& v) {
        v.value("mxus", mxus, Limits::range(1, 16), "MXUs", "matrix units per TensorCore");
    }
};

}  // namespace tpusim
