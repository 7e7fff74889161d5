// Kernels of a run and the critical-path split of its time
// (include/tpusim/sim/kernel_attribution.h).
#include "tpusim/sim/kernel_attribution.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <utility>

namespace tpusim {

namespace {

// A step of the walk: one node, or the nodes of one loop.
struct WalkStep {
    std::vector<std::size_t> nodes;
    bool ran = false;
    Cycle start = ~Cycle{0}, end = 0;
    std::uint32_t units = 0;
    std::vector<std::size_t> deps;  // steps whose results it reads
    // Per unit: the last earlier step that used it (none: the step count).
    std::vector<std::size_t> unit_prev;
};

constexpr std::size_t kMaxUnits = 8;  // bits of PathNode::units read

// `total` cycles split by `weights` in whole cycles: floors, then one more cycle each to the
// largest remainders (ties: the earlier), so the shares add up to `total` exactly.
std::vector<Cycle> split_by_weight(Cycle total, const std::vector<double>& weights) {
    std::vector<Cycle> out(weights.size(), 0);
    if (weights.empty()) return out;
    const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
    std::vector<double> w = weights;
    if (!(sum > 0)) std::fill(w.begin(), w.end(), 1.0);
    const double wsum = sum > 0 ? sum : static_cast<double>(w.size());
    std::vector<double> frac(w.size());
    Cycle given = 0;
    for (std::size_t i = 0; i < w.size(); ++i) {
        const double exact = static_cast<double>(total) * (w[i] / wsum);
        Cycle f = static_cast<Cycle>(std::floor(exact));
        f = std::min(f, total - given);  // rounding never gives more than the total
        out[i] = f;
        given += f;
        frac[i] = exact - static_cast<double>(f);
    }
    std::vector<std::size_t> order(w.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return frac[a] > frac[b]; });
    for (std::size_t k = 0; given < total; k = (k + 1) % order.size()) {
        ++out[order[k]];
        ++given;
    }
    return out;
}

}  // namespace

PathSplit critical_path_split(const std::vector<PathNode>& nodes, Cycle run_end) {
    PathSplit out;
    out.self.assign(nodes.size(), 0);
    // Steps in issue order: a loop's step sits where its first node does.
    std::vector<WalkStep> steps;
    std::vector<std::size_t> step_of(nodes.size());
    std::map<std::int64_t, std::size_t> loop_step;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const PathNode& n = nodes[i];
        std::size_t s = steps.size();
        if (n.loop >= 0) {
            const auto [it, fresh] = loop_step.emplace(n.loop, steps.size());
            s = it->second;
            if (fresh) steps.emplace_back();
        } else {
            steps.emplace_back();
        }
        step_of[i] = s;
        WalkStep& st = steps[s];
        st.nodes.push_back(i);
        if (n.ran) {
            st.ran = true;
            st.units |= n.units;
            st.start = std::min(st.start, n.start);
            st.end = std::max(st.end, n.end);
        }
    }
    std::vector<std::size_t> last_on_unit(kMaxUnits, steps.size());
    for (std::size_t s = 0; s < steps.size(); ++s) {
        WalkStep& st = steps[s];
        for (std::size_t i : st.nodes) {
            for (std::size_t d : nodes[i].deps) {
                if (d < nodes.size() && step_of[d] != s && steps[step_of[d]].ran)
                    st.deps.push_back(step_of[d]);
            }
        }
        st.unit_prev = last_on_unit;
        if (!st.ran) continue;
        for (std::size_t u = 0; u < kMaxUnits; ++u)
            if (st.units >> u & 1u) last_on_unit[u] = s;
    }

    // 1. The step that ends last.
    std::size_t cur = steps.size();
    for (std::size_t s = 0; s < steps.size(); ++s) {
        if (steps[s].ran && (cur == steps.size() || steps[s].end >= steps[cur].end)) cur = s;
    }
    Cycle t = run_end;
    std::vector<Cycle> step_self(steps.size(), 0);
    // The step issued before `limit` that ended last by `at` (the first of equals), or
    // steps.size(). The walk's cursor only moves to earlier-issued steps, so the set of
    // candidates (by end, then issue order) only loses its tail: built at the first query,
    // it answers each in log time.
    std::set<std::pair<Cycle, std::size_t>> ended;
    std::size_t in_set = 0;  // steps [0, in_set) that ran are in `ended`
    bool built = false;
    auto ended_before = [&](std::size_t limit, Cycle at) {
        if (!built) {
            for (std::size_t s = 0; s < limit; ++s)
                if (steps[s].ran) ended.emplace(steps[s].end, s);
            in_set = limit;
            built = true;
        }
        for (; in_set > limit; --in_set)
            if (steps[in_set - 1].ran) ended.erase({steps[in_set - 1].end, in_set - 1});
        auto it = ended.upper_bound({at, steps.size()});
        if (it == ended.begin()) return steps.size();
        const Cycle end = std::prev(it)->first;
        return ended.lower_bound({end, 0})->second;
    };
    while (cur < steps.size() && t > 0) {
        // 2. The last-arriving predecessor that ended before t.
        auto latest = [&](auto&& candidates) {
            std::size_t best = steps.size();
            for (std::size_t p : candidates) {
                if (p == cur || !steps[p].ran || steps[p].end >= t) continue;
                if (best == steps.size() || steps[p].end > steps[best].end ||
                    (steps[p].end == steps[best].end && p > best))
                    best = p;
            }
            return best;
        };
        std::vector<std::size_t> preds = steps[cur].deps;
        for (std::size_t u = 0; u < kMaxUnits; ++u) {
            if (!(steps[cur].units >> u & 1u)) continue;
            // The last earlier step on the unit that ended before t.
            std::size_t p = steps[cur].unit_prev[u];
            while (p < steps.size() && steps[p].end >= t) p = steps[p].unit_prev[u];
            if (p < steps.size()) preds.push_back(p);
        }
        std::size_t best = latest(preds);
        // A step that started after every predecessor above had ended waited for something
        // else: its issue, behind the steps issued before it (the sequencer issues in order).
        // The earlier-issued step that ended last before it started is then the one it
        // waited for, if that one ended later than the predecessor.
        if (best == steps.size()) {
            std::vector<std::size_t> earlier(cur);
            std::iota(earlier.begin(), earlier.end(), std::size_t{0});
            best = latest(earlier);
        } else if (steps[best].end < steps[cur].start) {
            const std::size_t p = ended_before(cur, steps[cur].start);
            if (p < steps.size() && steps[p].end > steps[best].end) best = p;
        }
        const Cycle from = best < steps.size() ? steps[best].end : 0;
        step_self[cur] += t - from;
        out.segments.push_back({from, t, steps[cur].nodes});
        // 3. On from there.
        t = from;
        cur = best;
    }
    // A loop's time by weight over its nodes that ran.
    for (std::size_t s = 0; s < steps.size(); ++s) {
        if (step_self[s] == 0) continue;
        std::vector<std::size_t> ran;
        std::vector<double> w;
        for (std::size_t i : steps[s].nodes) {
            if (!nodes[i].ran) continue;
            ran.push_back(i);
            w.push_back(std::max(0.0, nodes[i].weight));
        }
        const std::vector<Cycle> share = split_by_weight(step_self[s], w);
        for (std::size_t k = 0; k < ran.size(); ++k) out.self[ran[k]] += share[k];
    }
    for (PathSegment& seg : out.segments) {
        seg.nodes.erase(std::remove_if(seg.nodes.begin(), seg.nodes.end(),
                                       [&](std::size_t i) { return !nodes[i].ran; }),
                        seg.nodes.end());
    }
    return out;
}

