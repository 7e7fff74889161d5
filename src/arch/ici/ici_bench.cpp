#include "tpusim/arch/ici/ici_bench.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <memory>
#include <systemc>
#include <utility>

#include "arch/ici/ici_bounds.h"
#include "tpusim/arch/ici/collective_rendezvous.h"
#include "tpusim/arch/ici/ici_engine.h"
#include "tpusim/arch/ici/ici_network.h"
#include "tpusim/common/error.h"
#include "tpusim/common/sim_time.h"
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
        case CollectiveKind::AllReduce:
            return 2.0 * (dn - 1) / dn;
        case CollectiveKind::ReduceScatter:
        case CollectiveKind::AllGather:
            return (dn - 1) / dn;
        default:
            return 1.0;
    }
}

namespace {

// The figures of one point: `finished` cycles for the collective, `link_bytes` and
// `link_busy_ticks` per link (of this collective alone).
IciPoint make_point(const TpuConfig& cfg, const CollectiveSpec& spec, const LoweredCollective& s,
                    const IciFabric& fabric, const ReductionCostModel& cost, Cycle finished,
                    const std::vector<Bytes>& link_bytes, const std::vector<Tick>& link_busy) {
    IciPoint pt;
    pt.bytes = spec.bytes;
    pt.participants = static_cast<int>(s.streams.front().cores.size());
    const double hz = cfg.chip.clock_mhz * 1e6;
    pt.link_bound_seconds = link_limited_cycles(s, fabric) / hz;
    // The collective's setup (ici.collective_setup_us) precedes its first step.
    pt.latency_floor_seconds = latency_floor_cycles(s, fabric) / hz + s.setup_us * 1e-6;
    pt.reduction_bound_seconds = reduction_bound_cycles(s, cost) / hz;
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
    for (std::size_t l = 0; l < link_bytes.size(); ++l) {
        pt.max_link_bytes = std::max(pt.max_link_bytes, link_bytes[l]);
        if (finished > 0) {
            pt.max_link_busy_fraction = std::max(
                pt.max_link_busy_fraction,
                static_cast<double>(link_busy[l]) / static_cast<double>(finished * kTicksPerCycle));
        }
    }
    return pt;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The collective instructions the cores of `spec` issue for it, as their lowered programs do:
// a group collective once per core of its group (all cores when empty), a send / recv as the
// send of its source and the recv of its destination.
std::vector<std::pair<std::int64_t, Instr>> collective_instrs(const CollectiveSpec& spec, int cores,
                                                              std::uint64_t instance) {
    const auto instr = [](CollectiveInstr c) {
        Instr in;
        in.unit = Unit::Ici;
        in.coll = std::make_shared<const CollectiveInstr>(std::move(c));
        return in;
    };
    CollectiveInstr c;
    c.kind = spec.kind;
    c.bytes = spec.bytes;
    c.element_bytes = static_cast<std::int64_t>(spec.element_bytes);
    c.instance = instance;
    std::vector<std::pair<std::int64_t, Instr>> out;
    if (spec.kind == CollectiveKind::SendRecv) {
        for (const auto& [src, dst] : spec.pairs) {
            c.role = CollectiveInstr::Role::Send;
            c.peer = dst;
            out.emplace_back(src, instr(c));
            c.role = CollectiveInstr::Role::Recv;
            c.peer = src;
            out.emplace_back(dst, instr(c));
        }
        return out;
    }
    for (int g : spec.group) c.group.push_back(g);
    if (c.group.empty()) {
        for (int g = 0; g < cores; ++g) c.group.push_back(g);
    }
    for (const auto& [src, dst] : spec.pairs) c.pairs.emplace_back(src, dst);
    const Instr in = instr(c);
    for (std::int64_t g : c.group) out.emplace_back(g, in);
    return out;
}

// Runs the specs one after another, from one SC_THREAD, through the collective rendezvous
// `tpusim run` binds every core's ici_out to (UnitIf): every core of a collective issues its
// instruction at the same cycle, and the collective has ended when each has been told.
struct IciBenchDriver : sc_core::sc_module, UnitDoneIf {
    sc_core::sc_port<UnitIf> ici_out{"ici_out"};

    SC_HAS_PROCESS(IciBenchDriver);
    IciBenchDriver(sc_core::sc_module_name n, const TpuConfig& cfg, const Topology& topo,
                   const ReductionCostModel& cost, IciNetwork& net,
                   const std::vector<CollectiveSpec>& specs)
        : sc_module(n), cfg_(cfg), topo_(topo), cost_(cost), net_(net), specs_(specs) {
        SC_THREAD(run);
    }
    void run() {
        const IciFabric& fabric = net_.engine().fabric();
        const std::size_t links = topo_.links().size();
        for (std::size_t i = 0; i < specs_.size(); ++i) {
            const CollectiveSpec& spec = specs_[i];
            const auto wall0 = std::chrono::steady_clock::now();
            std::vector<Bytes> bytes0(links);
            std::vector<Tick> busy0(links);
            for (std::size_t l = 0; l < links; ++l) {
                bytes0[l] = fabric.link_bytes(l);
                busy0[l] = fabric.link_busy_ticks(l);
            }
            const Cycle start = now_cycles();
            const auto instrs = collective_instrs(spec, topo_.cores(), i);
            told_ = 0;
            expected_ = instrs.size();
            end_ = start;
            for (const auto& [core, in] : instrs) {
                ici_out->issue(in, UnitRequest{UnitReply{this, 0}, Issuer{core, 0, nullptr}});
            }
            while (told_ < expected_) wait(ended_);
            for (std::size_t l = 0; l < links; ++l) {
                bytes0[l] = fabric.link_bytes(l) - bytes0[l];
                busy0[l] = fabric.link_busy_ticks(l) - busy0[l];
            }
            points.push_back(make_point(cfg_, spec, lower_collective(spec, topo_, cfg_.ici), fabric,
                                        cost_, end_ - start, bytes0, busy0));
            points.back().wall_seconds = seconds_since(wall0);
        }
    }
    void done(std::uint64_t, const UnitDone& d) override {
        end_ = std::max(end_, d.end);
        if (++told_ == expected_) ended_.notify(sc_core::SC_ZERO_TIME);
    }
    const TpuConfig& cfg_;
    const Topology& topo_;
    const ReductionCostModel& cost_;
    IciNetwork& net_;
    const std::vector<CollectiveSpec>& specs_;
    std::size_t told_ = 0, expected_ = 0;
    Cycle end_ = 0;
    sc_core::sc_event ended_;
    std::vector<IciPoint> points;
};

}  // namespace

IciPoint run_ici_point(const TpuConfig& cfg, const CollectiveSpec& spec) {
    const auto wall0 = std::chrono::steady_clock::now();
    const Topology topo(cfg.board, cfg.chip);
    const AnalyticalReductionCost cost(cfg.vpu, cfg.hbm, cfg.chip);
    IciEngine engine(topo, cfg.ici, cfg.chip.clock_mhz, cost);
    const LoweredCollective s = lower_collective(spec, topo, cfg.ici);
    EndCycle end;
    engine.start(s, 0, ReplyTo{&end, 0});
    engine.run();
    const auto& fabric = engine.fabric();
    std::vector<Bytes> bytes(topo.links().size());
    std::vector<Tick> busy(topo.links().size());
    for (std::size_t l = 0; l < bytes.size(); ++l) {
        bytes[l] = fabric.link_bytes(l);
        busy[l] = fabric.link_busy_ticks(l);
    }
    IciPoint pt = make_point(cfg, spec, s, fabric, cost, end.at, bytes, busy);
    pt.wall_seconds = seconds_since(wall0);
    return pt;
}

std::vector<IciPoint> run_ici_points(const TpuConfig& cfg,
                                     const std::vector<CollectiveSpec>& specs) {
    const Topology topo(cfg.board, cfg.chip);
    const AnalyticalReductionCost cost(cfg.vpu, cfg.hbm, cfg.chip);
    IciNetwork net("ici", topo, cfg.ici, cfg.chip.clock_mhz, cost);
    CollectiveRendezvous rendezvous("ici_rendezvous", net);
    IciBenchDriver driver("bench_ici", cfg, topo, cost, net, specs);
    driver.ici_out.bind(rendezvous.core_in);
    sc_core::sc_start();
    return driver.points;
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
