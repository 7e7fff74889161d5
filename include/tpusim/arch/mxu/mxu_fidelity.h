#pragma once
// The two MXU fidelities (docs/mxu.md): "tile", the closed-form pass schedule, and "pe", every
// processing element stepped every cycle. Same cycles for every shape (tested).
#include <string>

#include "tpusim/config/sim_config.h"  // enum class MxuFidelity

namespace tpusim {

// "Tile" or "Pe"; throws std::invalid_argument otherwise.
MxuFidelity parse_mxu_fidelity(const std::string& name);
const char* to_string(MxuFidelity f);

}  // namespace tpusim