KernelAttribution attribute_kernels(const std::vector<KernelOpInput>& ops, std::int64_t core,
                                    Cycle run_cycles) {
    KernelAttribution a;
    a.core = core;
    a.run_cycles = run_cycles;
    const std::size_t n = ops.size();
    // Each op's root: along fused_into (a chain; the guard stops a cycle).
    std::vector<std::size_t> root(n);
    for (std::size_t i = 0; i < n; ++i) {
        std::size_t r = i;
        for (std::size_t guard = 0; guard < n; ++guard) {
            const std::size_t f = ops[r].fused_into;
            if (f >= n || f == r) break;
            r = f;
        }
        root[i] = r;
    }
    // Kernels in issue order of their roots.
    std::vector<std::size_t> kernel_index(n, n);
    std::vector<KernelRow> rows;
    for (std::size_t i = 0; i < n; ++i) {
        if (root[i] != i) continue;
        kernel_index[i] = rows.size();
        KernelRow k;
        k.name = ops[i].id;
        k.kind = ops[i].kind;
        k.trips = ops[i].trips;
        k.bound = ops[i].bottleneck;
        k.members.push_back(i);
        rows.push_back(std::move(k));
    }
    std::vector<PathNode> graph(rows.size());
    for (PathNode& g : graph) {
        g.ran = false;
        g.units = 0;
    }
    std::vector<bool> any_ran(rows.size(), false);
    std::vector<std::size_t> op_kernel(n);
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t k = kernel_index[root[i]];
        op_kernel[i] = k;
        KernelRow& row = rows[k];
        if (root[i] != i) row.members.push_back(i);
        const KernelOpInput& op = ops[i];
        for (std::size_t u = 0; u < kUnitCountForKernels; ++u) row.busy[u] += op.busy[u];
        row.flops += op.flops;
        row.hbm_bytes += op.hbm_bytes;
        if (op.ran) {
            row.start_cycle =
                any_ran[k] ? std::min(row.start_cycle, op.start_cycle) : op.start_cycle;
            row.end_cycle = std::max(row.end_cycle, op.end_cycle);
            any_ran[k] = true;
        }
        PathNode& g = graph[k];
        if (root[i] == i) g.loop = op.loop;
        if (op.ran_on_core) {
            g.start = g.ran ? std::min(g.start, op.core_start) : op.core_start;
            g.end = std::max(g.end, op.core_end);
            g.ran = true;
            g.units |= op.core_units;
        }
        g.weight += op.core_weight;
    }
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t d : ops[i].deps) {
            if (d < n && op_kernel[d] != op_kernel[i])
                graph[op_kernel[i]].deps.push_back(op_kernel[d]);
        }
    }
    const PathSplit split = critical_path_split(graph, run_cycles);
    for (std::size_t k = 0; k < rows.size(); ++k) {
        rows[k].self_cycles = split.self[k];
        a.sum_cycles += split.self[k];
    }
    // Largest first; ties in issue order.
    std::vector<std::size_t> order(rows.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
        return rows[x].self_cycles > rows[y].self_cycles;
    });
    std::vector<std::size_t> position(rows.size());
    for (std::size_t p = 0; p < order.size(); ++p) position[order[p]] = p;
    a.kernels.reserve(rows.size());
    for (std::size_t k : order) a.kernels.push_back(std::move(rows[k]));
    a.op_kernel.resize(n);
    a.op_self.assign(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
        a.op_kernel[i] = position[op_kernel[i]];
        if (root[i] == i) a.op_self[i] = a.kernels[a.op_kernel[i]].self_cycles;
    }
    a.path = split.segments;
    for (PathSegment& seg : a.path)
        for (std::size_t& k : seg.nodes) k = position[k];
    return a;
}

}  // namespace tpusim
