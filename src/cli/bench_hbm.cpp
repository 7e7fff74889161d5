// `tpusim bench hbm`: streaming and random traffic through one chip's HBM model (every chip
// of a board is identical): each case drives its own BurstHbm, the module `tpusim run --set
// sim.hbm_model=burst` binds the DMA engines to, through its TLM socket (HbmTrafficGen); the
// cases run side by side in one simulation. Reports achieved GB/s, fraction of peak, row-hit rate
// and the pseudo-channel bus time lost to refresh, read/write turnaround and bank conflicts,
// and the latency of isolated reads over the phase of the refresh schedule (on the plain
// HbmSystem: one transfer at a time).
#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common.h"
#include "tpusim/arch/memory/hbm_module.h"
#include "tpusim/arch/memory/hbm_traffic_module.h"
#include "tpusim/stats/report.h"

namespace tpusim::cli {

namespace {

struct BenchHbmOptions {
    CommonOptions common;
    double mib_per_core = 16;
    std::int64_t outstanding = 8;
    std::int64_t chunk_kib = 64;
};

struct Case {
    std::string name, description;
    HbmTraffic traffic;
};

nlohmann::json result_json(const HbmConfig& hbm, std::size_t pcs, const HbmTrafficResult& r,
                           double peak_gbps, double scale) {
    const HbmCounters& k = r.counters;
    const double bus = static_cast<double>(r.hbm_cycles) * static_cast<double>(pcs);
    auto frac = [&](std::uint64_t v) { return bus > 0 ? static_cast<double>(v) / bus : 0.0; };
    const double all = static_cast<double>(k.row_hits + k.row_misses + k.row_conflicts);
    (void)hbm;
    return {
        {"gbps", r.gbps},
        {"fraction_of_peak", r.gbps / (peak_gbps * scale)},
        {"bytes_read", r.bytes_read},
        {"bytes_written", r.bytes_written},
        {"cycles", r.cycles},
        {"seconds", r.seconds},
        {"row_hit_rate", all > 0 ? static_cast<double>(k.row_hits) / all : 0.0},
        {"row_hits", k.row_hits},
        {"row_misses", k.row_misses},
        {"row_conflicts", k.row_conflicts},
        {"refreshes", k.refreshes},
        {"bus_time_fraction",
         {{"data", frac(k.data_bus_cycles)},
          {"refresh", frac(k.lost_refresh_cycles)},
          {"turnaround", frac(k.lost_turnaround_cycles)},
          {"bank_conflict", frac(k.lost_bank_cycles)},
          {"other_timing", frac(k.lost_other_cycles)}}},
        {"lost_cycles",
         {{"refresh", k.lost_refresh_cycles},
          {"turnaround", k.lost_turnaround_cycles},
          {"bank_conflict", k.lost_bank_cycles},
          {"other_timing", k.lost_other_cycles}}},
        {"bursts", r.bursts},
        {"wall_seconds", r.wall_seconds},
    };
}

void run(const BenchHbmOptions& o) {
    const TpuConfig cfg = o.common.load();
    const auto cores = static_cast<std::uint32_t>(cfg.chip.cores_per_chip);
    const double peak_gbps = cfg.hbm.peak_bytes_per_second() / 1e9;
    const Bytes bytes = static_cast<Bytes>(o.mib_per_core * static_cast<double>(kMiB));
    const Bytes chunk = static_cast<Bytes>(o.chunk_kib) * kKiB;
    std::vector<int> all_cores;
    for (std::uint32_t c = 0; c < cores; ++c) all_cores.push_back(static_cast<int>(c));
    auto traffic = [&](HbmTraffic::Kind kind, std::vector<int> who, bool remote, Bytes per_core,
                       Bytes ch, int outstanding) {
        HbmTraffic t;
        t.kind = kind;
        t.cores = std::move(who);
        t.remote = remote;
        t.bytes_per_core = per_core;
        t.chunk_bytes = ch;
        t.outstanding_per_core = outstanding;
        return t;
    };
    const int out = static_cast<int>(o.outstanding);
    // scale: the share of the chip's peak the case can reach (one core: its local half).
    struct Run {
        Case c;
        double scale;
    };
    const std::vector<Run> runs = {
        {{"read", "streaming read, every core from its local half",
          traffic(HbmTraffic::Kind::Read, all_cores, false, bytes, chunk, out)},
         1.0},
        {{"write", "streaming write, every core to its local half",
          traffic(HbmTraffic::Kind::Write, all_cores, false, bytes, chunk, out)},
         1.0},
        {{"copy", "copy within each core's half (GB/s counts bytes read + written)",
          traffic(HbmTraffic::Kind::Copy, all_cores, false, bytes / 2, chunk, out)},
         1.0},
        {{"read_one_core", "streaming read by core 0 alone from its local half",
          traffic(HbmTraffic::Kind::Read, {0}, false, bytes, chunk, out)},
         1.0 / cores},
        {{"read_remote", "streaming read by core 0 from the other core's half",
          traffic(HbmTraffic::Kind::Read, {0}, true, bytes / 4, chunk, out)},
         1.0 / cores},
        {{"random_64B", "random 64 B reads, every core in its local half, 64 in flight each",
          traffic(HbmTraffic::Kind::Random, all_cores, false, bytes / 16, 64, 64)},
         1.0},
    };
    nlohmann::json cases = nlohmann::json::object();
    std::uint64_t bursts = 0;
    // CPU time as well as wall time: on a shared machine the wall figure mostly measures
    // the other processes.
    const std::clock_t cpu0 = std::clock();
    const auto wall0 = std::chrono::steady_clock::now();
    std::vector<std::unique_ptr<BurstHbm>> hbms;
    std::vector<std::unique_ptr<HbmTrafficGen>> gens;
    for (const Run& r : runs) {
        hbms.push_back(std::make_unique<BurstHbm>(("hbm_" + r.c.name).c_str(), cfg.hbm,
                                                  cfg.chip.clock_mhz, cores));
        gens.push_back(std::make_unique<HbmTrafficGen>(("traffic_" + r.c.name).c_str(), r.c.traffic,
                                                       hbms.back()->system().address_map()));
        gens.back()->hbm_out.bind(hbms.back()->target_in);
    }
    sc_core::sc_start();
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const Run& r = runs[i];
        const HbmSystem& hbm = hbms[i]->system();
        const HbmTrafficResult res = gens[i]->result(hbm, cfg.chip.clock_mhz);
        bursts += res.bursts;
        nlohmann::json j =
            result_json(cfg.hbm, hbm.pseudo_channel_count(), res, peak_gbps, r.scale);
        j.erase("wall_seconds");  // the cases run side by side: only the total is measured
        j["description"] = r.c.description;
        cases[r.c.name] = j;
    }
    // Isolated reads over the phase of the refresh schedule, and the same with tRFC = 0: what
    // a transfer waits for a refresh in progress (docs/hbm.md).
    struct LatencyCase {
        std::string name;
        Bytes bytes;
        HbmLatencyResult with, without;
    };
    std::vector<LatencyCase> latency = {{"read_4KiB", 4 * kKiB, {}, {}},
                                        {"read_64KiB", 64 * kKiB, {}, {}}};
    HbmConfig no_refresh = cfg.hbm;
    no_refresh.timing.tRFC = 0;
    constexpr int kLatencySamples = 64;
    nlohmann::json latency_json = nlohmann::json::object();
    for (LatencyCase& l : latency) {
        l.with = isolated_latency_over_refresh(cfg.hbm, cfg.chip.clock_mhz, cores, l.bytes, false,
                                               kLatencySamples);
        l.without = isolated_latency_over_refresh(no_refresh, cfg.chip.clock_mhz, cores, l.bytes,
                                                  false, kLatencySamples);
        bursts += l.with.bursts + l.without.bursts;
        latency_json[l.name] = {{"bytes", l.bytes},
                                {"samples", kLatencySamples},
                                {"mean_cycles", l.with.mean_cycles},
                                {"min_cycles", l.with.min_cycles},
                                {"max_cycles", l.with.max_cycles},
                                {"mean_cycles_without_refresh", l.without.mean_cycles}};
    }
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    const double cpu = static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
    const double read_gbps = cases["read"]["gbps"].get<double>();
    const double copy_over_read =
        read_gbps > 0 ? cases["copy"]["gbps"].get<double>() / read_gbps : 0.0;
    nlohmann::json body = {
        {"peak_gbps_per_chip", peak_gbps},
        {"read_gbps_per_chip", cases["read"]["gbps"]},
        {"write_gbps_per_chip", cases["write"]["gbps"]},
        {"copy_gbps_per_chip", cases["copy"]["gbps"]},
        // What a read/write mix costs: the ratio hbm.writes_per_switch was set by (docs/hbm.md).
        {"copy_over_read", copy_over_read},
        {"fraction_of_peak", cases["read"]["fraction_of_peak"]},
        {"read_gbps_per_core", cases["read_one_core"]["gbps"]},
        {"remote_read_gbps_per_core", cases["read_remote"]["gbps"]},
        {"random_gbps_per_chip", cases["random_64B"]["gbps"]},
        {"cases", cases},
        {"latency", latency_json},
        {"wall_seconds", wall},
        {"bursts", bursts},
        {"bursts_per_wall_second", wall > 0 ? static_cast<double>(bursts) / wall : 0.0},
        {"cpu_seconds", cpu},
        {"bursts_per_cpu_second", cpu > 0 ? static_cast<double>(bursts) / cpu : 0.0},
    };
    if (o.common.json) {
        std::cout << make_report("bench hbm", cfg, body).dump(2) << "\n";
        return;
    }
    std::cout << fmt::format("{}: HBM per chip, peak {:.1f} GB/s ({} pseudo-channels)\n", cfg.name,
                             peak_gbps, cfg.hbm.pseudo_channels_total());
    std::cout << fmt::format(
        "  {:<14} {:>9} {:>8} {:>8} | bus time: {:>6} {:>7} {:>7} {:>7} "
        "{:>7}\n",
        "case", "GB/s", "of peak", "row hit", "data", "refresh", "turn", "bank", "other");
    for (const Run& r : runs) {
        const auto& j = cases[r.c.name];
        const auto& f = j["bus_time_fraction"];
        std::cout << fmt::format(
            "  {:<14} {:>9.1f} {:>7.1f}% {:>7.1f}% |           {:>5.1f}% {:>6.1f}% {:>6.1f}% "
            "{:>6.1f}% {:>6.1f}%\n",
            r.c.name, j["gbps"].get<double>(), 100 * j["fraction_of_peak"].get<double>(),
            100 * j["row_hit_rate"].get<double>(), 100 * f["data"].get<double>(),
            100 * f["refresh"].get<double>(), 100 * f["turnaround"].get<double>(),
            100 * f["bank_conflict"].get<double>(), 100 * f["other_timing"].get<double>());
    }
    std::cout << fmt::format(
        "  (of peak: of the chip, or of one core's half for the one-core cases; bus time: share "
        "of all pseudo-channel bus cycles)\n");
    std::cout << fmt::format(
        "  copy / read: {:.3f} (the read/write mix, hbm.writes_per_switch = {})\n", copy_over_read,
        cfg.hbm.writes_per_switch);
    for (const LatencyCase& l : latency) {
        std::cout << fmt::format(
            "  latency of one {} KiB read alone, {} start times over the refresh interval: mean "
            "{:.0f} cycles ({} to {}); {:.0f} with tRFC = 0\n",
            l.bytes / kKiB, kLatencySamples, l.with.mean_cycles, l.with.min_cycles,
            l.with.max_cycles, l.without.mean_cycles);
    }
    std::cout << fmt::format(
        "  simulated {} bursts in {:.2f} s wall ({:.2f} M bursts/s), {:.2f} s CPU ({:.2f} M "
        "bursts/s)\n",
        bursts, wall, static_cast<double>(bursts) / wall / 1e6, cpu,
        static_cast<double>(bursts) / cpu / 1e6);
}

}  // namespace

void add_bench_hbm_command(CLI::App& bench) {
    const auto opts = std::make_shared<BenchHbmOptions>();
    auto* cmd = bench.add_subcommand("hbm", "streaming and random traffic through one chip's HBM");
    add_common_options(cmd, opts->common);
    cmd->add_option("--mib-per-core", opts->mib_per_core, "MiB each core streams per case")
        ->check(CLI::Range(1.0, 65536.0));
    cmd->add_option("--outstanding", opts->outstanding, "transactions in flight per core")
        ->check(CLI::Range(1, 4096));
    cmd->add_option("--chunk-kib", opts->chunk_kib, "transaction size of the streams (KiB)")
        ->check(CLI::Range(1, 65536));
    cmd->callback([opts] { run(*opts); });
}

}  // namespace tpusim::cli
