#include "tpusim/program/hbm_footprint.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "tpusim/common/error.h"
#include "tpusim/program/from_trace.h"
#include "tpusim/program/vector_lowering.h"

namespace tpusim {

namespace {

bool runs_on(const TraceOp& op, std::int64_t core) {
    return op.cores.empty() || std::find(op.cores.begin(), op.cores.end(), core) != op.cores.end();
}

// Bytes an op holds in HBM only while it runs: softmax's exp(x - max) where it runs its own
// kernels, i.e. not fused into its producer and its input in HBM
// (VectorOpLowering::stores_intermediate, VectorLowering::lower).
std::int64_t transient_bytes(const TraceOp& op) {
    if (op.kind != OpKind::Vector || op.fused) return 0;
    if (!vector_op_lowering(op.vector.op).stores_intermediate) return 0;
    if (std::find(op.vmem_operands.begin(), op.vmem_operands.end(), 0) != op.vmem_operands.end())
        return 0;
    return op.vector.rows * op.vector.cols *
           std::max(dtype_bytes(op.dtype), dtype_bytes(op.out_dtype));
}

// Calls `at(trace index, footprint, parameters)` for each op of `core` in issue order.
template <class F>
void walk(const Trace& t, const std::vector<std::size_t>& order, const std::vector<bool>& kept,
          std::int64_t core, F&& at) {
    const std::size_t n = t.ops.size();
    std::vector<std::size_t> position(n, 0), last_use(n, 0);
    std::vector<bool> consumed(n, false);
    for (std::size_t k = 0; k < order.size(); ++k) position[order[k]] = k;
    std::int64_t params = std::max<std::int64_t>(t.parameter_bytes, 0);
    for (std::size_t i = 0; i < n; ++i) {
        const TraceOp& op = t.ops[i];
        if (!runs_on(op, core)) continue;
        if (t.parameter_bytes < 0) {  // undeclared: each operand without a producer
            const auto operands = op_operand_bytes(op);
            for (std::size_t j = 0; j < operands.size(); ++j) {
                if (op_operand_dep(op, j) < 0) params += operands[j];
            }
        }
        for (std::size_t d : op.deps) {
            last_use[d] = std::max(last_use[d], position[i]);
            consumed[d] = true;
        }
    }
    // A carried value is read by the next trip: it lives to the end of its loop's body (the
    // body keeps its place in issue order, so its last position is its last index).
    for (const auto& l : t.loops) {
        for (std::size_t i = l.first; i < l.first + l.count; ++i) {
            if (!runs_on(t.ops[i], core)) continue;
            for (std::size_t d : t.ops[i].carried) {
                last_use[d] = std::max(last_use[d], l.first + l.count - 1);
                consumed[d] = true;
            }
        }
    }
    // Results freed after the op at each position.
    std::vector<std::vector<std::size_t>> frees(n);
    for (std::size_t i = 0; i < n; ++i) {
        if (consumed[i]) frees[last_use[i]].push_back(i);
    }
    std::int64_t live = 0;
    for (std::size_t k = 0; k < order.size(); ++k) {
        const std::size_t i = order[k];
        const TraceOp& op = t.ops[i];
        if (runs_on(op, core) && !kept[i]) live += op_bytes_out(op);
        if (runs_on(op, core)) at(i, params + live + transient_bytes(op), params);
        for (std::size_t f : frees[k]) {
            if (runs_on(t.ops[f], core) && !kept[f]) live -= op_bytes_out(t.ops[f]);
        }
    }
}

// Cores whose op sets differ; one representative when every op runs everywhere.
std::vector<std::int64_t> distinct_cores(const Trace& t) {
    const bool uniform =
        std::all_of(t.ops.begin(), t.ops.end(), [](const TraceOp& op) { return op.cores.empty(); });
    std::vector<std::int64_t> cores;
    for (std::int64_t c = 0; c < (uniform ? std::min<std::int64_t>(t.cores, 1) : t.cores); ++c)
        cores.push_back(c);
    return cores;
}

}  // namespace

HbmFootprint hbm_footprint(const Trace& trace) {
    const auto order = issue_order(trace);
    const auto kept = results_kept_on_chip(trace);
    HbmFootprint best;
    for (std::int64_t c : distinct_cores(trace)) {
        walk(trace, order, kept, c, [&](std::size_t i, std::int64_t bytes, std::int64_t params) {
            if (bytes > best.peak_bytes) best = {bytes, i, params, c};
        });
    }
    return best;
}

std::int64_t hbm_bytes_per_core(const TpuConfig& cfg) {
    return static_cast<std::int64_t>(cfg.hbm.capacity_bytes()) / cfg.chip.cores_per_chip;
}

void check_hbm_capacity(const Trace& trace, const TpuConfig& cfg) {
    const std::int64_t per_core = hbm_bytes_per_core(cfg);
    const auto order = issue_order(trace);
    const auto kept = results_kept_on_chip(trace);
    auto gib = [](std::int64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0 * 1024.0); };
    for (std::int64_t c : distinct_cores(trace)) {
        // The first op over the share is named; the peak, often much higher, is said too (what
        // a program must shed to fit).
        std::size_t first = trace.ops.size(), peak_op = 0;
        std::int64_t first_bytes = 0, first_params = 0, peak = 0;
        walk(trace, order, kept, c, [&](std::size_t i, std::int64_t bytes, std::int64_t params) {
            if (bytes > per_core && first == trace.ops.size()) {
                first = i;
                first_bytes = bytes;
                first_params = params;
            }
            if (bytes > peak) {
                peak = bytes;
                peak_op = i;
            }
        });
        if (first == trace.ops.size()) continue;
        const TraceOp& op = trace.ops[first];
        const std::string at_peak =
            peak_op == first ? std::string()
                             : fmt::format("; the program's peak is {:.2f} GiB, at op \"{}\"",
                                           gib(peak), trace.ops[peak_op].id);
        throw InputError(
            trace.path, fmt::format("op \"{}\"", op.id),
            fmt::format("resource exhausted: core {} needs {:.2f} GiB of HBM live at this op "
                        "({:.2f} GiB of parameters, {:.2f} GiB of results, this op's "
                        "{:.2f} GiB included{}); a core has {:.2f} GiB ({:.2f} GiB per chip "
                        "shared by {} cores)",
                        c, gib(first_bytes), gib(first_params), gib(first_bytes - first_params),
                        gib(kept[first] ? 0 : op_bytes_out(op)), at_peak, gib(per_core),
                        gib(static_cast<std::int64_t>(cfg.hbm.capacity_bytes())),
                        cfg.chip.cores_per_chip));
    }
}

}  // namespace tpusim
