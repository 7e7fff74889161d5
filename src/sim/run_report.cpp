// The run report: JSON body, text summary and per-op CSV, all from a RunResult.
#include <fmt/format.h>
#include <fmt/ranges.h>

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
    kernels_json(r, cfg, j);
    j["stats"] = r.stats;
    j["symmetry"] = symmetry_json(r.symmetry);
    // Only when trips were charged: a run with every trip simulated reports as before.
    if (r.loop_reuse.charged_trips > 0)
        j["loop_reuse"] = {{"simulated_trips", r.loop_reuse.simulated_trips},
                           {"charged_trips", r.loop_reuse.charged_trips}};
    j["energy"] = run_energy_json(run_energy(r, cfg), cfg);  // docs/energy.md
    return j;
}

void kernels_json(const RunResult& r, const TpuConfig& cfg, nlohmann::json& j) {
    const KernelAttribution& a = r.kernels;
    const double mhz = cfg.chip.clock_mhz;
    nlohmann::json ks = nlohmann::json::array();
    for (const KernelRow& k : a.kernels) {
        nlohmann::json o;
        o["name"] = k.name;
        nlohmann::json members = nlohmann::json::array();
        for (std::size_t m : k.members) members.push_back(r.ops[m].id);
        o["members"] = std::move(members);
        o["kind"] = op_kind_name(k.kind);
        o["self_cycles"] = k.self_cycles;
        o["self_us"] = static_cast<double>(k.self_cycles) / mhz;
        o["share"] = a.run_cycles > 0
                         ? static_cast<double>(k.self_cycles) / static_cast<double>(a.run_cycles)
                         : 0.0;
        o["trips"] = k.trips;
        const double trips = static_cast<double>(std::max<std::int64_t>(k.trips, 1));
        o["self_cycles_per_trip"] = static_cast<double>(k.self_cycles) / trips;
        o["self_us_per_trip"] = static_cast<double>(k.self_cycles) / mhz / trips;
        o["flops_per_trip"] = k.flops / trips;
        o["hbm_bytes_per_trip"] = static_cast<double>(k.hbm_bytes) / trips;
        o["span_cycles"] = k.end_cycle - k.start_cycle;
        o["start_cycle"] = k.start_cycle;
        o["end_cycle"] = k.end_cycle;
        nlohmann::json busy;
        for (std::size_t u = 0; u < kUnitCount; ++u)
            busy[unit_name(static_cast<Unit>(u))] = k.busy[u];
        o["unit_busy_cycles"] = std::move(busy);
        o["flops"] = k.flops;
        o["hbm_bytes"] = k.hbm_bytes;
        o["tflops"] = kernel_tflops(k, mhz);
        o["bound"] = k.bound;
        ks.push_back(std::move(o));
    }
    j["kernels"] = std::move(ks);
    j["kernel_attribution"] = {{"method", a.method},
                               {"core", a.core},
                               {"run_cycles", a.run_cycles},
                               {"sum_cycles", a.sum_cycles}};
}

double kernel_tflops(const KernelRow& k, double clock_mhz) {
    if (k.self_cycles == 0) return 0.0;
    const double seconds = static_cast<double>(k.self_cycles) / (clock_mhz * 1e6);
    return k.flops / seconds / 1e12;
}

std::string kernel_path_name(const RunResult& r, const PathSegment& seg) {
    const auto& ks = r.kernels.kernels;
    if (seg.nodes.size() == 1) return ks[seg.nodes[0]].name;
    std::string name = fmt::format("loop of {} kernels (x{}):", seg.nodes.size(),
                                   seg.nodes.empty() ? 1 : ks[seg.nodes[0]].trips);
    for (std::size_t i = 0; i < seg.nodes.size() && i < 3; ++i)
        name += (i ? ", " : " ") + ks[seg.nodes[i]].name;
    if (seg.nodes.size() > 3) name += ", ...";
    return name;
}

nlohmann::json symmetry_json(const RunResult::Symmetry& s) {
    nlohmann::json j = {
        {"used", s.used}, {"simulated_cores", s.simulated_cores}, {"reason", s.reason}};
    if (!s.cores.empty()) {
        j["unit_chips"] = {s.unit_chips_x, s.unit_chips_y};
        j["simulated_core_ids"] = s.cores;
    }
    return j;
}

