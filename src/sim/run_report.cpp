// The run report: JSON body, text summary and per-op CSV, all from a RunResult.
#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "tpusim/common/wording.h"
#include "tpusim/program/program.h"
#include "tpusim/sim/derived.h"
#include "tpusim/sim/run_energy.h"
#include "tpusim/sim/simulator.h"

namespace tpusim {

std::string run_bottleneck(const RunResult& r) {
    return bottleneck_of(r.busy.mxu, r.busy.hbm, r.busy.vpu, r.busy.ici, r.busy.host);
}

nlohmann::json run_report_body(const RunResult& r, const TpuConfig& cfg) {
    nlohmann::json j;
    j["cycles"] = r.cycles;
    j["seconds"] = r.seconds;
    j["clock_mhz"] = cfg.chip.clock_mhz;
    j["cores"] = r.cores;
    j["chips"] = r.chips;
    j["flops"] = r.flops;
    j["mxu_flops"] = r.mxu_flops;
    j["achieved_bf16_tflops"] = r.achieved_tflops;
    j["peak_bf16_tflops"] = r.peak_tflops;
    j["mxu_utilization"] = r.mxu_utilization;
    j["hbm"] = {{"bytes_read", r.hbm_bytes_read},
                {"bytes_written", r.hbm_bytes_written},
                {"achieved_gbps_per_chip", r.hbm_gbps_per_chip},
                {"peak_gbps_per_chip", cfg.hbm.peak_bytes_per_second() / 1e9}};
    j["ici"] = {{"bytes", r.ici_bytes}};
    j["utilization"] = {{"mxu_busy", r.busy.mxu},
                        {"vpu_busy", r.busy.vpu},
                        {"dma_busy", r.busy.dma},
                        {"ici_busy", r.busy.ici},
                        {"host_busy", r.busy.host},
                        {"hbm_bandwidth", r.busy.hbm},
                        {"mxu_padding_waste", r.busy.mxu_padding_waste}};
    j["bottleneck"] = run_bottleneck(r);
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& op : r.ops) {
        nlohmann::json o;
        o["id"] = op.id;
        o["kind"] = op_kind_name(op.kind);
        o["start_cycle"] = op.start_cycle;
        o["end_cycle"] = op.end_cycle;
        o["cycles"] = op.end_cycle - op.start_cycle;
        o["trips"] = op.trips;
        nlohmann::json busy;
        for (std::size_t u = 0; u < kUnitCount; ++u)
            busy[unit_name(static_cast<Unit>(u))] = op.busy[u];
        o["unit_busy_cycles"] = busy;
        o["flops"] = op.flops;
        o["hbm_bytes"] = op.hbm_bytes;
        o["bottleneck"] = op.bottleneck;
        ops.push_back(std::move(o));
    }
    j["ops"] = std::move(ops);
    j["stats"] = r.stats;
    j["symmetry"] = symmetry_json(r.symmetry);
    j["energy"] = run_energy_json(run_energy(r, cfg), cfg);  // docs/energy.md
    return j;
}

nlohmann::json symmetry_json(const RunResult::Symmetry& s) {
    return {{"used", s.used}, {"simulated_cores", s.simulated_cores}, {"reason", s.reason}};
}

