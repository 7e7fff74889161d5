#pragma once
// Trace ops -> the program layer's OpSpec list, then lowering: the front door of the program
// layer for `tpusim run`.
#include "tpusim/config/tpu_config.h"
#include "tpusim/program/lowering.h"
#include "tpusim/trace/trace.h"

namespace tpusim {

std::vector<OpSpec> op_specs(const Trace& trace);
Program lower_trace(const Trace& trace, const TpuConfig& cfg);

}  // namespace tpusim
