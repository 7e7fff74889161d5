// `tpusim bench ici`: a collective (all-reduce by default) over message sizes on the
// configured board or slice, run through the ICI model, beside its link-limited bound and
// latency floor (docs/ici.md).
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "common.h"
#include "tpusim/arch/ici/ici_bench.h"
#include "tpusim/config/topology.h"
#include "tpusim/stats/report.h"

namespace tpusim::cli {

namespace {

struct BenchIciOptions {
    CommonOptions common;
    std::vector<std::string> sizes;
    std::string algorithm;
    std::string collective = "all_reduce";
    std::string dtype = "f32";
};

const char* algorithm_name(const TpuConfig& cfg) {
    return kAllReduceAlgorithmNames[static_cast<std::size_t>(cfg.ici.all_reduce_algorithm)];
}

std::vector<Bytes> default_sizes() {
    std::vector<Bytes> sizes;
    for (Bytes b = kKiB; b <= 256 * kMiB; b *= 4) sizes.push_back(b);
    return sizes;
}

void run_bench_ici(const BenchIciOptions& o) {
    std::vector<std::string> sets = o.common.sets;
    if (!o.algorithm.empty()) sets.push_back("ici.all_reduce_algorithm=" + o.algorithm);
    const TpuConfig cfg = load_config(o.common.config, sets);
    std::vector<Bytes> sizes;
    for (const auto& s : o.sizes) sizes.push_back(parse_byte_size(s));
    if (sizes.empty()) sizes = default_sizes();
    CollectiveSpec spec;
    spec.kind = parse_collective_kind(o.collective);
    spec.element_bytes = dtype_bytes(o.dtype);
    if (spec.kind == CollectiveKind::SendRecv || spec.kind == CollectiveKind::CollectivePermute) {
        // Every core sends to the next core in id order (a shift).
        for (int c = 0; c < cfg.cores(); ++c) {
            spec.pairs.emplace_back(c, static_cast<int>((c + 1) % cfg.cores()));
            if (spec.kind == CollectiveKind::SendRecv) break;
        }
    }
    // Through the IciNetwork module `tpusim run` builds, one size after another.
    std::vector<CollectiveSpec> specs;
    for (Bytes b : sizes) {
        spec.bytes = b;
        specs.push_back(spec);
    }
    const std::vector<IciPoint> results = run_ici_points(cfg, specs);
    nlohmann::json points = nlohmann::json::array();
    for (const IciPoint& p : results) {
        points.push_back({{"bytes", p.bytes},
                          {"cycles", p.cycles},
                          {"seconds", p.seconds},
                          {"algbw_gbps", p.algbw_gbps},
                          {"busbw_gbps", p.busbw_gbps},
                          {"link_bound_seconds", p.link_bound_seconds},
                          {"bound_busbw_gbps", p.bound_busbw_gbps},
                          {"latency_floor_seconds", p.latency_floor_seconds},
                          {"reduction_bound_seconds", p.reduction_bound_seconds},
                          {"max_link_bytes", p.max_link_bytes},
                          {"max_link_busy_fraction", p.max_link_busy_fraction},
                          {"wall_seconds", p.wall_seconds}});
    }
    const int n = results.empty() ? 0 : results.front().participants;
    if (o.common.json) {
        nlohmann::json body = {{"collective", o.collective},
                               {"algorithm", algorithm_name(cfg)},
                               {"participants", n},
                               {"busbw_factor", busbw_factor(spec.kind, n)},
                               {"points", points}};
        std::cout << make_report("bench ici", cfg, body).dump(2) << "\n";
        return;
    }
    std::cout << fmt::format(
        "{} on {} ({} x {} chips, {}, {} cores), algorithm {}, {} GB/s per link and direction\n",
        o.collective, cfg.name, cfg.board.chips_x, cfg.board.chips_y,
        grid_kind(cfg.board.wraps(0), cfg.board.wraps(1)), n, algorithm_name(cfg),
        cfg.ici.link_bandwidth_gbps);
    std::cout << fmt::format(
        "busbw = algbw x {:.4f} (NCCL convention); bound = link-limited "
        "time of the busiest link; floor = latency of the dependent steps\n",
        busbw_factor(spec.kind, n));
    std::cout
        << "          (reduce_us = the busiest core's reductions at the analytical VPU/HBM rate)\n";
    std::cout << fmt::format("{:>11} {:>11} {:>8} {:>8} {:>11} {:>11} {:>10} {:>10} {:>7}\n",
                             "bytes", "time_us", "algbw", "busbw", "bound_busbw", "bound_us",
                             "reduce_us", "floor_us", "wall_s");
    for (const auto& p : results) {
        std::cout << fmt::format(
            "{:>11} {:>11.2f} {:>8.2f} {:>8.2f} {:>11.2f} {:>11.2f} {:>10.2f} {:>10.3f} {:>7.3f}\n",
            p.bytes, p.seconds * 1e6, p.algbw_gbps, p.busbw_gbps, p.bound_busbw_gbps,
            p.link_bound_seconds * 1e6, p.reduction_bound_seconds * 1e6,
            p.latency_floor_seconds * 1e6, p.wall_seconds);
    }
}

}  // namespace

void add_bench_ici_command(CLI::App& bench) {
    const auto opts = std::make_shared<BenchIciOptions>();
    auto* cmd = bench.add_subcommand("ici",
                                     "all-reduce (or another collective) over message "
                                     "sizes on the configured board or slice");
    add_common_options(cmd, opts->common);
    cmd->add_option("--sizes", opts->sizes,
                    "message sizes (default 1KiB, 4KiB, ... 256MiB), e.g. --sizes 1KiB 64MiB")
        ->take_all();
    cmd->add_option("--algorithm", opts->algorithm, "all-reduce algorithm: ring or torus2d")
        ->check(CLI::IsMember({"ring", "torus2d"}));
    cmd->add_option("--collective", opts->collective,
                    "all_reduce, reduce_scatter, all_gather, all_to_all, collective_permute, "
                    "send_recv");
    cmd->add_option("--dtype", opts->dtype, "element type (f32, bf16, ...)");
    cmd->callback([opts] { run_bench_ici(*opts); });
}

}  // namespace tpusim::cli
