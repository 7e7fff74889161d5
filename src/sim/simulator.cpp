#include "tpusim/sim/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "board.h"
#include "tpusim/common/sim_time.h"
#include "tpusim/sim/derived.h"

namespace tpusim {

Simulator::Simulator(const TpuConfig& cfg, RunOptions opts)
    : cfg_(cfg), opts_(opts), timeline_(cfg.chip.clock_mhz, opts.timeline) {}

Simulator::~Simulator() = default;

std::string bottleneck_of(double mxu, double hbm, double vpu, double ici, double host) {
    const std::pair<double, const char*> c[] = {
        {mxu, "compute"}, {hbm, "hbm"}, {vpu, "vector"}, {ici, "ici"}, {host, "host"}};
    const auto* best = std::max_element(std::begin(c), std::end(c),
                                        [](auto& a, auto& b) { return a.first < b.first; });
    return best->first < 0.5 ? "latency" : best->second;
}

namespace {

// bottleneck_of over the units' busy shares of the op's duration.
std::string verdict(const OpResult& op, std::int64_t cores, const TpuConfig& cfg) {
    const double d =
        static_cast<double>(op.end_cycle - op.start_cycle) * static_cast<double>(cores);
    if (d <= 0) return "latency";
    const double mxu = static_cast<double>(op.busy[static_cast<int>(Unit::Mxu)]) /
                       (d * static_cast<double>(cfg.core.mxus));
    const double core_hbm_bytes_per_cycle = cfg.hbm.peak_bytes_per_second() /
                                            static_cast<double>(cfg.chip.cores_per_chip) /
                                            (cfg.chip.clock_mhz * 1e6);
    const double hbm = static_cast<double>(op.hbm_bytes) / (d * core_hbm_bytes_per_cycle);
    const double vpu = static_cast<double>(op.busy[static_cast<int>(Unit::Vpu)]) / d;
    const double ici = static_cast<double>(op.busy[static_cast<int>(Unit::Ici)]) / d;
    const double host = static_cast<double>(op.busy[static_cast<int>(Unit::Host)]) / d;
    return bottleneck_of(mxu, hbm, vpu, ici, host);
}

}  // namespace

std::string Simulator::module_tree() {
    board_ = std::make_unique<Board>("board", cfg_, &timeline_);
    return tpusim::module_tree(*board_);
}

RunResult Simulator::run(const Program& program) {
    board_ = std::make_unique<Board>("board", cfg_, &timeline_);
    const auto ncores = static_cast<std::int64_t>(program.cores.size());
    if (ncores > cfg_.cores()) {
        throw std::logic_error("program has more cores than the board");
    }
    for (std::int64_t c = 0; c < ncores; ++c) {
        board_->core(c).load(program.cores[static_cast<std::size_t>(c)], program.ops);
    }
    std::size_t total_instrs = 0;
    for (const auto& cp : program.cores) total_instrs += cp.instrs.size();

    // Run in slices so that a stall is detected and long runs report progress.
    const auto t0 = std::chrono::steady_clock::now();
    auto last_print = t0;
    bool printed = false;
    const Cycle slice = Cycle{1} << 22;
    auto all_done = [&] {
        for (std::int64_t c = 0; c < ncores; ++c) {
            if (!board_->core(c).finished()) return false;
        }
        return true;
    };
    while (!all_done()) {
        sc_core::sc_start(cycles(slice));
        if (!all_done() && !sc_core::sc_pending_activity()) {
            throw std::logic_error(fmt::format(
                "simulation stalled at cycle {} with instructions outstanding", now_cycles()));
        }
        const auto now = std::chrono::steady_clock::now();
        if (opts_.progress && std::chrono::duration<double>(now - t0).count() > 3.0 &&
            std::chrono::duration<double>(now - last_print).count() > 1.0) {
            std::size_t issued = 0;
            for (std::int64_t c = 0; c < ncores; ++c)
                issued += board_->core(c).stats().instructions;
            std::cerr << fmt::format(
                             "\r[tpusim] cycle {}  {:.1f}% of {} instructions issued  {:.0f} s",
                             now_cycles(),
                             100.0 * static_cast<double>(issued) /
                                 static_cast<double>(std::max<std::size_t>(total_instrs, 1)),
                             total_instrs, std::chrono::duration<double>(now - t0).count())
                      << std::flush;
            last_print = now;
            printed = true;
        }
    }
    if (printed) std::cerr << "\n";

    RunResult r;
    r.cores = ncores;
    r.chips = (ncores + cfg_.chip.cores_per_chip - 1) / cfg_.chip.cores_per_chip;
    for (std::int64_t c = 0; c < ncores; ++c) {
        board_->core(c).flush_timeline();
        r.cycles = std::max(r.cycles, board_->core(c).end_cycle());
    }
    r.seconds = static_cast<double>(r.cycles) / (cfg_.chip.clock_mhz * 1e6);
    const DerivedFigures d = derive(cfg_);
    r.peak_tflops = d.peak_flops_per_core * static_cast<double>(ncores) / 1e12;
    r.ops.resize(program.ops.size());
    for (std::size_t i = 0; i < program.ops.size(); ++i) {
        OpResult& op = r.ops[i];
        op.id = program.ops[i].id;
        op.kind = program.ops[i].kind;
        op.start_cycle = ~Cycle{0};
        std::int64_t ran = 0;
        for (std::int64_t c = 0; c < ncores; ++c) {
            const OpTiming& t = board_->core(c).stats().ops[i];
            if (!t.ran()) continue;
            ++ran;
            op.start_cycle = std::min(op.start_cycle, t.start);
            op.end_cycle = std::max(op.end_cycle, t.end);
            for (std::size_t u = 0; u < kUnitCount; ++u) op.busy[u] += t.busy[u];
        }
        if (ran == 0) op.start_cycle = 0;
        op.flops = program.ops[i].flops * static_cast<double>(ran);
        op.hbm_bytes = program.ops[i].hbm_bytes * static_cast<Bytes>(ran);
        // A fused op runs inside its producer's tiles: its span is the producer's.
        op.bottleneck = program.ops[i].fused_into.empty()
                            ? verdict(op, std::max<std::int64_t>(ran, 1), cfg_)
                            : "fused into " + program.ops[i].fused_into;
        r.flops += op.flops;
    }
    r.achieved_tflops = r.seconds > 0 ? r.flops / r.seconds / 1e12 : 0.0;
    r.mxu_utilization = r.peak_tflops > 0 ? r.achieved_tflops / r.peak_tflops : 0.0;
    board_->collect(r);
    r.hbm_gbps_per_chip = r.seconds > 0
                              ? static_cast<double>(r.hbm_bytes_read + r.hbm_bytes_written) /
                                    static_cast<double>(r.chips) / r.seconds / 1e9
                              : 0.0;
    // Unit busy fractions over the cores that ran.
    if (r.cycles > 0 && ncores > 0) {
        double mxu = 0, vpu = 0, dma = 0, ici = 0, host = 0, useful = 0, array = 0;
        for (std::int64_t c = 0; c < ncores; ++c) {
            const CoreStats& s = board_->core(c).stats();
            mxu += static_cast<double>(s.mxu_busy_cycles);
            vpu += static_cast<double>(s.vpu_busy_cycles);
            dma += static_cast<double>(s.dma_busy_cycles);
            ici += static_cast<double>(s.ici_busy_cycles);
            host += static_cast<double>(s.host_busy_cycles);
            useful += static_cast<double>(s.mxu_useful_macs);
            array += static_cast<double>(s.mxu_array_macs);
        }
        const double span = static_cast<double>(r.cycles) * static_cast<double>(ncores);
        r.busy.mxu = mxu / (span * static_cast<double>(cfg_.core.mxus));
        r.busy.vpu = vpu / span;
        r.busy.dma = dma / span;
        r.busy.ici = ici / span;
        r.busy.host = host / span;
        r.busy.hbm = r.hbm_gbps_per_chip * 1e9 / d.hbm_bytes_per_s_per_chip;
        r.busy.mxu_padding_waste = array > 0 ? 1.0 - useful / array : 0.0;
    }
    r.stats = board_->stats_json();
    return r;
}

}  // namespace tpusim
