// The memory scheduler for the computations the fusion pass fused (docs/hlo.md, "Passes",
// `memory-scheduler`): the order in which a computation's kernels run, chosen as XLA's
// default memory scheduler chooses it (xla/service/hlo_memory_scheduler.cc,
// DefaultMemoryScheduler): three candidate orders, a greedy list schedule, a DFS post-order
// with a fan-out heuristic and the plain post-order, and the one whose peak of live buffers is
// lowest (no fragmentation counted, as XLA's HeapSimulator::MinimumMemoryForComputation).
// A module's text is only one topological order: JAX writes a training step's weight
// gradients after the whole backward pass, so every activation gradient they read stays live
// until then, where XLA's scheduler runs each weight gradient as soon as it frees memory.
//
// The graph is the walker's: a node per instruction emitted at its own place (one not fused,
// a fusion's root standing for its members), its operands those of its members from outside.
// A buffer is what a node defines (its result in HBM); views (bitcast, reshape, copies that
// keep the layout), tuples and get-tuple-element alias their operands, parameters, constants
// and values made in registers (broadcast, iota) are not counted, as XLA ignores parameters
// and constants.
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>

#include "hlo_import.h"

namespace tpusim::hlo_detail {

namespace {

struct KernelGraph {
    std::vector<std::int32_t> instr;                 // node -> its first instruction
    std::vector<std::vector<std::int32_t>> roots;    // node -> instructions emitted, text order
    std::vector<std::int32_t> topo;                  // nodes in a topological order
    bool cyclic = false;                             // merged siblings made a cycle
    std::vector<std::int32_t> node;                  // instruction -> node, -1 for members
    std::vector<std::vector<std::int32_t>> preds;    // distinct producer nodes, operand order
    std::vector<std::vector<std::int32_t>> succs;    // distinct user nodes
    std::vector<std::vector<std::int32_t>> uses;     // distinct buffers read
    std::vector<std::vector<std::int32_t>> defs;     // buffers defined
    std::vector<std::int64_t> bytes;                 // buffer -> bytes in HBM
    std::vector<std::vector<std::int32_t>> readers;  // buffer -> nodes that read it
    std::vector<bool> live_out;                      // buffer -> returned by the computation
    std::vector<bool> scalar, ignored;               // node
    std::int32_t root = -1;                          // node of the computation's root
};

// Appends x to v unless it is there: stamps instead of a search, so that an instruction with
// thousands of operands (a concatenate, a tuple) costs its operands, not their square.
struct Unique {
    std::vector<std::uint32_t> mark;
    std::uint32_t stamp = 0;
    void start() { ++stamp; }
    void add(std::vector<std::int32_t>& v, std::int32_t x) {
        const auto i = static_cast<std::size_t>(x);
        if (i >= mark.size()) mark.resize(std::max(i + 1, 2 * mark.size()), 0);
        if (mark[i] == stamp) return;
        mark[i] = stamp;
        v.push_back(x);
    }
};

// `groups`: the sibling multi-output group of each fusion root (-1: none); a group's fusions
// are one node, as they are one kernel. Empty: no groups.
KernelGraph build(const HloComputation& c, const std::vector<std::vector<std::int32_t>>& cluster,
                  const std::vector<std::int32_t>& groups) {
    const std::size_t n = c.instrs.size();
    KernelGraph g;
    g.node.assign(n, -1);
    std::vector<std::vector<std::int32_t>> members(n);
    std::unordered_map<std::int32_t, std::int32_t> group_node;
    for (std::size_t i = 0; i < n; ++i) {
        const auto& cl = cluster[i];
        if (cl.empty() || cl[0] == static_cast<std::int32_t>(i)) {
            const auto ii = static_cast<std::int32_t>(i);
            const std::int32_t gid = groups.empty() ? -1 : groups[i];
            const auto it = gid >= 0 ? group_node.find(gid) : group_node.end();
            if (it != group_node.end()) {
                g.node[i] = it->second;
                g.roots[static_cast<std::size_t>(it->second)].push_back(ii);
            } else {
                g.node[i] = static_cast<std::int32_t>(g.instr.size());
                g.instr.push_back(ii);
                g.roots.push_back({ii});
                if (gid >= 0) group_node[gid] = g.node[i];
            }
        }
        for (std::int32_t r : cl)
            members[static_cast<std::size_t>(r)].push_back(static_cast<std::int32_t>(i));
    }
    const std::size_t nodes = g.instr.size();
    // What each instruction's value points to: buffers defined by nodes.
    std::vector<std::vector<std::int32_t>> pts(n);
    Unique uniq;
    auto operand_pts = [&](const HloOperand& o) -> const std::vector<std::int32_t>& {
        const HloInstr& p = c.instrs[static_cast<std::size_t>(o.instr)];
        if (o.tuple_index >= 0 && p.op == HloOpcode::Tuple &&
            static_cast<std::size_t>(o.tuple_index) < p.operands.size())
            return pts[static_cast<std::size_t>(
                p.operands[static_cast<std::size_t>(o.tuple_index)].instr)];
        return pts[static_cast<std::size_t>(o.instr)];
    };
    g.scalar.assign(nodes, false);
    g.ignored.assign(nodes, false);
    g.defs.assign(nodes, {});
    for (std::size_t i = 0; i < n; ++i) {
        const HloInstr& in = c.instrs[i];
        const std::int32_t k = g.node[i];
        if (k < 0) continue;  // a member: its value stays inside its fusions
        const auto kk = static_cast<std::size_t>(k);
        g.scalar[kk] = g.roots[kk].size() == 1 && !in.shape.tuple && in.shape.elements_count() <= 1;
        const OpClass cls = op_class(in.op);
        auto& p = pts[i];
        if (in.op == HloOpcode::Parameter || in.op == HloOpcode::Constant ||
            cls == OpClass::Generated) {
            g.ignored[kk] = true;
        } else if (in.op == HloOpcode::GetTupleElement && !in.operands.empty()) {
            const HloOperand& o = in.operands[0];
            const HloInstr& t = c.instrs[static_cast<std::size_t>(o.instr)];
            const HloAttr* a = in.attr("index");
            const std::size_t idx =
                a ? std::strtoull(std::string(a->value).c_str(), nullptr, 10) : 0;
            p = t.op == HloOpcode::Tuple && idx < t.operands.size() ? operand_pts(t.operands[idx])
                                                                    : operand_pts(o);
        } else if ((is_view(c, in, true) || cls == OpClass::PassThrough) && !in.operands.empty()) {
            p = operand_pts(in.operands[0]);
        } else if (cls == OpClass::Free) {  // tuple, after-all, opt-barrier, ...
            uniq.start();
            for (const auto& o : in.operands)
                for (std::int32_t b : operand_pts(o)) uniq.add(p, b);
        } else {
            const auto b = static_cast<std::int32_t>(g.bytes.size());
            g.bytes.push_back(hbm_bytes(in.shape));
            g.defs[kk].push_back(b);
            p.push_back(b);
        }
    }
    // Producers of a member read from another node's fusion: its own producers (a member's
    // value never leaves its fusions, so this only guards odd graphs).
    std::vector<std::uint32_t> seen(n, 0);
    std::uint32_t stamp = 0;
    Unique pred_set, use_set;
    g.preds.assign(nodes, {});
    g.uses.assign(nodes, {});
    for (std::size_t k = 0; k < nodes; ++k) {
        ++stamp;
        pred_set.start();
        use_set.start();
        std::vector<std::int32_t> mine;
        for (std::int32_t r : g.roots[k]) {
            const auto& mem = members[static_cast<std::size_t>(r)];
            if (mem.empty()) mine.push_back(r);
            mine.insert(mine.end(), mem.begin(), mem.end());
        }
        for (std::int32_t m : mine) seen[static_cast<std::size_t>(m)] = stamp;
        std::vector<const HloOperand*> stack;
        for (std::int32_t m : mine)
            for (const auto& o : c.instrs[static_cast<std::size_t>(m)].operands)
                stack.push_back(&o);
        std::reverse(stack.begin(), stack.end());
        while (!stack.empty()) {
            const HloOperand& o = *stack.back();
            stack.pop_back();
            const auto p = static_cast<std::size_t>(o.instr);
            if (g.node[p] >= 0) {
                if (g.node[p] != static_cast<std::int32_t>(k)) {  // else one of its own fusions
                    pred_set.add(g.preds[k], g.node[p]);
                    for (std::int32_t b : operand_pts(o)) use_set.add(g.uses[k], b);
                }
                continue;
            }
            if (seen[p] == stamp) continue;
            seen[p] = stamp;
            const auto& ops = c.instrs[p].operands;
            for (auto it = ops.rbegin(); it != ops.rend(); ++it) stack.push_back(&*it);
        }
    }
    g.succs.assign(nodes, {});
    for (std::size_t k = 0; k < nodes; ++k)
        for (std::int32_t p : g.preds[k])
            g.succs[static_cast<std::size_t>(p)].push_back(static_cast<std::int32_t>(k));
    g.readers.assign(g.bytes.size(), {});
    for (std::size_t k = 0; k < nodes; ++k)
        for (std::int32_t b : g.uses[k])
            g.readers[static_cast<std::size_t>(b)].push_back(static_cast<std::int32_t>(k));
    // A topological order (Kahn's, lowest node first); nodes left out mean a cycle.
    std::vector<std::size_t> waiting(nodes);
    std::set<std::int32_t> ready;
    for (std::size_t k = 0; k < nodes; ++k)
        if ((waiting[k] = g.preds[k].size()) == 0) ready.insert(static_cast<std::int32_t>(k));
    while (!ready.empty()) {
        const std::int32_t k = *ready.begin();
        ready.erase(ready.begin());
        g.topo.push_back(k);
        for (std::int32_t u : g.succs[static_cast<std::size_t>(k)])
            if (--waiting[static_cast<std::size_t>(u)] == 0) ready.insert(u);
    }
    g.cyclic = g.topo.size() != nodes;
    g.live_out.assign(g.bytes.size(), false);
    if (c.root >= 0) {
        g.root = g.node[static_cast<std::size_t>(c.root)];
        for (std::int32_t b : pts[static_cast<std::size_t>(c.root)])
            g.live_out[static_cast<std::size_t>(b)] = true;
    }
    return g;
}

// The peak of live buffers over an order: a buffer lives from the node that defines it to its
// last reader (to the end when the computation returns it).
std::int64_t peak_bytes(const KernelGraph& g, const std::vector<std::int32_t>& order) {
    std::vector<std::int64_t> left(g.bytes.size());
    for (std::size_t b = 0; b < left.size(); ++b)
        left[b] = static_cast<std::int64_t>(g.readers[b].size());
    std::int64_t live = 0, peak = 0;
    for (std::int32_t k : order) {
        const auto kk = static_cast<std::size_t>(k);
        for (std::int32_t b : g.defs[kk]) live += g.bytes[static_cast<std::size_t>(b)];
        peak = std::max(peak, live);
        for (std::int32_t b : g.uses[kk]) {
            const auto bb = static_cast<std::size_t>(b);
            if (--left[bb] == 0 && !g.live_out[bb]) live -= g.bytes[bb];
        }
        for (std::int32_t b : g.defs[kk]) {
            const auto bb = static_cast<std::size_t>(b);
            if (left[bb] == 0 && !g.live_out[bb]) live -= g.bytes[bb];
        }
    }
    return peak;
}

// XLA's ListScheduler: of the nodes whose producers have run, the one that frees the most
// bytes net of what it defines (ties: more users, then the one that became ready last);
// scalars first.
std::vector<std::int32_t> list_schedule(const KernelGraph& g) {
    const std::size_t nodes = g.instr.size();
    std::vector<std::int64_t> unscheduled(g.bytes.size());
    for (std::size_t b = 0; b < unscheduled.size(); ++b)
        unscheduled[b] = static_cast<std::int64_t>(g.readers[b].size()) + (g.live_out[b] ? 1 : 0);
    using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int32_t>;
    std::set<Key> ready;
    std::vector<Key> key_of(nodes);
    std::vector<bool> in_ready(nodes, false);
    std::int64_t seq = 0;
    auto priority = [&](std::int32_t k) -> std::pair<std::int64_t, std::int64_t> {
        const auto kk = static_cast<std::size_t>(k);
        constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
        if (g.scalar[kk]) return {kMax, kMax};
        std::int64_t freed = 0, defined = 0;
        for (std::int32_t b : g.uses[kk])
            if (unscheduled[static_cast<std::size_t>(b)] == 1)
                freed += g.bytes[static_cast<std::size_t>(b)];
        for (std::int32_t b : g.defs[kk]) defined += g.bytes[static_cast<std::size_t>(b)];
        return {freed - defined, static_cast<std::int64_t>(g.succs[kk].size())};
    };
    auto add = [&](std::int32_t k) {
        const auto [p, u] = priority(k);
        key_of[static_cast<std::size_t>(k)] = Key{p, u, seq++, k};
        ready.insert(key_of[static_cast<std::size_t>(k)]);
        in_ready[static_cast<std::size_t>(k)] = true;
    };
    std::vector<std::size_t> waiting(nodes);
    for (std::size_t k = 0; k < nodes; ++k) {
        waiting[k] = g.preds[k].size();
        if (waiting[k] == 0) add(static_cast<std::int32_t>(k));
    }
    std::vector<std::int32_t> order;
    order.reserve(nodes);
    while (!ready.empty()) {
        const Key best = *ready.rbegin();
        ready.erase(std::prev(ready.end()));
        const std::int32_t k = std::get<3>(best);
        in_ready[static_cast<std::size_t>(k)] = false;
        order.push_back(k);
        std::vector<std::int32_t> now_last;  // buffers one read away from free
        for (std::int32_t b : g.uses[static_cast<std::size_t>(k)])
            if (--unscheduled[static_cast<std::size_t>(b)] == 1) now_last.push_back(b);
        for (std::int32_t s : g.succs[static_cast<std::size_t>(k)])
            if (--waiting[static_cast<std::size_t>(s)] == 0) add(s);
        for (std::int32_t b : now_last) {
            for (std::int32_t r : g.readers[static_cast<std::size_t>(b)]) {
                const auto rr = static_cast<std::size_t>(r);
                if (!in_ready[rr]) continue;
                const auto [p, u] = priority(r);
                if (p == std::get<0>(key_of[rr]) && u == std::get<1>(key_of[rr])) continue;
                ready.erase(key_of[rr]);
                key_of[rr] = Key{p, u, seq++, r};
                ready.insert(key_of[rr]);
            }
        }
    }
    return order;
}

// A post-order from the sinks (nodes nobody reads, in text order, the root last), visiting
// each node's producers in the order `before` puts them.
template <typename Less>
std::vector<std::int32_t> post_order(const KernelGraph& g, bool root_last, Less before) {
    const std::size_t nodes = g.instr.size();
    std::vector<std::int32_t> sinks;
    for (std::size_t k = 0; k < nodes; ++k)
        if (g.succs[k].empty() && (!root_last || static_cast<std::int32_t>(k) != g.root))
            sinks.push_back(static_cast<std::int32_t>(k));
    if (root_last && g.root >= 0 && g.succs[static_cast<std::size_t>(g.root)].empty())
        sinks.push_back(g.root);
    std::vector<std::int32_t> order;
    order.reserve(nodes);
    std::vector<std::uint8_t> state(nodes, 0);  // 0 new, 1 open, 2 done
    std::vector<std::pair<std::int32_t, std::size_t>> stack;
    std::vector<std::vector<std::int32_t>> sorted(nodes);
    for (std::int32_t s : sinks) {
        if (state[static_cast<std::size_t>(s)]) continue;
        stack.push_back({s, 0});
        state[static_cast<std::size_t>(s)] = 1;
        sorted[static_cast<std::size_t>(s)] = g.preds[static_cast<std::size_t>(s)];
        std::stable_sort(sorted[static_cast<std::size_t>(s)].begin(),
                         sorted[static_cast<std::size_t>(s)].end(), before);
        while (!stack.empty()) {
            auto& [k, next] = stack.back();
            const auto& ps = sorted[static_cast<std::size_t>(k)];
            if (next < ps.size()) {
                const std::int32_t p = ps[next++];
                if (state[static_cast<std::size_t>(p)]) continue;
                state[static_cast<std::size_t>(p)] = 1;
                sorted[static_cast<std::size_t>(p)] = g.preds[static_cast<std::size_t>(p)];
                std::stable_sort(sorted[static_cast<std::size_t>(p)].begin(),
                                 sorted[static_cast<std::size_t>(p)].end(), before);
                stack.push_back({p, 0});
                continue;
            }
            state[static_cast<std::size_t>(k)] = 2;
            order.push_back(k);
            sorted[static_cast<std::size_t>(k)].clear();
            stack.pop_back();
        }
    }
    return order;
}

// XLA's DFSMemoryScheduler: a post-order from the root that visits first the producers with
// the most fan-out behind them, then the most bytes behind them, then by name.
std::vector<std::int32_t> dfs_schedule(const KernelGraph& g, const HloComputation& c) {
    const std::size_t nodes = g.instr.size();
    std::vector<std::int64_t> extra(nodes, 0), total(nodes, 0);
    std::int64_t cumulative = 0;
    const auto count = static_cast<std::int64_t>(nodes);
    for (const std::int32_t kn : g.topo) {
        const auto k = static_cast<std::size_t>(kn);
        if (g.ignored[k]) continue;
        extra[k] = g.succs[k].empty() ? 0 : static_cast<std::int64_t>(g.succs[k].size()) - 1;
        std::int64_t own = 0;
        for (std::int32_t b : g.defs[k]) own += g.bytes[static_cast<std::size_t>(b)];
        total[k] = own;
        cumulative += own;
        for (std::int32_t p : g.preds[k]) {
            extra[k] += extra[static_cast<std::size_t>(p)];
            total[k] += total[static_cast<std::size_t>(p)];
        }
        total[k] = std::min(total[k], cumulative);
        extra[k] = std::min(extra[k], count);
    }
    return post_order(g, true, [&](std::int32_t a, std::int32_t b) {
        const auto aa = static_cast<std::size_t>(a), bb = static_cast<std::size_t>(b);
        if (extra[aa] != extra[bb]) return extra[aa] > extra[bb];
        if (total[aa] != total[bb]) return total[aa] > total[bb];
        return c.instrs[static_cast<std::size_t>(g.instr[aa])].name <
               c.instrs[static_cast<std::size_t>(g.instr[bb])].name;
    });
}

}  // namespace

MemorySchedule memory_schedule(const HloComputation& c,
                               const std::vector<std::vector<std::int32_t>>& cluster,
                               const std::vector<std::int32_t>& sibling_groups) {
    MemorySchedule best;
    const KernelGraph plain = build(c, cluster, {});
    std::vector<std::int32_t> text(plain.instr.size());
    for (std::size_t k = 0; k < text.size(); ++k) text[k] = static_cast<std::int32_t>(k);
    best.text_peak_bytes = peak_bytes(plain, text);
    KernelGraph merged;
    if (!sibling_groups.empty()) merged = build(c, cluster, sibling_groups);
    best.siblings_merged = !sibling_groups.empty() && !merged.cyclic;
    const KernelGraph& g = best.siblings_merged ? merged : plain;
    std::vector<std::int32_t> chosen;
    best.peak_bytes = std::numeric_limits<std::int64_t>::max();
    if (!g.cyclic) {
        const std::pair<const char*, std::vector<std::int32_t>> candidates[] = {
            {"list", list_schedule(g)},
            {"dfs", dfs_schedule(g, c)},
            {"post-order", post_order(g, false, [](std::int32_t, std::int32_t) { return false; })},
        };
        for (const auto& [name, order] : candidates) {
            if (order.size() != g.instr.size()) continue;
            const std::int64_t peak = peak_bytes(g, order);
            if (peak < best.peak_bytes) {
                best.peak_bytes = peak;
                best.algorithm = name;
                chosen = order;
            }
        }
    }
    if (chosen.empty()) {  // not a DAG: keep the text order
        best.peak_bytes = best.text_peak_bytes;
        best.algorithm = "text";
        best.siblings_merged = false;
        for (std::size_t i = 0; i < c.instrs.size(); ++i)
            best.order.push_back(static_cast<std::int32_t>(i));
        return best;
    }
    // Every instruction once: a fusion's members (which the walker skips) just before the
    // first of their fusions, a sibling group's fusions one after another in text order.
    std::vector<bool> placed(c.instrs.size(), false);
    std::vector<std::vector<std::int32_t>> members(c.instrs.size());
    for (std::size_t i = 0; i < c.instrs.size(); ++i)
        if (g.node[i] < 0)
            for (std::int32_t r : cluster[i])
                members[static_cast<std::size_t>(r)].push_back(static_cast<std::int32_t>(i));
    best.order.reserve(c.instrs.size());
    for (const std::int32_t k : chosen) {
        for (const std::int32_t i : g.roots[static_cast<std::size_t>(k)]) {
            for (const std::int32_t m : members[static_cast<std::size_t>(i)]) {
                if (placed[static_cast<std::size_t>(m)]) continue;
                placed[static_cast<std::size_t>(m)] = true;
                best.order.push_back(m);
            }
            best.order.push_back(i);
        }
    }
    return best;
}

}  // namespace tpusim::hlo_detail