std::string run_summary_text(const RunResult& r, const TpuConfig& cfg, const std::string& name,
                             std::size_t top) {
    std::ostringstream o;
    o << fmt::format("{} on {}: {} on {}\n", name, cfg.name, count_of(r.cores, "core"),
                     count_of(r.chips, "chip"));
    if (r.symmetry.used) {
        o << fmt::format(
            "  symmetry   SPMD: {} of {} cores simulated, the others run the same "
            "program (--no-symmetry runs all)\n",
            r.symmetry.simulated_cores, r.cores);
        if (!r.symmetry.cores.empty()) {
            o << fmt::format(
                "             the unit: a block of {} x {} chips, cores {}; every other core runs "
                "as its image in it\n",
                r.symmetry.unit_chips_x, r.symmetry.unit_chips_y,
                fmt::join(r.symmetry.cores, ", "));
        }
    }
    if (r.loop_reuse.charged_trips > 0) {
        o << fmt::format(
            "  loops      {} trips simulated, {} charged from the steady trip (--no-reuse "
            "simulates all)\n",
            r.loop_reuse.simulated_trips, r.loop_reuse.charged_trips);
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
    // The kernels that took longest on the critical path; their self times add up to the run.
    const KernelAttribution& a = r.kernels;
    o << fmt::format(
        "  kernels    {} as {}; self time on core {}'s critical path, adding up to the run "
        "(docs/program.md)\n",
        count_of(static_cast<std::int64_t>(r.ops.size()), "op"),
        count_of(static_cast<std::int64_t>(a.kernels.size()), "kernel"), a.core);
    o << fmt::format("  {:<30} {:>12} {:>10} {:>6} {:>8}  {:<9} {}\n", "kernel (most self time)",
                     "self cycles", "self us", "share", "TFLOPS", "bound", "ops / trips");
    const std::size_t shown = std::min<std::size_t>(a.kernels.size(), top);
    for (std::size_t i = 0; i < shown; ++i) {
        const KernelRow& k = a.kernels[i];
        const double us = static_cast<double>(k.self_cycles) / cfg.chip.clock_mhz;
        const double share = a.run_cycles > 0 ? 100.0 * static_cast<double>(k.self_cycles) /
                                                    static_cast<double>(a.run_cycles)
                                              : 0.0;
        const std::string tf =
            k.self_cycles == 0 ? "-" : fmt::format("{:.2f}", kernel_tflops(k, cfg.chip.clock_mhz));
        std::string what;
        if (k.members.size() > 1)
            what = count_of(static_cast<std::int64_t>(k.members.size()), "op");
        if (k.trips > 1)
            what +=
                fmt::format("{}(x{} trips, {:.1f} cycles a trip)", what.empty() ? "" : " ", k.trips,
                            static_cast<double>(k.self_cycles) / static_cast<double>(k.trips));
        std::string name = k.name;
        if (name.size() > 30) name = name.substr(0, 27) + "...";
        std::string line = fmt::format("  {:<30} {:>12} {:>10.1f} {:>5.1f}% {:>8}  {:<9} {}", name,
                                       k.self_cycles, us, share, tf, k.bound, what);
        line.erase(line.find_last_not_of(' ') + 1);
        o << line << "\n";
    }
    if (a.kernels.size() > shown) {
        Cycle rest = 0;
        std::size_t overlapped = 0;
        for (std::size_t i = shown; i < a.kernels.size(); ++i) {
            rest += a.kernels[i].self_cycles;
            overlapped += a.kernels[i].self_cycles == 0 ? 1 : 0;
        }
        o << fmt::format(
            "  ... the other {}: {} cycles, {:.1f}%{}\n",
            count_of(static_cast<std::int64_t>(a.kernels.size() - shown), "kernel"), rest,
            a.run_cycles > 0 ? 100.0 * static_cast<double>(rest) / static_cast<double>(a.run_cycles)
                             : 0.0,
            overlapped == 0
                ? std::string()
                : fmt::format(" ({} overlapped others everywhere: self 0)", overlapped));
    }
    return o.str();
}

namespace {
std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}
}  // namespace

std::string ops_csv(const RunResult& r) {
    std::ostringstream o;
    o << "id,kind,start_cycle,end_cycle,cycles,dma_busy_cycles,mxu_busy_cycles,vpu_busy_cycles,"
         "ici_busy_cycles,host_busy_cycles,flops,hbm_bytes,bottleneck,trips,kernel,self_cycles\n";
    const KernelAttribution& a = r.kernels;
    for (std::size_t i = 0; i < r.ops.size(); ++i) {
        const OpResult& op = r.ops[i];
        const bool attributed = i < a.op_kernel.size();
        o << fmt::format("{},{},{},{},{},{},{},{},{},{},{:.0f},{},{},{},{},{}\n", csv_field(op.id),
                         op_kind_name(op.kind), op.start_cycle, op.end_cycle,
                         op.end_cycle - op.start_cycle, op.busy[0], op.busy[1], op.busy[2],
                         op.busy[3], op.busy[4], op.flops, op.hbm_bytes, op.bottleneck, op.trips,
                         attributed ? csv_field(a.kernels[a.op_kernel[i]].name) : std::string(),
                         attributed ? a.op_self[i] : Cycle{0});
    }
    return o.str();
}

}  // namespace tpusim
