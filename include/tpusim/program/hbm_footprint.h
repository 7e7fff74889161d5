#pragma once
// The live HBM footprint of a trace on one core, checked against the core's share of HBM the
// way XLA rejects a program at compile time ("resource exhausted") instead of running it.
//
// Model (docs/program.md "HBM capacity"): ops run in issue order. An operand that comes from
// a dep (the primary operand from deps[0], operand j from deps[j]) is that dep's result;
// the parameters (weights, inputs) are resident for the whole program. A trace that declares
// `parameter_bytes` (an imported HLO module: the sum of its entry parameters) counts each
// parameter once, however many ops read it; otherwise every operand without a producer counts
// as a parameter of its own (the trace names no tensors), an upper bound when a weight is read
// by several ops. A result is live from its op until its last consumer on the core has run, or
// to the end when nothing consumes it (a program output); a result kept on chip by fused
// consumers takes no HBM.
#include <cstddef>
#include <cstdint>

#include "tpusim/config/tpu_config.h"
#include "tpusim/trace/trace.h"

namespace tpusim {

struct HbmFootprint {
    std::int64_t peak_bytes = 0;       // the largest footprint while an op runs
    std::size_t peak_op = 0;           // trace index of the op at the peak
    std::int64_t parameter_bytes = 0;  // resident operands
    std::int64_t core = 0;             // the core with the largest peak
};

// A core's share of HBM: the chip's capacity over its cores.
std::int64_t hbm_bytes_per_core(const TpuConfig& cfg);

// Per core running the program; the core with the largest peak.
HbmFootprint hbm_footprint(const Trace& trace);

// Throws InputError(trace path, op "<id>", ...) naming the first op at which a core's live
// footprint exceeds its share of HBM (capacity per chip / cores per chip).
void check_hbm_capacity(const Trace& trace, const TpuConfig& cfg);

}  // namespace tpusim
