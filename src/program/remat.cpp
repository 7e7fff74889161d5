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

// The most ops one recomputation copies (XLA's HloRematerialization recomputes blocks of
// instructions up to a size limit, `block_size_limit`).
constexpr std::size_t kMaxRematBlock = 16;

// A recomputation: the ops a copy of a value computes (ascending, the value last), and the
// bytes of the operands it keeps alive longer than the program did.
struct Block {
    std::vector<std::size_t> ops;
    std::int64_t extended = 0;
};

// What a copy of `c` placed at position `late` (its first consumer after the peak) must
// compute, as XLA's HloRematerialization recomputes a block of instructions: `c`, and for each
// op of the block, every producer whose result is not in HBM (a fused kernel's earlier
// members, whose tiles stay on chip, or a value kept in VMEM). A producer whose result is in
// HBM but freed before `late` is recomputed too when it can be (block size permitting), else
// its result is kept alive until the copy reads it (Block::extended). Empty when an op the
// block needs cannot be recomputed.
class BlockBuilder {
 public:
    BlockBuilder(const Trace& t, const Uses& u, const std::vector<bool>& kept, std::size_t late)
        : t_(t), u_(u), kept_(kept), late_(late) {}

    Block build(std::size_t c) {
        b_ = {};
        ext_.clear();
        if (!add(c)) return {};
        std::sort(b_.ops.begin(), b_.ops.end());
        return b_;
    }

 private:
    bool in_block(std::size_t i) const {
        return std::find(b_.ops.begin(), b_.ops.end(), i) != b_.ops.end();
    }

    bool add(std::size_t m) {
        const TraceOp& op = t_.ops[m];
        if (!recomputable(op) || !op.cores.empty() || !op.carried.empty() ||
            b_.ops.size() == kMaxRematBlock)
            return false;
        b_.ops.push_back(m);
        for (std::size_t d : op.deps) {
            if (in_block(d) || std::find(ext_.begin(), ext_.end(), d) != ext_.end()) continue;
            if (!kept_[d]) {
                if (u_.last_use[d] >= late_) continue;  // live there anyway
                const Block saved = b_;
                const std::size_t saved_ext = ext_.size();
                if (add(d)) continue;
                b_ = saved;
                ext_.resize(saved_ext);
                ext_.push_back(d);
                b_.extended += op_bytes_out(t_.ops[d]);
                continue;
            }
            if (!add(d)) return false;  // on chip only: it must be computed again
        }
        return true;
    }

    const Trace& t_;
    const Uses& u_;
    const std::vector<bool>& kept_;
    std::size_t late_;
    Block b_;
    std::vector<std::size_t> ext_;
};

