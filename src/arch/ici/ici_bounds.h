#pragma once
// Closed-form bounds of a lowered collective on a topology, for `bench ici` and the tests:
//   link load: the bytes each directed link must carry, from the routes the fabric takes;
//   link-limited time: the busiest link's load at the link bandwidth (no latency, no VPU);
//   reduction bound: the busiest core's reduction work at the cost model's rate;
//   latency floor: the dependent chain of steps with one packet per transfer (no bandwidth
//   term, no reduction): hops x (packet serialisation + link latency + router latency), or the
//   router latency alone on chip.
#include <vector>

#include "tpusim/common/types.h"

namespace tpusim {

class Topology;
class IciFabric;
class ReductionCostModel;
struct LoweredCollective;

std::vector<Bytes> link_loads(const LoweredCollective& c, const Topology& topo);
// In core cycles (fractional), from the fabric's link figures.
double link_limited_cycles(const LoweredCollective& c, const IciFabric& fabric);
double latency_floor_cycles(const LoweredCollective& c, const IciFabric& fabric);
// The busiest core's reductions back to back (the cost model's cycles for all the bytes it
// must reduce): the bound the reduction work sets, apart from the links.
double reduction_bound_cycles(const LoweredCollective& c, const ReductionCostModel& cost);

}  // namespace tpusim
