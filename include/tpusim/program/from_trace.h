#pragma once
// Trace ops -> the program layer's OpSpec list, then lowering: the front door of the program
// layer for `tpusim run`.
#include "tpusim/config/tpu_config.h"
#include "tpusim/program/lowering.h"
#include "tpusim/trace/trace.h"

namespace tpusim {

// The order in which the cores issue the trace's ops. The sequencer issues in order, so an op
// waiting on a collective would stall every later op behind it; like XLA's latency-hiding
// scheduler, ops that depend (directly or through other such ops) on a collective are
// deferred, in trace order, to just before the next collective that needs them, or to the
// end. Every other op
// keeps its trace position, so independent work (the next layer's backward pass) runs while
// the collective is on the wire. Returns trace op indices in issue order (a topological order).
std::vector<std::size_t> issue_order(const Trace& trace);

// The trace's ops in issue_order, dependencies renumbered to that order.
std::vector<OpSpec> op_specs(const Trace& trace);
// `lowered_trips` > 0: each loop lowers at most that many of its trips (loop reuse,
// docs/program.md "Loops"); per-op figures still count every trip.
Program lower_trace(const Trace& trace, const TpuConfig& cfg, std::int64_t lowered_trips = 0);

}  // namespace tpusim
