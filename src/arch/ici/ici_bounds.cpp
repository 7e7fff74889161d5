#include "arch/ici/ici_bounds.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "tpusim/arch/ici/ici_engine.h"
#include "tpusim/arch/ici/ici_fabric.h"
#include "tpusim/program/collectives.h"

namespace tpusim {

std::vector<Bytes> link_loads(const LoweredCollective& lc, const Topology& topo) {
    std::vector<Bytes> load(topo.links().size(), 0);
    for (const Schedule& s : lc.streams)
        for (const auto& c : s.cores) {
            const int src = topo.chip_of_core(c.core);
            for (const auto& st : c.steps) {
                for (const auto& t : st.sends) {
                    const int dst =
                        topo.chip_of_core(s.cores[static_cast<std::size_t>(t.dst)].core);
                    for (const auto& h : topo.route(src, dst, t.prefer_sign))
                        load[h.link] += t.bytes;
                }
            }
        }
    return load;
}

double link_limited_cycles(const LoweredCollective& c, const IciFabric& fabric) {
    const auto load = link_loads(c, fabric.topology());
    const Bytes worst = load.empty() ? 0 : *std::max_element(load.begin(), load.end());
    return static_cast<double>(worst) / fabric.link_bytes_per_cycle();
}

namespace {

double stream_floor_cycles(const Schedule& s, const IciFabric& fabric) {
    const Topology& topo = fabric.topology();
    std::size_t steps = 0;
    for (const auto& c : s.cores) steps = std::max(steps, c.steps.size());
    // start[p]: earliest start of participant p's current step, in ticks.
    std::vector<Tick> start(s.cores.size(), 0), finish(s.cores.size(), 0);
    for (std::size_t k = 0; k < steps; ++k) {
        finish = start;
        for (std::size_t p = 0; p < s.cores.size(); ++p) {
            if (k >= s.cores[p].steps.size()) continue;
            const int src = topo.chip_of_core(s.cores[p].core);
            for (const auto& t : s.cores[p].steps[k].sends) {
                if (static_cast<std::size_t>(t.dst_step) != k) {
                    throw std::logic_error("latency floor: transfer to another step");
                }
                if (t.bytes == 0) continue;
                const int dst = topo.chip_of_core(s.cores[static_cast<std::size_t>(t.dst)].core);
                const auto hops = topo.route(src, dst, t.prefer_sign).size();
                const Tick packet =
                    fabric.serialise_ticks(std::min<Bytes>(t.bytes, fabric.packet_bytes()));
                const Tick lat =
                    hops == 0 ? fabric.router_ticks()
                              : hops * (packet + fabric.latency_ticks() + fabric.router_ticks());
                auto& f = finish[static_cast<std::size_t>(t.dst)];
                f = std::max(f, start[p] + lat);
            }
        }
        start = finish;
    }
    const Tick worst = start.empty() ? 0 : *std::max_element(start.begin(), start.end());
    return static_cast<double>(worst) / kTicksPerCycle;
}

}  // namespace

double latency_floor_cycles(const LoweredCollective& c, const IciFabric& fabric) {
    double worst = 0;
    for (const Schedule& s : c.streams) worst = std::max(worst, stream_floor_cycles(s, fabric));
    return worst;
}

}  // namespace tpusim

namespace tpusim {

double reduction_bound_cycles(const LoweredCollective& c, const ReductionCostModel& cost) {
    std::map<int, Bytes> per_core;
    Bytes element = 4;
    for (const Schedule& s : c.streams) {
        element = s.element_bytes;
        for (const auto& core : s.cores) {
            for (const auto& st : core.steps) {
                if (st.reduce) per_core[core.core] += st.recv_bytes;
            }
        }
    }
    Bytes worst = 0;
    for (const auto& [core, bytes] : per_core) worst = std::max(worst, bytes);
    return cost.cycles(worst, element);
}

}  // namespace tpusim
