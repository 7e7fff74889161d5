// Trace ops -> per-core instruction streams. See tpusim/program/lowering.h for the strategy.
#include "tpusim/program/lowering.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "core_lowering.h"
#include "tpusim/common/error.h"
#include "tpusim/program/fusion.h"
#include "tpusim/program/vector_lowering.h"

namespace tpusim {

const char* unit_name(Unit u) {
    switch (u) {
        case Unit::Dma:
            return "DMA";
        case Unit::Mxu:
            return "MXU";
        case Unit::Vpu:
            return "VPU";
        case Unit::Ici:
            return "ICI";
        case Unit::Host:
            return "host";
    }
    return "?";
}

Program lower_ops(const std::vector<OpSpec>& ops, const TpuConfig& cfg, const LoweringOptions& opts,
                  const std::string& trace_name) {
    Program prog;
    prog.name = trace_name;
    for (const auto& op : ops) {
        OpInfo info;
        info.id = op.id;
        info.kind = op.kind;
        if (op.kind == "matmul") {
            info.flops = 2.0 * static_cast<double>(op.batch) * static_cast<double>(op.m) *
                         static_cast<double>(op.k) * static_cast<double>(op.n);
        } else if (op.kind == "vector") {
            info.flops = op.vector_flops;
        }
        info.cores = op.cores;
        if (info.cores.empty()) {
            for (std::int64_t c = 0; c < opts.cores; ++c) info.cores.push_back(c);
        }
        prog.ops.push_back(std::move(info));
    }
    // Vector ops the VPU cannot run are input errors, located at the op (not mid-simulation).
    for (const auto& op : ops) {
        if (op.kind != "vector") continue;
        try {
            vector_loop_iterations(
                VectorOpDesc{op.vop, std::max<std::int64_t>(op.rows, 1),
                             std::max<std::int64_t>(op.cols, 1), op.in_bytes, op.out_bytes},
                cfg.vpu);
        } catch (const InputError& e) {
            throw InputError(trace_name, fmt::format("op \"{}\"", op.id), e.what_only());
        }
    }
    // A `fused` flag the layer cannot honour is said, never dropped silently.
    const auto first_fused = first_fused_consumers(ops);
    for (std::size_t i = 0; i < ops.size(); ++i) {
        if (!ops[i].fused) continue;
        const std::string why = fusion_blocker(ops, i, first_fused, cfg);
        if (why.empty()) continue;
        prog.warnings.push_back(
            fmt::format("{}: op \"{}\": \"fused\" has no effect: {}; its operand goes through HBM",
                        trace_name, ops[i].id, why));
    }
    for (std::int64_t c = 0; c < opts.cores; ++c) {
        CoreLowering lowering(cfg, opts, c, ops, trace_name);
        prog.cores.push_back(lowering.run(prog.ops));
    }
    return prog;
}

}  // namespace tpusim