// The best candidate live at position `peak` (the largest result), the trace index of its
// first consumer after the peak, the ops its copy recomputes (BlockBuilder), and the
// result bytes of all the candidates there (the most recomputation can free at that position);
// best = n when there is none.
struct Pick {
    std::size_t best, at;
    std::vector<std::size_t> kernel;
    std::int64_t freeable = 0;
};
Pick pick(const Trace& t, const Uses& u, const std::vector<bool>& kept, std::size_t peak) {
    const std::size_t n = t.ops.size();
    Pick best{n, n, {}, 0};
    std::int64_t best_bytes = 0;
    for (std::size_t c = 0; c < n; ++c) {
        const TraceOp& op = t.ops[c];
        if (!recomputable(op) || kept[c] || !op.cores.empty()) continue;
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
        // The block's ops all run again; what it frees is the value less the operands it
        // keeps alive.
        Block block = BlockBuilder(t, u, kept, first_late_pos).build(c);
        if (block.ops.empty()) continue;
        const std::int64_t bytes = op_bytes_out(op) - block.extended;
        if (bytes <= 0) continue;
        best.freeable += bytes;
        if (bytes > best_bytes) {
            best.best = c;
            best.at = first_late;
            best.kernel = std::move(block.ops);
            best_bytes = bytes;
        }
    }
    return best;
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
        while (st.peak_after > capacity_per_core && st.kernels < trace.ops.size()) {
            const HbmFootprint fp = hbm_footprint(t);
            st.peak_after = fp.peak_bytes;
            if (fp.peak_bytes <= capacity_per_core) break;
            const auto order = issue_order(t);
            const Uses u = uses_of(t, order);
            const Pick pk = pick(t, u, results_kept_on_chip(t), u.position[fp.peak_op]);
            // Copies go after the peak, so what is live there can only shrink by the
            // candidates' results: if that is not enough, no recomputation fits the program.
            if (pk.best == t.ops.size() || fp.peak_bytes - pk.freeable > capacity_per_core) break;
            const std::size_t c = pk.best, at = pk.at, k = pk.kernel.size();
            const std::size_t peak = u.position[fp.peak_op];
            // The copies of the kernel's members, in their order, go just before the first
            // consumer after the peak (indices from `at` on move up by k); the consumers after
            // the peak read the copy of c (the last of them).
            auto copy_index = [&](std::size_t m) -> std::ptrdiff_t {
                const auto it = std::find(pk.kernel.begin(), pk.kernel.end(), m);
                return it == pk.kernel.end()
                           ? -1
                           : at + static_cast<std::size_t>(it - pk.kernel.begin());
            };
            std::vector<TraceOp> copies;
            for (std::size_t m : pk.kernel) {
                TraceOp copy = t.ops[m];
                std::string id = copy.id + ".remat";
                for (int j = 2; ids.count(id); ++j) id = copy.id + ".remat" + std::to_string(j);
                ids.insert(id);
                copy.id = id;
                // The head of the kernel reads its operands from HBM; a member keeps its
                // producer's tiles (fused) and its on-chip operands where the producer is
                // recomputed with it; every other operand is read from HBM.
                copy.fused = copy.fused && !copy.deps.empty() && copy_index(copy.deps[0]) >= 0;
                std::vector<int> vmem;
                for (int j : copy.vmem_operands) {
                    const std::ptrdiff_t d = op_operand_dep(copy, static_cast<std::size_t>(j));
                    if (d >= 0 && copy_index(static_cast<std::size_t>(d)) >= 0) vmem.push_back(j);
                }
                copy.vmem_operands = std::move(vmem);
                for (std::size_t& d : copy.deps) {
                    const std::ptrdiff_t ci = copy_index(d);
                    d = ci >= 0 ? static_cast<std::size_t>(ci) : d;
                }
                st.recomputed_bytes += m == c ? op_bytes_out(copy) : 0;
                copies.push_back(std::move(copy));
            }
            for (std::size_t user : u.users[c]) {
                if (u.position[user] <= peak) continue;
                for (std::size_t& d : t.ops[user].deps)
                    if (d == c) d = t.ops.size();  // the copy of c, renumbered below
            }
            for (TraceOp& op : t.ops) {
                for (std::size_t& d : op.deps)
                    d = d == t.ops.size() ? at + k - 1 : d + (d >= at ? k : 0);
                for (std::size_t& d : op.carried) d += d >= at ? k : 0;
            }
            t.ops.insert(t.ops.begin() + static_cast<std::ptrdiff_t>(at),
                         std::make_move_iterator(copies.begin()),
                         std::make_move_iterator(copies.end()));
            st.ops += k;
            ++st.kernels;
        }
        st.peak_after = hbm_footprint(t).peak_bytes;
    }
    // A program that still does not fit is left as it is: XLA fails it as written, and the
    // capacity error then names the program's own ops and footprint.
    if (st.peak_after > capacity_per_core) {
        st.ops = 0;
        st.kernels = 0;
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
        "op{}{} recomputed before {} late consumers, as XLA rematerialises ({:.1f} MB written "
        "again per core; peak now {:.2f} GiB; docs/program.md, HBM capacity)",
        gib(s.peak_before), gib(capacity_per_core), s.ops, s.ops == 1 ? "" : "s",
        s.kernels < s.ops ? fmt::format(" in {} kernels", s.kernels) : "",
        s.ops == 1 ? "its" : "their", static_cast<double>(s.recomputed_bytes) / 1e6,
        gib(s.peak_after));
}

}  // namespace tpusim
