// Loops of trace format version 2: reading and checking the `loops` table and the `carried`
// deps of body ops, how often each op runs, and the loop-free copy of a trace.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

#include "tpusim/common/error.h"
#include "tpusim/common/json_io.h"
#include "trace_internal.h"

namespace tpusim {

namespace trace_detail {

namespace {

std::string loop_where(std::size_t k) { return fmt::format("/loops/{}", k); }

}  // namespace

void link_loops(Trace& t, const nlohmann::json* loops,
                const std::vector<std::vector<std::string>>& carried_ids,
                const std::vector<std::string>& carried_owner) {
    std::unordered_map<std::string_view, std::size_t> index;
    index.reserve(t.ops.size() * 2);
    for (std::size_t i = 0; i < t.ops.size(); ++i) index.emplace(t.ops[i].id, i);
    std::vector<std::int64_t> loop_of(t.ops.size(), -1);
    if (loops) {
        if (!loops->is_array())
            throw InputError(t.path, "/loops",
                             "expected an array of loops, got " + json_type_name(*loops));
        std::unordered_set<std::string> loop_ids;
        for (std::size_t k = 0; k < loops->size(); ++k) {
            const nlohmann::json& l = (*loops)[k];
            const std::string where = loop_where(k);
            auto fail = [&](const std::string& what) { throw InputError(t.path, where, what); };
            if (!l.is_object()) fail("expected a loop object, got " + json_type_name(l));
            for (auto it = l.begin(); it != l.end(); ++it) {
                if (it.key() != "id" && it.key() != "trips" && it.key() != "body" &&
                    it.key() != "comment")
                    fail(fmt::format("unknown key \"{}\" (expected id, trips, body, comment)",
                                     it.key()));
            }
            const auto id = l.find("id");
            if (id == l.end() || !id->is_string() || id->get<std::string>().empty())
                fail("\"id\" must be a non-empty string");
            TraceLoop loop;
            loop.id = id->get<std::string>();
            if (index.count(loop.id) || !loop_ids.insert(loop.id).second)
                fail(fmt::format("loop id \"{}\" is already the id of an op or a loop", loop.id));
            const auto trips = l.find("trips");
            if (trips == l.end()) fail("missing \"trips\" (a positive integer)");
            if (!trips->is_number_integer() || *trips < 1 ||
                (trips->is_number_unsigned() &&
                 trips->get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxSize)) ||
                trips->get<std::int64_t>() > kMaxSize)
                fail("\"trips\" must be an integer from 1 to 2^40, got " + trips->dump());
            loop.trips = trips->get<std::int64_t>();
            const auto body = l.find("body");
            if (body == l.end() || !body->is_array() || body->empty())
                fail("\"body\" must be a non-empty array of op ids");
            std::size_t lo = SIZE_MAX, hi = 0;
            for (const auto& b : *body) {
                if (!b.is_string()) fail("\"body\" must list op ids (strings)");
                const auto it = index.find(b.get<std::string>());
                if (it == index.end())
                    fail(fmt::format("body op \"{}\" names no op in the trace",
                                     b.get<std::string>()));
                if (loop_of[it->second] >= 0)
                    fail(fmt::format("op \"{}\" is already in the body of a loop",
                                     t.ops[it->second].id));
                loop_of[it->second] = static_cast<std::int64_t>(k);
                lo = std::min(lo, it->second);
                hi = std::max(hi, it->second);
            }
            // In dependency order the body must be one run of ops: an op outside it that
            // depends on a body op and is a dep of another would have to run inside the loop.
            for (std::size_t i = lo; i <= hi; ++i) {
                if (loop_of[i] != static_cast<std::int64_t>(k))
                    fail(
                        fmt::format("op \"{}\" is not in the body but must run between body ops "
                                    "\"{}\" and \"{}\" (the deps cross the loop's boundary)",
                                    t.ops[i].id, t.ops[lo].id, t.ops[hi].id));
            }
            loop.first = lo;
            loop.count = hi - lo + 1;
            t.loops.push_back(std::move(loop));
        }
        std::sort(t.loops.begin(), t.loops.end(),
                  [](const TraceLoop& a, const TraceLoop& b) { return a.first < b.first; });
    }
    // Carried deps: ops of the same body. Fused ops take their primary operand from an op
    // of the same trip, never across the body's boundary.
    std::unordered_map<std::string_view, std::size_t> owner_index;
    for (std::size_t k = 0; k < carried_owner.size(); ++k) {
        const std::size_t i = index.at(carried_owner[k]);
        auto fail = [&](const std::string& what) {
            throw InputError(t.path, op_where(t.ops[i].id), what);
        };
        if (loop_of[i] < 0) fail("\"carried\" is only for ops in the body of a loop");
        for (const auto& c : carried_ids[k]) {
            const auto it = index.find(c);
            if (it == index.end() || loop_of[it->second] != loop_of[i])
                fail(fmt::format("carried dep \"{}\" is not an op of the same loop body", c));
            if (std::find(t.ops[i].carried.begin(), t.ops[i].carried.end(), it->second) ==
                t.ops[i].carried.end())
                t.ops[i].carried.push_back(it->second);
        }
    }
    for (std::size_t i = 0; i < t.ops.size(); ++i) {
        const TraceOp& op = t.ops[i];
        if (op.fused && !op.deps.empty() && loop_of[op.deps[0]] != loop_of[i])
            throw InputError(t.path, op_where(op.id),
                             fmt::format("\"fused\" onto \"{}\" across the boundary of a loop "
                                         "(a fused op and its producer run in the same trip)",
                                         t.ops[op.deps[0]].id));
    }
}

}  // namespace trace_detail

