#pragma once
// Collectives run alone on the ICI model of the configured board or slice, with the figures
// `tpusim bench ici` reports: issued by every core through the collective rendezvous and
// IciNetwork modules `tpusim run` builds (run_ici_points, the CLI), or on the plain IciEngine
// inside them (run_ici_point, the unit tests).
#include <string>
#include <vector>

#include "tpusim/common/types.h"
#include "tpusim/config/tpu_config.h"
#include "tpusim/program/collectives.h"

namespace tpusim {

struct IciPoint {
    Bytes bytes = 0;
    int participants = 0;
    Cycle cycles = 0;
    double seconds = 0;
    double algbw_gbps = 0;               // bytes / seconds
    double busbw_gbps = 0;               // algbw x 2(n-1)/n for all-reduce (NCCL convention)
    double link_bound_seconds = 0;       // busiest link's bytes at link bandwidth
    double latency_floor_seconds = 0;    // dependent steps, one packet each
    double reduction_bound_seconds = 0;  // busiest core's reductions at the cost model's rate
    double bound_busbw_gbps = 0;         // busbw if the run took link_bound_seconds
    Bytes max_link_bytes = 0;
    double max_link_busy_fraction = 0;
    double wall_seconds = 0;
};

// Bus-bandwidth factor of a collective over n participants (NCCL's convention):
// all-reduce 2(n-1)/n; reduce-scatter and all-gather (n-1)/n; others 1.
double busbw_factor(CollectiveKind kind, int n);

// One collective on a fresh IciEngine (no SystemC kernel).
IciPoint run_ici_point(const TpuConfig& cfg, const CollectiveSpec& spec);
// Each of `specs` alone, one after another, issued by each of its cores as a collective
// instruction to a CollectiveRendezvous on an IciNetwork of the board (the modules every
// core's ici_out is bound to in `tpusim run`). A collective instruction carries no algorithm
// or piece count: those of `specs` are the config's. Elaborates SystemC: once per process.
std::vector<IciPoint> run_ici_points(const TpuConfig& cfg,
                                     const std::vector<CollectiveSpec>& specs);

// "1024", "64KiB", "4MiB", "1GiB" (also K, M, G as binary multiples). Throws InputError.
Bytes parse_byte_size(const std::string& text);

}  // namespace tpusim
