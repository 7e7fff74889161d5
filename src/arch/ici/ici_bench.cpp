#include "tpusim/arch/ici/ici_bench.h"

#include <algorithm>
#include <cctype>
#include <chrono>

#include "arch/ici/ici_bounds.h"
#include "tpusim/arch/ici/ici_engine.h"
#include "tpusim/common/error.h"
#include "tpusim/config/topology.h"

namespace tpusim {

namespace {
// Records when the benchmarked collective ended.
struct EndCycle final : CompletionIf {
    Cycle at = 0;
    void complete(std::uint64_t /*tag*/, Cycle c) override { at = c; }
};
}  // namespace

double busbw_factor(CollectiveKind kind, int n) {
    if (n < 2) return 0.0;
    const double dn = static_cast<double>(n);
    switch (kind) {
        case CollectiveKind::kAllReduce:
            return 2.0 * (dn - 1) / dn;
        case CollectiveKind::kReduceScatter:
        case CollectiveKind::kAllGather:
            return (dn - 1) / dn;
        default:
            return 1.0;
    }
}

IciPoint run_ici_point(const TpuConfig& cfg, const CollectiveSpec& spec_in) {
    const auto wall0 = std::chrono::steady_clock::now();
    const Topology topo(cfg.board, cfg.chip);
    const CollectiveSpec& spec = spec_in;
    const AnalyticalReductionCost cost(cfg.vpu, cfg.hbm, cfg.chip);
    IciEngine engine(topo, cfg.ici, cfg.chip.clock_mhz, cost);
    const LoweredCollective s = lower_collective(spec, topo, cfg.ici);
    IciPoint pt;
    pt.bytes = spec.bytes;
    pt.participants = static_cast<int>(s.streams.front().cores.size());
    const double hz = cfg.chip.clock_mhz * 1e6;
    pt.link_bound_seconds = link_limited_cycles(s, engine.fabric()) / hz;
    // The collective's setup (ici.collective_setup_us) precedes its first step.
    pt.latency_floor_seconds = latency_floor_cycles(s, engine.fabric()) / hz + s.setup_us * 1e-6;
    pt.reduction_bound_seconds = reduction_bound_cycles(s, cost) / hz;
    EndCycle end;
    engine.start(s, 0, ReplyTo{&end, 0});
    engine.run();
    const Cycle finished = end.at;
    pt.cycles = finished;
    pt.seconds = static_cast<double>(finished) / hz;
    const double factor = busbw_factor(spec.kind, pt.participants);
    if (pt.seconds > 0) {
        pt.algbw_gbps = static_cast<double>(spec.bytes) / pt.seconds / 1e9;
        pt.busbw_gbps = pt.algbw_gbps * factor;
    }
    if (pt.link_bound_seconds > 0) {
        pt.bound_busbw_gbps =
            static_cast<double>(spec.bytes) / pt.link_bound_seconds / 1e9 * factor;
    }
    const auto& fabric = engine.fabric();
    for (std::size_t l = 0; l < topo.links().size(); ++l) {
        pt.max_link_bytes = std::max(pt.max_link_bytes, fabric.link_bytes(l));
        if (finished > 0) {
            pt.max_link_busy_fraction = std::max(
                pt.max_link_busy_fraction, static_cast<double>(fabric.link_busy_ticks(l)) /
                                               static_cast<double>(finished * kTicksPerCycle));
        }
    }
    pt.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    return pt;
}

Bytes parse_byte_size(const std::string& text) {
    std::size_t i = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    const std::string num = text.substr(0, i), unit = text.substr(i);
    Bytes mult = 0;
    if (unit.empty() || unit == "B")
        mult = 1;
    else if (unit == "K" || unit == "KiB")
        mult = kKiB;
    else if (unit == "M" || unit == "MiB")
        mult = kMiB;
    else if (unit == "G" || unit == "GiB")
        mult = kGiB;
    if (num.empty() || num.size() > 12 || mult == 0) {
        throw InputError(
            "--sizes", "",
            "expected a byte count such as 1024, 64KiB, 4MiB or 1GiB, got \"" + text + "\"");
    }
    const Bytes v = std::stoull(num) * mult;
    if (v == 0)
        throw InputError("--sizes", "", "expected a positive byte count, got \"" + text + "\"");
    return v;
}

}  // namespace tpusim