std::string run_summary_text(const RunResult& r, const TpuConfig& cfg, const std::string& name) {
    std::ostringstream o;
    o << fmt::format("{} on {}: {} on {}\n", name, cfg.name, count_of(r.cores, "core"),
                     count_of(r.chips, "chip"));
    if (r.symmetry.used) {
        o << fmt::format(
            "  symmetry   SPMD: {} of {} cores simulated, the others run the same "
            "program (--no-symmetry runs all)\n",
            r.symmetry.simulated_cores, r.cores);
    }
    o << fmt::format("  time       {} cycles = {:.6f} ms at {} MHz\n", r.cycles, r.seconds * 1e3,
                     cfg.chip.clock_mhz);
    o << fmt::format(
        "  compute    {:.2f} TFLOPS achieved of {:.2f} peak (MXU utilization {:.1f}%)\n",
        r.achieved_tflops, r.peak_tflops, 100.0 * r.mxu_utilization);
    // One denominator for HBM, here and in the busy line: the bandwidth the program's cores
    // can use, their shares of their chips' (a v3 core alone has half its chip's 900 GB/s).
    const double peak_chip = cfg.hbm.peak_bytes_per_second() / 1e9;
    const double share =
        r.chips > 0 ? std::min(1.0, static_cast<double>(r.cores) /
                                        static_cast<double>(r.chips * cfg.chip.cores_per_chip))
                    : 1.0;
    o << fmt::format("  HBM        {:.1f} MB read, {:.1f} MB written: {:.1f} GB/s per chip, ",
                     static_cast<double>(r.hbm_bytes_read) / 1e6,
                     static_cast<double>(r.hbm_bytes_written) / 1e6, r.hbm_gbps_per_chip);
    if (share < 1.0) {
        o << fmt::format("{:.1f}% of the {:.1f} its {} can use (peak {:.1f})\n", 100 * r.busy.hbm,
                         peak_chip * share, r.cores == 1 ? "core" : "cores", peak_chip);
    } else {
        o << fmt::format("{:.1f}% of the {:.1f} peak\n", 100 * r.busy.hbm, peak_chip);
    }
    if (r.ici_bytes > 0) {
        o << fmt::format("  ICI        {:.1f} MB over the links\n",
                         static_cast<double>(r.ici_bytes) / 1e6);
    }
    o << fmt::format(
        "  busy       MXU {:.1f}% (padding {:.1f}% of its MACs), VPU {:.1f}%, "
        "DMA {:.1f}%,\n             HBM {:.1f}%, ICI {:.1f}%, host {:.1f}%\n",
        100 * r.busy.mxu, 100 * r.busy.mxu_padding_waste, 100 * r.busy.vpu, 100 * r.busy.dma,
        100 * r.busy.hbm, 100 * r.busy.ici, 100 * r.busy.host);
    o << run_energy_line(run_energy(r, cfg), cfg);  // docs/energy.md
    // The verdict with the figure it follows from.
    {
        const std::pair<double, const char*> u[] = {{r.busy.mxu, "MXU busy"},
                                                    {r.busy.hbm, "HBM bandwidth"},
                                                    {r.busy.vpu, "VPU busy"},
                                                    {r.busy.ici, "ICI busy"},
                                                    {r.busy.host, "host link busy"}};
        const auto* top = std::max_element(std::begin(u), std::end(u),
                                           [](auto& a, auto& b) { return a.first < b.first; });
        const std::string v = run_bottleneck(r);
        o << fmt::format("  bound by   {} ({}{} {:.1f}%)\n", v,
                         v == "latency" ? "no unit busy half the time; the most, " : "",
                         top->second, 100 * top->first);
    }
    // The ops that took longest.
    std::vector<const OpResult*> sorted;
    for (const auto& op : r.ops) sorted.push_back(&op);
    std::stable_sort(sorted.begin(), sorted.end(), [](const OpResult* a, const OpResult* b) {
        return a->end_cycle - a->start_cycle > b->end_cycle - b->start_cycle;
    });
    o << fmt::format("  {:<28} {:>12} {:>10} {:>9}  {}\n", "op (longest first)", "cycles", "us",
                     "TFLOPS", "bound by");
    const std::size_t shown = std::min<std::size_t>(sorted.size(), 12);
    for (std::size_t i = 0; i < shown; ++i) {
        const OpResult& op = *sorted[i];
        const Cycle c = op.end_cycle - op.start_cycle;
        const double us = static_cast<double>(c) / cfg.chip.clock_mhz;
        const double tf = c == 0 ? 0.0 : op.flops / (us * 1e-6) / 1e12;
        const std::string id = op.trips > 1 ? fmt::format("{} (x{})", op.id.substr(0, 20), op.trips)
                                            : op.id.substr(0, 28);
        o << fmt::format("  {:<28} {:>12} {:>10.1f} {:>9.2f}  {}\n", id, c, us, tf, op.bottleneck);
    }
    if (sorted.size() > shown) o << fmt::format("  ... {} more ops\n", sorted.size() - shown);
    return o.str();
}

std::string ops_csv(const RunResult& r) {
    std::ostringstream o;
    o << "id,kind,start_cycle,end_cycle,cycles,dma_busy_cycles,mxu_busy_cycles,vpu_busy_cycles,"
         "ici_busy_cycles,host_busy_cycles,flops,hbm_bytes,bottleneck,trips\n";
    for (const auto& op : r.ops) {
        std::string id = op.id;
        if (id.find_first_of(",\"\n") != std::string::npos) {
            std::string q = "\"";
            for (char c : id) q += c == '"' ? std::string("\"\"") : std::string(1, c);
            id = q + "\"";
        }
        o << fmt::format("{},{},{},{},{},{},{},{},{},{},{:.0f},{},{},{}\n", id,
                         op_kind_name(op.kind), op.start_cycle, op.end_cycle,
                         op.end_cycle - op.start_cycle, op.busy[0], op.busy[1], op.busy[2],
                         op.busy[3], op.busy[4], op.flops, op.hbm_bytes, op.bottleneck, op.trips);
    }
    return o.str();
}

}  // namespace tpusim
