#pragma once
// Which `"fused": true` ops the program layer runs inside their producer (docs/program.md
// "Fusion"), and why the others cannot be: one decision, used by the lowering and reported to
// the user as a located warning, so the flag is never dropped silently.
#include <cstddef>
#include <string>
#include <vector>

#include "tpusim/config/tpu_config.h"
#include "tpusim/program/lowering.h"

namespace tpusim {

// The first fused op (in program order) whose primary operand comes from each op, or
// SIZE_MAX: a producer hands its tiles to one fused consumer.
std::vector<std::size_t> first_fused_consumers(const std::vector<OpSpec>& ops);

// Empty when ops[i] (marked fused) runs on its producer's result tiles in VMEM; otherwise why
// not (then its primary operand goes through HBM). Not meaningful for ops without `fused`.
// A producer whose result other ops also read still writes it to HBM (multi-output fusion).
std::string fusion_blocker(const std::vector<OpSpec>& ops, std::size_t i,
                           const std::vector<std::size_t>& first_fused, const TpuConfig& cfg);

}  // namespace tpusim
