// Whole-board runs: trace -> lowering -> Board (SystemC) -> RunResult and timeline.
// Each TEST_CASE elaborates its own board, so ctest runs each in a process of its own.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>
#include <vector>

#include "../test_util.h"
#include "tpusim/program/from_trace.h"
#include "tpusim/program/lowering.h"
#include "tpusim/sim/derived.h"
#include "tpusim/sim/simulator.h"
#include "tpusim/trace/trace.h"

using namespace tpusim;

namespace {

using Interval = std::pair<double, double>;  // [ts, ts + dur) in microseconds

// Sorted, merged busy intervals of every track of `process` whose thread name starts with
// `unit` (e.g. "MXU" covers "MXU 0" and "MXU 1").
std::vector<Interval> busy(const nlohmann::json& timeline, const std::string& process,
                           const std::string& unit) {
    std::map<int, std::string> pname;
    std::map<std::pair<int, int>, std::string> tname;
    for (const auto& e : timeline["traceEvents"]) {
        if (e["ph"] != "M") continue;
        if (e["name"] == "process_name") pname[e["pid"]] = e["args"]["name"];
        if (e["name"] == "thread_name") tname[{e["pid"], e["tid"]}] = e["args"]["name"];
    }
    std::vector<Interval> v;
    for (const auto& e : timeline["traceEvents"]) {
        if (e["ph"] != "X") continue;
        const int pid = e["pid"], tid = e["tid"];
        if (pname[pid] != process || tname[{pid, tid}].rfind(unit, 0) != 0) continue;
        const double ts = e["ts"], dur = e["dur"];
        v.emplace_back(ts, ts + dur);
    }
    std::sort(v.begin(), v.end());
    std::vector<Interval> merged;
    for (const auto& iv : v) {
        if (!merged.empty() && iv.first <= merged.back().second)
            merged.back().second = std::max(merged.back().second, iv.second);
        else
            merged.push_back(iv);
    }
    return merged;
}

double length(const std::vector<Interval>& v) {
    double s = 0;
    for (const auto& iv : v) s += iv.second - iv.first;
    return s;
}

// Total time both interval sets are busy at once.
double overlap(const std::vector<Interval>& a, const std::vector<Interval>& b) {
    double s = 0;
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        const double lo = std::max(a[i].first, b[j].first);
        const double hi = std::min(a[i].second, b[j].second);
        if (hi > lo) s += hi - lo;
        if (a[i].second < b[j].second)
            ++i;
        else
            ++j;
    }
    return s;
}

// A trace from traces/ replayed on the config with a timeline: the run and its timeline.
struct Replay {
    Trace trace;
    RunResult r;
    nlohmann::json timeline;
};

Replay replay(const TpuConfig& cfg, const std::string& trace_name) {
    Replay out;
    out.trace = read_trace(test::source_dir() + "/traces/" + trace_name, cfg.cores());
    const Program program = lower_trace(out.trace, cfg);
    RunOptions ro;
    ro.timeline = true;
    ro.progress = false;
    Simulator sim(cfg, ro);
    out.r = sim.run(program);
    std::ostringstream tl;
    sim.timeline().write(tl);
    out.timeline = nlohmann::json::parse(tl.str());
    return out;
}

}  // namespace

TEST_CASE("a BERT-base layer overlaps DMA, MXU and VPU work on its core", "[board][system]") {
    const TpuConfig cfg = load_config(test::config_path("tpu_v3_8.json"));
    const Replay run = replay(cfg, "bert_base_layer_fwd.json");
    const RunResult& r = run.r;

    // Lower bounds from first principles: no run beats the MXU peak of its cores, nor moves
    // its HBM bytes faster than the chip's peak bandwidth.
    const DerivedFigures d = derive(cfg);
    REQUIRE(r.cores == 1);
    REQUIRE(r.flops > 0);
    CHECK(r.seconds >= r.mxu_flops / d.peak_flops_per_core);
    CHECK(r.seconds >=
          static_cast<double>(r.hbm_bytes_read + r.hbm_bytes_written) / d.hbm_bytes_per_s_per_chip);
    CHECK(r.mxu_utilization > 0.0);
    CHECK(r.mxu_utilization <= 1.0);

    // The sequencer keeps the units busy at the same time: prefetch DMA under matmuls, fused
    // vector epilogues under the next tile's matmul. Each pair overlaps for at least 5% of
    // the run; a serialised model would show (near) zero.
    const nlohmann::json& tl = run.timeline;
    const auto dma = busy(tl, "core 0", "DMA");
    const auto mxu = busy(tl, "core 0", "MXU");
    const auto vpu = busy(tl, "core 0", "VPU");
    REQUIRE(!dma.empty());
    REQUIRE(!mxu.empty());
    REQUIRE(!vpu.empty());
    const double total_us = r.seconds * 1e6;
    INFO("DMA " << length(dma) << " us, MXU " << length(mxu) << " us, VPU " << length(vpu)
                << " us of " << total_us << " us");
    CHECK(overlap(dma, mxu) > 0.05 * total_us);
    CHECK(overlap(dma, vpu) > 0.05 * total_us);
    CHECK(overlap(mxu, vpu) > 0.05 * total_us);
    // No unit is busy longer than the run.
    CHECK(length(mxu) <= total_us * 1.0001);
    CHECK(length(dma) <= total_us * 1.0001);
}

