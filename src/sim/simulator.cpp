#include "tpusim/sim/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "board.h"
#include "loop_reuse.h"
#include "tpusim/common/progress.h"
#include "tpusim/common/sanitizer.h"
#include "tpusim/common/sim_time.h"
#include "tpusim/sim/derived.h"
#include "tpusim/sim/symmetry.h"

namespace tpusim {

Simulator::Simulator(const TpuConfig& cfg, RunOptions opts)
    : cfg_(cfg),
      opts_(opts),
      timeline_(cfg.chip.clock_mhz, opts.timeline),
      hbm_calibrations_(opts.hbm_cache) {}

Simulator::~Simulator() = default;

std::string bottleneck_of(double mxu, double hbm, double vpu, double ici, double host) {
    const std::pair<double, const char*> c[] = {
        {mxu, "compute"}, {hbm, "hbm"}, {vpu, "vector"}, {ici, "ici"}, {host, "host"}};
    const auto* best = std::max_element(std::begin(c), std::end(c),
                                        [](auto& a, auto& b) { return a.first < b.first; });
    // A unit bounds the time when it is busy at least half of it; below that no unit is
    // (the time goes to dependencies, pipeline fill and issue), whatever their sum.
    return best->first < 0.5 ? "latency" : best->second;
}

UnitShares unit_shares(const Cycle busy[kUnitCount], Bytes hbm_bytes, Cycle cycles,
                       std::int64_t cores, const TpuConfig& cfg) {
    UnitShares s;
    const double d = static_cast<double>(cycles) * static_cast<double>(cores);
    if (d <= 0) return s;
    // A core reaches the channels of its own share of the chip's HBM (docs/program.md).
    const double core_hbm_bytes_per_cycle = cfg.hbm.peak_bytes_per_second() /
                                            static_cast<double>(cfg.chip.cores_per_chip) /
                                            (cfg.chip.clock_mhz * 1e6);
    s.mxu = static_cast<double>(busy[static_cast<int>(Unit::Mxu)]) /
            (d * static_cast<double>(cfg.core.mxus));
    s.hbm = static_cast<double>(hbm_bytes) / (d * core_hbm_bytes_per_cycle);
    s.vpu = static_cast<double>(busy[static_cast<int>(Unit::Vpu)]) / d;
    s.ici = static_cast<double>(busy[static_cast<int>(Unit::Ici)]) / d;
    s.host = static_cast<double>(busy[static_cast<int>(Unit::Host)]) / d;
    return s;
}

std::string bottleneck_of(const UnitShares& s) {
    return bottleneck_of(s.mxu, s.hbm, s.vpu, s.ici, s.host);
}

namespace {

// One rule for ops and runs (bottleneck_of over unit_shares). Work fused into a producer runs
// inside the producer's tiles, so it counts on the units that did it, within the producer's
// verdict: the group's busy cycles and HBM bytes over the span from the first start to the
// last end. The fused op itself says where it ran.
void assign_verdicts(const Program& program, RunResult& r, const TpuConfig& cfg) {
    std::unordered_map<std::string, std::size_t> index;
    for (std::size_t i = 0; i < program.ops.size(); ++i) index.emplace(program.ops[i].id, i);
    auto root_of = [&](std::size_t i) {
        for (std::size_t guard = 0; guard < program.ops.size(); ++guard) {
            const auto it = index.find(program.ops[i].fused_into);
            if (program.ops[i].fused_into.empty() || it == index.end()) break;
            i = it->second;
        }
        return i;
    };
    struct Group {
        Cycle busy[kUnitCount] = {0, 0, 0, 0, 0};
        Bytes hbm = 0;
        Cycle start = ~Cycle{0}, end = 0;
        std::int64_t cores = 1;
    };
    std::vector<Group> groups(r.ops.size());
    for (std::size_t i = 0; i < r.ops.size(); ++i) {
        const OpResult& op = r.ops[i];
        Group& g = groups[root_of(i)];
        for (std::size_t u = 0; u < kUnitCount; ++u) g.busy[u] += op.busy[u];
        g.hbm += op.hbm_bytes;
        if (op.end_cycle > op.start_cycle || op.cores_ran > 0) {
            g.start = std::min(g.start, op.start_cycle);
            g.end = std::max(g.end, op.end_cycle);
        }
        if (program.ops[i].fused_into.empty()) g.cores = std::max<std::int64_t>(op.cores_ran, 1);
    }
    for (std::size_t i = 0; i < r.ops.size(); ++i) {
        OpResult& op = r.ops[i];
        if (!program.ops[i].fused_into.empty()) {
            op.bottleneck = "fused into " + program.ops[i].fused_into;
            continue;
        }
        const Group& g = groups[i];
        const Cycle d = g.end > g.start ? g.end - g.start : 0;
        op.bottleneck =
            d == 0 ? "latency" : bottleneck_of(unit_shares(g.busy, g.hbm, d, g.cores, cfg));
    }
}

}  // namespace

std::string Simulator::module_tree() {
    board_ = std::make_unique<Board>("board", cfg_, &timeline_, hbm_calibrations_);
    return tpusim::module_tree(*board_);
}

std::string Simulator::reuse_refusal(const Program& program) const {
    const SymmetryPlan plan = plan_symmetry(program, cfg_, opts_.symmetry, opts_.timeline);
    return LoopReuse::refusal(program, plan.cores);
}

RunResult Simulator::run(const Program& program) {
    const auto ncores = static_cast<std::int64_t>(program.cores.size());
    if (ncores > cfg_.cores()) {
        throw std::logic_error("program has more cores than the board");
    }
    if (program.refused_loop_reuse) {
        throw std::logic_error("program lowered only as far as a loop that refuses loop reuse");
    }
    // Under SPMD symmetry the simulated cores (chip 0's, or a block of chips') stand for all:
    // every other core runs the same instructions at the same cycles as its image among them,
    // so its figures are its image's (its chip's stat group is a copy, and the totals below
    // count each simulated core once per copy). sim[k]: the k-th simulated core's id.
    const SymmetryPlan plan = plan_symmetry(program, cfg_, opts_.symmetry, opts_.timeline);
    board_ = std::make_unique<Board>("board", cfg_, &timeline_, hbm_calibrations_, plan.like,
                                     plan.image);
    const std::vector<std::int64_t>& sim = plan.cores;
    const auto nsim = static_cast<std::int64_t>(sim.size());
    auto core_at = [&](std::int64_t k) -> TensorCore& {
        return board_->core(sim[static_cast<std::size_t>(k)]);
    };
    RunResult r;
    std::unique_ptr<LoopReuse> reuse;
    for (const ProgramLoop& l : program.loops) r.loop_reuse.tried |= l.lowered_trips < l.trips;
    if (r.loop_reuse.tried) {
        r.loop_reuse.refused = LoopReuse::refusal(program, sim);
        if (!r.loop_reuse.refused.empty()) return r;
        std::vector<TensorCore*> cores;
        for (std::int64_t c = 0; c < nsim; ++c) cores.push_back(&core_at(c));
        reuse =
            std::make_unique<LoopReuse>(program, sim, board_->stats(), std::move(cores),
                                        board_->ici_fabric(), board_->topology().links().size());
    }
    std::size_t total_instrs = 0;
    for (std::int64_t c = 0; c < nsim; ++c) {
        const CoreProgram& cp =
            program.cores[static_cast<std::size_t>(sim[static_cast<std::size_t>(c)])];
        core_at(c).load(cp, program.ops);
        total_instrs += cp.instrs.size();
    }

    // Run in slices so that a stall is detected and long runs report progress: simulated
    // time, the share of instructions completed (not issued: a core waiting on a collective
    // has issued everything) and an estimate of the time left.
    ProgressLine progress(opts_.progress);
    // Slices adapt to the wall time they take (a PE-fidelity run may spend minutes on a few
    // million cycles), so progress and stall checks come every fraction of a second.
    Cycle slice = Cycle{1} << 16;
    auto all_done = [&] {
        for (std::int64_t c = 0; c < nsim; ++c) {
            if (!core_at(c).finished()) return false;
        }
        return true;
    };
    while (!all_done()) {
        const auto w0 = std::chrono::steady_clock::now();
        sc_core::sc_start(cycles(slice));
        // Back on the main stack: tell ASan so (a no-op without sanitizers) before anything
        // here throws; otherwise it unwinds with the last coroutine's stack bounds
        // (include/tpusim/common/sanitizer.h) and reports false stack overflows.
        announce_main_stack_to_sanitizers();
        const double w =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
        if (w < 0.05 && slice < (Cycle{1} << 26)) {
            slice *= 2;
        } else if (w > 0.5 && slice > (Cycle{1} << 10)) {
            slice /= 2;
        }
        std::uint32_t apart_op = 0;
        if (const std::string apart = board_->groups_apart(apart_op); !apart.empty()) {
            throw SymmetryBroken(fmt::format(
                "the collective of op \"{}\"{} {}: its replica groups do not run alike",
                apart_op < program.ops.size() ? program.ops[apart_op].id : "?",
                plan.unit_x * plan.unit_y > 1
                    ? fmt::format(" (the unit: a block of {} x {} chips)", plan.unit_x, plan.unit_y)
                    : "",
                apart));
        }
        if (!all_done() && !sc_core::sc_pending_activity()) {
            throw std::logic_error(fmt::format(
                "simulation stalled at cycle {} with instructions outstanding", now_cycles()));
        }
        if (opts_.max_cycles > 0 && now_cycles() >= opts_.max_cycles && !all_done()) {
            throw CycleBudgetExceeded(fmt::format(
                "simulation passed its budget of {} cycles with instructions outstanding",
                opts_.max_cycles));
        }
        std::size_t completed = 0;
        for (std::int64_t c = 0; c < nsim; ++c) completed += core_at(c).completed();
        progress.update(
            fmt::format("simulated {:.3f} ms (cycle {}), {} of {} instructions completed",
                        static_cast<double>(now_cycles()) / (cfg_.chip.clock_mhz * 1e3),
                        now_cycles(), completed, total_instrs),
            static_cast<double>(completed) /
                static_cast<double>(std::max<std::size_t>(total_instrs, 1)));
    }
    progress.finish();

    // Per simulated core: each op's timing and the core's end (with the trips loop reuse
    // charged, when it did).
    std::vector<std::vector<OpTiming>> timing;
    std::vector<Cycle> ends;
    for (std::int64_t c = 0; c < nsim; ++c) {
        timing.push_back(core_at(c).stats().ops);
        ends.push_back(core_at(c).end_cycle());
    }
    if (reuse) {
        r.loop_reuse.refused = reuse->charge(timing, ends);
        if (!r.loop_reuse.refused.empty()) return r;
        r.loop_reuse.simulated_trips = reuse->simulated_trips();
        r.loop_reuse.charged_trips = reuse->charged_trips();
    }
    r.symmetry.used = plan.used;
    r.symmetry.simulated_cores = nsim;
    r.symmetry.reason = plan.reason;
    if (plan.used && plan.unit_x * plan.unit_y > 1) {
        r.symmetry.unit_chips_x = plan.unit_x;
        r.symmetry.unit_chips_y = plan.unit_y;
        r.symmetry.cores = sim;
    }
    r.cores = ncores;
    r.chips = (ncores + cfg_.chip.cores_per_chip - 1) / cfg_.chip.cores_per_chip;
    for (std::int64_t c = 0; c < nsim; ++c) {
        core_at(c).flush_timeline();
        r.cycles = std::max(r.cycles, ends[static_cast<std::size_t>(c)]);
    }
    r.seconds = static_cast<double>(r.cycles) / (cfg_.chip.clock_mhz * 1e6);
    const DerivedFigures d = derive(cfg_);
    r.peak_tflops = d.peak_flops_per_core * static_cast<double>(ncores) / 1e12;
    // How many cores of the board each simulated core stands for, from the stat tree.
    const auto in_tree = board_->stats().multiplicities();
    std::vector<std::uint64_t> copies;
    for (std::int64_t c = 0; c < nsim; ++c) copies.push_back(in_tree.at(&core_at(c).stats().group));
    r.ops.resize(program.ops.size());
    for (std::size_t i = 0; i < program.ops.size(); ++i) {
        OpResult& op = r.ops[i];
        op.id = program.ops[i].id;
        op.kind = program.ops[i].kind;
        op.start_cycle = ~Cycle{0};
        std::int64_t ran = 0;
        for (std::int64_t c = 0; c < nsim; ++c) {
            const OpTiming& t = timing[static_cast<std::size_t>(c)][i];
            if (!t.ran()) continue;
            const std::uint64_t n = copies[static_cast<std::size_t>(c)];
            ran += static_cast<std::int64_t>(n);
            op.start_cycle = std::min(op.start_cycle, t.start);
            op.end_cycle = std::max(op.end_cycle, t.end);
            for (std::size_t u = 0; u < kUnitCount; ++u) op.busy[u] += t.busy[u] * n;
        }
        if (ran == 0) op.start_cycle = 0;
        op.flops = program.ops[i].flops * static_cast<double>(ran);
        op.hbm_bytes = program.ops[i].hbm_bytes * static_cast<Bytes>(ran);
        op.cores_ran = ran;
        op.trips = program.ops[i].trips;
        r.flops += op.flops;
        if (op.kind == OpKind::Matmul) r.mxu_flops += op.flops;
    }
    assign_verdicts(program, r, cfg_);
    // Kernels and the critical-path split, on the core that ends last (the first such).
    static_assert(kUnitCount == kUnitCountForKernels, "kernel rows keep a count per Unit");
    {
        std::int64_t path_core = 0;
        for (std::int64_t c = 0; c < nsim; ++c)
            if (ends[static_cast<std::size_t>(c)] > ends[static_cast<std::size_t>(path_core)])
                path_core = c;
        std::unordered_map<std::string, std::size_t> index;
        for (std::size_t i = 0; i < program.ops.size(); ++i) index.emplace(program.ops[i].id, i);
        std::vector<KernelOpInput> in(program.ops.size());
        for (std::size_t i = 0; i < program.ops.size(); ++i) {
            const OpInfo& info = program.ops[i];
            const OpResult& op = r.ops[i];
            KernelOpInput& k = in[i];
            k.id = op.id;
            k.kind = op.kind;
            if (!info.fused_into.empty()) {
                const auto it = index.find(info.fused_into);
                if (it != index.end()) k.fused_into = it->second;
            }
            k.deps = info.deps;
            k.loop = info.loop;
            k.trips = info.trips;
            const OpTiming& t = timing[static_cast<std::size_t>(path_core)][i];
            k.ran_on_core = t.ran();
            if (k.ran_on_core) {
                k.core_start = t.start;
                k.core_end = t.end;
                for (std::size_t u = 0; u < kUnitCount; ++u) {
                    double b = static_cast<double>(t.busy[u]);
                    if (u == static_cast<std::size_t>(Unit::Mxu))
                        b /= static_cast<double>(std::max<std::int64_t>(cfg_.core.mxus, 1));
                    k.core_weight = std::max(k.core_weight, b);
                    if (t.busy[u] > 0) k.core_units |= 1u << u;
                }
            }
            k.start_cycle = op.start_cycle;
            k.end_cycle = op.end_cycle;
            k.ran = op.end_cycle > op.start_cycle || op.cores_ran > 0;
            for (std::size_t u = 0; u < kUnitCount; ++u) k.busy[u] = op.busy[u];
            k.flops = op.flops;
            k.hbm_bytes = op.hbm_bytes;
            k.bottleneck = op.bottleneck;
        }
        r.kernels = attribute_kernels(in, sim[static_cast<std::size_t>(path_core)], r.cycles);
    }
    r.achieved_tflops = r.seconds > 0 ? r.mxu_flops / r.seconds / 1e12 : 0.0;
    r.mxu_utilization = r.peak_tflops > 0 ? r.achieved_tflops / r.peak_tflops : 0.0;
    board_->collect(r);
    r.hbm_gbps_per_chip = r.seconds > 0
                              ? static_cast<double>(r.hbm_bytes_read + r.hbm_bytes_written) /
                                    static_cast<double>(r.chips) / r.seconds / 1e9
                              : 0.0;
    // Unit busy fractions over the cores that ran.
    if (r.cycles > 0 && ncores > 0) {
        // A core counter over the board, every core of the stat tree (copies included): an
        // exact integer total, then one conversion.
        auto total = [&](std::uint64_t CoreStats::*counter) {
            std::uint64_t sum = 0;
            for (std::int64_t c = 0; c < nsim; ++c) {
                sum += core_at(c).stats().*counter * copies[static_cast<std::size_t>(c)];
            }
            return static_cast<double>(sum);
        };
        const double mxu = total(&CoreStats::mxu_busy_cycles),
                     vpu = total(&CoreStats::vpu_busy_cycles),
                     dma = total(&CoreStats::dma_busy_cycles),
                     ici = total(&CoreStats::ici_busy_cycles),
                     host = total(&CoreStats::host_busy_cycles),
                     useful = total(&CoreStats::mxu_useful_macs),
                     array = total(&CoreStats::mxu_array_macs);
        const double span = static_cast<double>(r.cycles) * static_cast<double>(ncores);
        r.busy.mxu = mxu / (span * static_cast<double>(cfg_.core.mxus));
        r.busy.vpu = vpu / span;
        r.busy.dma = dma / span;
        r.busy.ici = ici / span;
        r.busy.host = host / span;
        // Over the bandwidth of the cores' shares of their chips, as for an op.
        const Cycle none[kUnitCount] = {0, 0, 0, 0, 0};
        r.busy.hbm =
            unit_shares(none, r.hbm_bytes_read + r.hbm_bytes_written, r.cycles, ncores, cfg_).hbm;
        r.busy.mxu_padding_waste = array > 0 ? 1.0 - useful / array : 0.0;
    }
    r.stats = board_->stats_json();
    if (reuse)
        reuse->ici_json(r.stats, board_->topology().links(),
                        static_cast<Tick>(r.cycles) * kTicksPerCycle);
    return r;
}

}  // namespace tpusim
