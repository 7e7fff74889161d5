#include "tpusim/program/remat.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "tpusim/program/from_trace.h"
#include "tpusim/program/hbm_footprint.h"

namespace tpusim {

namespace {

// Vector ops XLA may compute twice: deterministic, one result the size of its input rows,
// cheap. Not: reductions (small results), dropout (random bits), gradients that write column
// sums, tables, optimizers (several results, state updated in place).
bool recomputable(const TraceOp& op) {
    if (op.kind != OpKind::Vector || op.vector.saved_mask) return false;
    switch (op.vector.op) {
        case VectorOp::Dropout:
        case VectorOp::DropoutGrad:
        case VectorOp::ReduceSum:
        case VectorOp::ReduceMax:
        case VectorOp::SoftmaxGrad:
        case VectorOp::LayernormGrad:
        case VectorOp::BatchnormGrad:
        case VectorOp::Gather:
        case VectorOp::ScatterAdd:
        case VectorOp::Sgd:
        case VectorOp::SgdMomentum:
        case VectorOp::Adam:
        case VectorOp::Lamb:
            return false;
        default:
            return vector_outputs(op.vector) == 1;
    }
}

struct Uses {
    std::vector<std::size_t> position;            // issue position of each op
    std::vector<std::vector<std::size_t>> users;  // consumers of each op's result
    std::vector<std::size_t> last_use;            // latest consumer's position
};

Uses uses_of(const Trace& t, const std::vector<std::size_t>& order) {
    const std::size_t n = t.ops.size();
    Uses u{std::vector<std::size_t>(n), std::vector<std::vector<std::size_t>>(n),
           std::vector<std::size_t>(n, 0)};
    for (std::size_t k = 0; k < order.size(); ++k) u.position[order[k]] = k;
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t d : t.ops[i].deps) {
            u.users[d].push_back(i);
            u.last_use[d] = std::max(u.last_use[d], u.position[i]);
        }
    }
    return u;
}

// The best candidate live at position `peak` (the largest result), the trace index of its
// first consumer after the peak, and the result bytes of all the candidates there (the most
// recomputation can free at that position); best = n when there is none.
struct Pick {
    std::size_t best, at;
    std::int64_t freeable = 0;
};
Pick pick(const Trace& t, const Uses& u, const std::vector<bool>& kept, std::size_t peak) {
    const std::size_t n = t.ops.size();
    std::size_t best = n, best_at = n;
    std::int64_t best_bytes = 0, freeable = 0;
    for (std::size_t c = 0; c < n; ++c) {
        const TraceOp& op = t.ops[c];
        // A fused op is recomputed on its own, from its producer's result in HBM (checked
        // with the other operands below).
        if (!recomputable(op) || kept[c] || !op.cores.empty() || op.result_in_vmem ||
            !op.vmem_operands.empty())
            continue;
        if (u.position[c] >= peak || u.last_use[c] <= peak) continue;  // not live across it
        bool early = false, at_peak = false, fused_user = false;
        std::size_t first_late = n, first_late_pos = n;
        for (std::size_t user : u.users[c]) {
            const std::size_t p = u.position[user];
            const TraceOp& uop = t.ops[user];
            if (p < peak) early = true;
            if (p == peak) at_peak = true;
            if (p > peak) {
                fused_user = fused_user || (uop.fused && !uop.deps.empty() && uop.deps[0] == c);
                first_late = std::min(first_late, user);
                first_late_pos = std::min(first_late_pos, p);
            }
        }
        if (!early || at_peak || fused_user) continue;
        bool operands_live = true;  // each operand stays live until the copy has read it
        for (std::size_t d : op.deps)
            operands_live = operands_live && !kept[d] && u.last_use[d] >= first_late_pos;
        if (!operands_live) continue;
        const std::int64_t bytes = op_bytes_out(op);
        freeable += bytes;
        if (bytes > best_bytes) {
            best = c;
            best_at = first_late;
            best_bytes = bytes;
        }
    }
    return {best, best_at, freeable};
}

}  // namespace