TEST_CASE("a data-parallel step all-reduces its gradients over ICI under the backward pass",
          "[board][ici][system]") {
    const TpuConfig cfg = load_config(test::config_path("tpu_v3_8.json"));
    const Replay run = replay(cfg, "data_parallel_step.json");
    const RunResult& r = run.r;
    REQUIRE(r.cores == cfg.cores());
    REQUIRE(r.chips == cfg.chips());

    // Per-op HBM bytes (per core, times the cores that ran the op) add up to what the chips'
    // HBM controllers served.
    Bytes op_bytes = 0;
    for (const auto& op : r.ops) op_bytes += op.hbm_bytes;
    CHECK(op_bytes == r.hbm_bytes_read + r.hbm_bytes_written);

    // Gradient bytes that every core all-reduces.
    double gradient = 0;
    for (const auto& op : run.trace.ops)
        if (op.kind == OpKind::AllReduce) gradient += static_cast<double>(op.bytes);
    REQUIRE(gradient > 0);
    // Whatever the algorithm, once each chip holds one partial sum, every chip must send at
    // least 2 (p - 1) / p of the gradient over its links (the bandwidth-optimal bound).
    const double p = static_cast<double>(cfg.chips());
    CHECK(static_cast<double>(r.ici_bytes) >= p * 2.0 * (p - 1) / p * gradient * 0.999);
    // ...and the board cannot move them faster than all its links at once.
    const DerivedFigures d = derive(cfg);
    const double links = p * static_cast<double>(cfg.ici.links_per_chip);
    CHECK(r.seconds >= static_cast<double>(r.ici_bytes) / (links * d.ici_link_bytes_per_s));

    // Link tracks carry spans, and the first layers' backward matmuls run while the later
    // layers' gradients are on the wire.
    const nlohmann::json& tl = run.timeline;
    const auto link = busy(tl, "ici chip 0", "link");
    const auto mxu = busy(tl, "core 0", "MXU");
    REQUIRE(!link.empty());
    REQUIRE(!mxu.empty());
    INFO("links busy " << length(link) << " us, overlap with MXU " << overlap(link, mxu) << " us");
    CHECK(overlap(link, mxu) > 0.0);
    // Every core did the same work (SPMD), so each reports the same busy MXU time.
    const auto mxu7 = busy(tl, "core 7", "MXU");
    CHECK(length(mxu7) == Approx(length(mxu)).epsilon(0.01));
}

TEST_CASE("a large GEMM on all 8 cores reaches at least 97% of the derived peak",
          "[board][system]") {
    const TpuConfig cfg = load_config(test::config_path("tpu_v2_8.json"));
    OpSpec gemm;
    gemm.id = "gemm";
    gemm.kind = OpKind::Matmul;
    gemm.m = gemm.k = gemm.n = 4096;
    LoweringOptions lo;
    lo.cores = cfg.cores();
    const Program program = lower_ops({gemm}, cfg, lo, "peak test");
    RunOptions ro;
    ro.progress = false;
    Simulator sim(cfg, ro);
    const RunResult r = sim.run(program);
    const DerivedFigures d = derive(cfg);
    REQUIRE(r.cores == 8);
    CHECK(r.flops == Approx(8.0 * 2.0 * 4096.0 * 4096.0 * 4096.0));
    const double fraction = r.achieved_tflops * 1e12 / d.peak_flops_total;
    INFO("achieved " << r.achieved_tflops << " TFLOPS of " << d.peak_flops_total / 1e12);
    CHECK(fraction >= 0.97);
    CHECK(fraction <= 1.0);
}
