// Cross-op checks of a trace: ids, deps, cycles, topological order, fused ops and send/recv
// pairing. Everything here is linear or n log n in the number of ops and deps, so that a
// trace of 100,000 ops is read in well under a second.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <tuple>
#include <unordered_map>

#include "tpusim/common/error.h"
#include "trace_internal.h"

namespace tpusim::trace_detail {

namespace {

std::string line_note(const TraceOp& op) {
    return op.line > 0 ? fmt::format(", line {}", op.line) : std::string();
}

// Names the ids on one cycle among `remaining` (ops that Kahn's algorithm could not order;
// each has a dep that is also remaining, so walking deps must revisit an op).
[[noreturn]] void report_cycle(const Trace& t, const std::vector<char>& remaining) {
    std::size_t start = 0;
    while (!remaining[start]) ++start;
    std::vector<std::size_t> visit_order(t.ops.size(), SIZE_MAX);
    std::vector<std::size_t> path;
    std::size_t at = start;
    while (visit_order[at] == SIZE_MAX) {
        visit_order[at] = path.size();
        path.push_back(at);
        const auto& deps = t.ops[at].deps;
        at = *std::find_if(deps.begin(), deps.end(), [&](std::size_t d) { return remaining[d]; });
    }
    // The cycle is path[visit_order[at]..]; it runs against the deps, so print it producer
    // first: a -> b means b depends on a.
    std::vector<std::size_t> cycle(path.begin() + static_cast<std::ptrdiff_t>(visit_order[at]),
                                   path.end());
    std::reverse(cycle.begin(), cycle.end());
    const auto first = std::min_element(cycle.begin(), cycle.end());
    std::rotate(cycle.begin(), first, cycle.end());
    std::string ids;
    const std::size_t shown = std::min<std::size_t>(cycle.size(), 12);
    for (std::size_t i = 0; i < shown; ++i) ids += fmt::format("\"{}\" -> ", t.ops[cycle[i]].id);
    if (shown < cycle.size()) ids += fmt::format("... ({} ops) -> ", cycle.size());
    ids += fmt::format("\"{}\"", t.ops[cycle[0]].id);
    throw InputError(t.path, op_where(t.ops[cycle[0]].id), "dependency cycle: " + ids);
}

// Kahn's algorithm, taking the ready op that comes first in the file, so that a trace already
// in order keeps its order exactly.
void order_topologically(Trace& t) {
    const std::size_t n = t.ops.size();
    bool ordered = true;
    for (std::size_t i = 0; i < n && ordered; ++i) {
        for (std::size_t d : t.ops[i].deps) ordered = ordered && d < i;
    }
    if (ordered) return;
    std::vector<std::size_t> pending(n, 0);
    std::vector<std::vector<std::size_t>> users(n);
    for (std::size_t i = 0; i < n; ++i) {
        pending[i] = t.ops[i].deps.size();
        for (std::size_t d : t.ops[i].deps) users[d].push_back(i);
    }
    std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
    for (std::size_t i = 0; i < n; ++i) {
        if (pending[i] == 0) ready.push(i);
    }
    std::vector<std::size_t> order, new_index(n, SIZE_MAX);
    while (!ready.empty()) {
        const std::size_t i = ready.top();
        ready.pop();
        new_index[i] = order.size();
        order.push_back(i);
        for (std::size_t u : users[i]) {
            if (--pending[u] == 0) ready.push(u);
        }
    }
    if (order.size() != n) {
        std::vector<char> remaining(n);
        for (std::size_t i = 0; i < n; ++i) remaining[i] = new_index[i] == SIZE_MAX;
        report_cycle(t, remaining);
    }
    std::vector<TraceOp> sorted;
    sorted.reserve(n);
    for (std::size_t i : order) {
        sorted.push_back(std::move(t.ops[i]));
        // Deps keep the order the trace lists them in: the first is a fused op's primary
        // operand (docs/trace-format.md).
        for (auto& d : sorted.back().deps) d = new_index[d];
    }
    t.ops = std::move(sorted);
}

// Every send from core a to core b with N bytes needs a recv on b from a with N bytes, or the
// simulated program would wait forever.
void check_send_recv_pairs(const Trace& t) {
    using Key = std::tuple<int, int, std::int64_t>;  // source, target, bytes
    std::map<Key, std::vector<std::size_t>> sends, recvs;
    for (std::size_t i = 0; i < t.ops.size(); ++i) {
        const auto& op = t.ops[i];
        if (op.kind == OpKind::Send) sends[{op.cores[0], op.peer, op.bytes}].push_back(i);
        if (op.kind == OpKind::Recv) recvs[{op.peer, op.cores[0], op.bytes}].push_back(i);
    }
    auto check = [&](const auto& mine, const auto& theirs, const char* what) {
        for (const auto& [key, ops] : mine) {
            const auto it = theirs.find(key);
            const std::size_t matched = it == theirs.end() ? 0 : it->second.size();
            if (ops.size() > matched) {
                const auto& op = t.ops[ops[matched]];
                throw InputError(
                    t.path, op_where(op.id),
                    fmt::format("no matching {} of {} bytes from core {} to core {}", what,
                                std::get<2>(key), std::get<0>(key), std::get<1>(key)));
            }
        }
    };
    check(sends, recvs, "recv");
    check(recvs, sends, "send");
}

}  // namespace

void link_ops(Trace& t, const std::vector<std::vector<std::string>>& dep_ids) {
    const std::size_t n = t.ops.size();
    std::unordered_map<std::string_view, std::size_t> index;
    index.reserve(n * 2);
    for (std::size_t i = 0; i < n; ++i) {
        const auto [it, fresh] = index.emplace(t.ops[i].id, i);
        if (!fresh) {
            const auto& first = t.ops[it->second];
            throw InputError(t.path, op_where(t.ops[i].id),
                             fmt::format("duplicate id (first used by ops[{}]{})", it->second,
                                         line_note(first)));
        }
    }
    for (std::size_t i = 0; i < n; ++i) {
        auto& op = t.ops[i];
        for (const auto& dep : dep_ids[i]) {
            const auto it = index.find(dep);
            if (it == index.end()) {
                throw InputError(t.path, op_where(op.id),
                                 fmt::format("dep \"{}\" names no op in the trace", dep));
            }
            if (it->second == i) {
                throw InputError(t.path, op_where(op.id), "dependency cycle: it depends on itself");
            }
            op.deps.push_back(it->second);
        }
        // A repeated dep says nothing more; keep each once, in the order first listed.
        std::vector<std::size_t> seen;
        seen.reserve(op.deps.size());
        for (std::size_t d : op.deps)
            if (std::find(seen.begin(), seen.end(), d) == seen.end()) seen.push_back(d);
        op.deps = std::move(seen);
        if (op.fused && op.deps.empty()) {
            throw InputError(t.path, op_where(op.id),
                             "\"fused\" needs a producer in \"deps\" to fuse with");
        }
    }
    order_topologically(t);
    check_send_recv_pairs(t);
}

}  // namespace tpusim::trace_detail
