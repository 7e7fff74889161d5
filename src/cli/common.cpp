#include "common.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "tpusim/common/progress.h"
#include "tpusim/program/from_trace.h"
#include "tpusim/sim/simulator.h"
#include "tpusim/trace/trace.h"

namespace tpusim::cli {

void add_common_options(CLI::App* cmd, CommonOptions& opts, bool with_json) {
    cmd->add_option("--config,-c", opts.config,
                    "board configuration (JSON), e.g. configs/tpu_v3_8.json")
        ->required();
    cmd->add_option("--set", opts.sets,
                    "override a config value, e.g. --set mxu.rows=256 (repeatable)")
        ->take_all();
    if (with_json) cmd->add_flag("--json", opts.json, "print JSON instead of text");
}

void print_symmetry_info(const RunResult& r, const TpuConfig& cfg) {
    if (r.symmetry.used || r.cores <= cfg.chip.cores_per_chip ||
        r.symmetry.reason == "--no-symmetry")
        return;
    std::cerr << fmt::format("info: SPMD symmetry not used: {}; all {} cores simulated\n",
                             r.symmetry.reason, r.cores);
}

Program lower_with_progress(const Trace& trace, const TpuConfig& cfg, bool progress,
                            std::int64_t lowered_trips) {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    std::thread ticker([&] {
        ProgressLine line(progress);
        std::unique_lock<std::mutex> lock(m);
        while (!cv.wait_for(lock, std::chrono::milliseconds(200), [&] { return done; })) {
            line.update(fmt::format("lowering {} ops to per-core instructions", trace.ops.size()),
                        -1.0);
        }
    });
    auto stop = [&] {
        {
            std::lock_guard<std::mutex> lock(m);
            done = true;
        }
        cv.notify_one();
        ticker.join();
    };
    try {
        Program p = lower_trace(trace, cfg, lowered_trips);
        stop();
        return p;
    } catch (...) {
        stop();
        throw;
    }
}

void print_warnings(const std::vector<std::string>& warnings) {
    constexpr std::size_t kShown = 8;
    for (std::size_t i = 0; i < warnings.size() && i < kShown; ++i) {
        std::cerr << "warning: " << warnings[i] << "\n";
    }
    if (warnings.size() > kShown) {
        std::cerr << fmt::format("warning: ... and {} more like these\n", warnings.size() - kShown);
    }
}

std::map<std::string, std::string> kernel_roots(const nlohmann::json& ops) {
    std::map<std::string, std::string> fused_into, roots;
    for (const auto& op : ops) {
        const std::string v = op.value("bottleneck", "");
        if (v.rfind("fused into ", 0) == 0) fused_into[op["id"].get<std::string>()] = v.substr(11);
    }
    for (const auto& op : ops) {
        std::string id = op["id"].get<std::string>();
        const std::string self = id;
        // Bounded: a cycle of "fused into" (a malformed report) ends after every op once.
        for (std::size_t guard = 0; guard <= fused_into.size(); ++guard) {
            const auto it = fused_into.find(id);
            if (it == fused_into.end()) break;
            id = it->second;
        }
        roots[self] = id;
    }
    return roots;
}

[[noreturn]] void rerun_with(const char* flag, const std::string& note) {
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::string> args;
    for (std::size_t at = 0; at < all.size();) {
        const std::size_t end = all.find('\0', at);
        args.push_back(all.substr(at, end - at));
        if (end == std::string::npos) break;
        at = end + 1;
    }
    args.emplace_back(flag);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::cerr << "note: " << note << "\n";
    execv("/proc/self/exe", argv.data());
    throw std::runtime_error(fmt::format("cannot re-run with {}: execv failed", flag));
}

RunResult run_or_rerun_full(Simulator& sim, const Program& program) {
    try {
        return sim.run(program);
    } catch (const SymmetryBroken& e) {
        rerun_with("--no-symmetry",
                   std::string("SPMD symmetry: ") + e.what() + "; simulating every core");
    }
}

}  // namespace tpusim::cli