std::vector<std::int64_t> op_trips(const Trace& t) {
    std::vector<std::int64_t> trips(t.ops.size(), 1);
    for (const auto& l : t.loops)
        for (std::size_t i = l.first; i < l.first + l.count; ++i) trips[i] = l.trips;
    return trips;
}

Trace unroll_loops(const Trace& t) {
    Trace out = t;
    out.loops.clear();
    out.version = kTraceVersion;
    if (t.loops.empty()) return out;
    std::size_t total = t.ops.size();
    for (const auto& l : t.loops) {
        const auto extra =
            static_cast<unsigned __int128>(l.count) * static_cast<unsigned __int128>(l.trips - 1);
        if (total + extra > kMaxUnrolledOps)
            throw InputError(
                t.path, fmt::format("loop \"{}\"", l.id),
                fmt::format("unrolled, the trace would have more than {} ops", kMaxUnrolledOps));
        total += static_cast<std::size_t>(extra);
    }
    out.ops.clear();
    out.ops.reserve(total);
    std::unordered_set<std::string> ids;
    for (const auto& op : t.ops) ids.insert(op.id);
    std::vector<std::size_t> latest(t.ops.size());  // index in `out` of op i's last copy
    std::size_t next_loop = 0;
    for (std::size_t i = 0; i < t.ops.size();) {
        if (next_loop < t.loops.size() && t.loops[next_loop].first == i) {
            const TraceLoop& l = t.loops[next_loop++];
            std::vector<std::size_t> prev(l.count);
            for (std::int64_t trip = 0; trip < l.trips; ++trip) {
                for (std::size_t b = 0; b < l.count; ++b) {
                    TraceOp op = t.ops[l.first + b];
                    if (trip > 0) {
                        std::string id = fmt::format("{}@{}", op.id, trip);
                        while (!ids.insert(id).second) id += "'";
                        op.id = std::move(id);
                    }
                    for (auto& d : op.deps) d = latest[d];  // same trip, or before the loop
                    if (trip > 0)
                        for (std::size_t c : op.carried) {
                            const std::size_t p = prev[c - l.first];
                            if (std::find(op.deps.begin(), op.deps.end(), p) == op.deps.end())
                                op.deps.push_back(p);
                        }
                    op.carried.clear();
                    latest[l.first + b] = out.ops.size();
                    out.ops.push_back(std::move(op));
                }
                for (std::size_t b = 0; b < l.count; ++b) prev[b] = latest[l.first + b];
            }
            i = l.first + l.count;
            continue;
        }
        TraceOp op = t.ops[i];
        for (auto& d : op.deps) d = latest[d];
        latest[i] = out.ops.size();
        out.ops.push_back(std::move(op));
        ++i;
    }
    return out;
}

}  // namespace tpusim