std::optional<Trace> rematerialize(const Trace& trace, std::int64_t capacity_per_core,
                                   RematStats* stats) {
    RematStats st;
    const HbmFootprint start = hbm_footprint(trace);
    st.peak_before = st.peak_after = start.peak_bytes;
    const bool uniform = std::all_of(trace.ops.begin(), trace.ops.end(),
                                     [](const TraceOp& op) { return op.cores.empty(); });
    std::optional<Trace> out;
    if (st.peak_before > capacity_per_core && trace.loops.empty() && uniform) {
        out = trace;
        Trace& t = *out;
        // A copy reads the same parameters; they stay counted once (undeclared parameters
        // would count every reading op's again).
        t.parameter_bytes = start.parameter_bytes;
        std::set<std::string> ids;
        for (const TraceOp& op : t.ops) ids.insert(op.id);
        // Each copy frees memory at the peak of its round; the peak can move, so the rounds
        // are bounded (at most one copy per op of the trace).
        while (st.peak_after > capacity_per_core && st.ops < trace.ops.size()) {
            const HbmFootprint fp = hbm_footprint(t);
            st.peak_after = fp.peak_bytes;
            if (fp.peak_bytes <= capacity_per_core) break;
            const auto order = issue_order(t);
            const Uses u = uses_of(t, order);
            const Pick pk = pick(t, u, results_kept_on_chip(t), u.position[fp.peak_op]);
            // Copies go after the peak, so what is live there can only shrink by the
            // candidates' results: if that is not enough, no recomputation fits the program.
            if (pk.best == t.ops.size() || fp.peak_bytes - pk.freeable > capacity_per_core) break;
            const std::size_t c = pk.best, at = pk.at;
            // The copy goes just before the first consumer after the peak; the consumers after
            // the peak read it. Indices from `at` on move up by one.
            TraceOp copy = t.ops[c];
            std::string id = copy.id + ".remat";
            for (int k = 2; ids.count(id); ++k) id = copy.id + ".remat" + std::to_string(k);
            ids.insert(id);
            copy.id = id;
            copy.fused = false;  // reads its operands from HBM
            const std::size_t peak = u.position[fp.peak_op];
            for (std::size_t user : u.users[c]) {
                if (u.position[user] <= peak) continue;
                for (std::size_t& d : t.ops[user].deps)
                    if (d == c) d = t.ops.size();  // the copy, renumbered below
            }
            for (TraceOp& op : t.ops)
                for (std::size_t& d : op.deps) d = d == t.ops.size() ? at : d + (d >= at ? 1 : 0);
            st.recomputed_bytes += op_bytes_out(copy);
            t.ops.insert(t.ops.begin() + static_cast<std::ptrdiff_t>(at), std::move(copy));
            ++st.ops;
        }
        st.peak_after = hbm_footprint(t).peak_bytes;
    }
    // A program that still does not fit is left as it is: XLA fails it as written, and the
    // capacity error then names the program's own ops and footprint.
    if (st.peak_after > capacity_per_core) {
        st.ops = 0;
        st.recomputed_bytes = 0;
        st.peak_after = st.peak_before;
    }
    if (stats) *stats = st;
    if (st.ops == 0) out.reset();
    return out;
}

std::optional<Trace> fit_hbm(const Trace& trace, const TpuConfig& cfg, RematStats& stats) {
    stats = {};
    if (!cfg.lowering.rematerialize) {
        check_hbm_capacity(trace, cfg);
        return std::nullopt;
    }
    const std::int64_t cap = hbm_bytes_per_core(cfg);
    std::optional<Trace> fitted = rematerialize(trace, cap, &stats);
    // rematerialize has walked the footprint (the check's walk) already; only a program still
    // over the share is walked again, for the check's located error.
    if (stats.peak_after > cap) check_hbm_capacity(fitted ? *fitted : trace, cfg);
    return fitted;
}

std::string remat_summary(const RematStats& s, std::int64_t capacity_per_core) {
    auto gib = [](std::int64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0 * 1024.0); };
    return fmt::format(
        "the program's live HBM ({:.2f} GiB per core) exceeds a core's {:.2f} GiB: {} vector "
        "op{} recomputed before {} late consumers, as XLA rematerialises ({:.1f} MB written "
        "again per core; peak now {:.2f} GiB; docs/program.md, HBM capacity)",
        gib(s.peak_before), gib(capacity_per_core), s.ops, s.ops == 1 ? "" : "s",
        s.ops == 1 ? "its" : "their", static_cast<double>(s.recomputed_bytes) / 1e6,
        gib(s.peak_after));
}

}  // namespace tpusim
