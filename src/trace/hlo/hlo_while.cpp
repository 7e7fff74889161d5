// Trip counts of while loops: XLA's known_trip_count in the backend_config, else the
// induction variable: the condition compares a tuple element with a constant, the element
// starts at a constant in the loop's initial tuple and the body adds a constant to it.
#include <charconv>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "hlo_importer.h"

namespace tpusim::hlo_detail {

namespace {

// Index of the tuple element an instruction reads from the computation's parameter: a
// get-tuple-element of the parameter, or param#i.
std::optional<std::int64_t> counter_index(const HloComputation& c, const HloOperand& o) {
    const HloInstr& x = c.instrs[static_cast<std::size_t>(o.instr)];
    if (o.tuple_index >= 0 && x.opcode == "parameter") return o.tuple_index;
    if (x.opcode == "get-tuple-element" && !x.operands.empty() &&
        c.instrs[static_cast<std::size_t>(x.operands[0].instr)].opcode == "parameter") {
        if (const HloAttr* a = x.attr("index"))
            return std::strtoll(std::string(a->value).c_str(), nullptr, 10);
    }
    return std::nullopt;
}

// The value of a backend_config as written: XLA prints it as JSON ({"known_trip_count":...}),
// older dumps as a quoted string holding the JSON ("{\"known_trip_count\":...}").
std::string unquoted(std::string_view v) {
    if (v.size() < 2 || v.front() != '"' || v.back() != '"') return std::string(v);
    std::string s;
    s.reserve(v.size());
    for (std::size_t i = 1; i + 1 < v.size(); ++i) {
        if (v[i] == '\\' && i + 2 < v.size()) ++i;
        s.push_back(v[i]);
    }
    return s;
}

// XLA's WhileLoopBackendConfig in proto3 JSON: {"known_trip_count":{"n":"500"}}, n an int64
// written as a string (a number is accepted too) and left out when it is 0. A backend_config
// that names known_trip_count but is not such an object is a located error, not a count guessed
// from its digits; one that does not name it is ignored, parsable or not, as XLA ignores it.
std::optional<std::int64_t> known_trip_count(const HloModule& m, const HloInstr& w) {
    const HloAttr* b = w.attr("backend_config");
    if (!b || b->value.find("known_trip_count") == std::string_view::npos) return std::nullopt;
    const auto bad = [&](const std::string& what) {
        m.fail(b->offset, fmt::format("backend_config of while {} {}", w.name, what));
    };
    const auto j = nlohmann::json::parse(unquoted(b->value), nullptr, false);
    if (j.is_discarded() || !j.is_object()) bad("names known_trip_count but is not a JSON object");
    const auto k = j.find("known_trip_count");
    if (k == j.end()) return std::nullopt;
    if (!k->is_object()) bad("names known_trip_count but it is not an object");
    const auto n = k->find("n");
    if (n == k->end()) return 0;  // proto3 JSON leaves out a count of 0
    std::int64_t v = -1;
    if (n->is_number_integer()) {
        v = n->get<std::int64_t>();
    } else if (n->is_string()) {
        const auto& t = n->get_ref<const std::string&>();
        const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
        if (r.ec != std::errc{} || r.ptr != t.data() + t.size()) v = -1;
    }
    if (v < 0)
        bad(fmt::format("has known_trip_count n = {}, not a non-negative integer", n->dump()));
    return v;
}

}  // namespace

std::optional<std::int64_t> constant_int(const HloInstr& in) {
    if (in.opcode != "constant" || in.shape.tuple || !in.shape.dims.empty()) return std::nullopt;
    const std::string s(in.literal);
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (end == s.c_str()) return std::nullopt;
    return v;
}

std::optional<std::int64_t> while_trip_count(const HloModule& m, const HloComputation& parent,
                                             const HloInstr& w) {
    if (auto k = known_trip_count(m, w)) return k;
    const HloAttr* ca = w.attr("condition");
    const HloAttr* ba = w.attr("body");
    if (!ca || !ba || w.operands.empty()) return std::nullopt;
    auto comp_of = [&](std::string_view v) {
        if (!v.empty() && v.front() == '%') v.remove_prefix(1);
        return m.find_computation(v);
    };
    const std::int32_t ci = comp_of(ca->value), bi = comp_of(ba->value);
    if (ci < 0 || bi < 0) return std::nullopt;
    const HloComputation& cond = m.computations[static_cast<std::size_t>(ci)];
    const HloInstr& cmp = cond.instrs[static_cast<std::size_t>(cond.root)];
    if (cmp.opcode != "compare" || cmp.operands.size() != 2) return std::nullopt;
    const HloAttr* dir = cmp.attr("direction");
    if (!dir) return std::nullopt;
    std::string d(dir->value);
    auto limit = constant_int(cond.instrs[static_cast<std::size_t>(cmp.operands[1].instr)]);
    auto idx = counter_index(cond, cmp.operands[0]);
    if (!limit || !idx) {  // constant on the left: swap the sides and the direction
        limit = constant_int(cond.instrs[static_cast<std::size_t>(cmp.operands[0].instr)]);
        idx = counter_index(cond, cmp.operands[1]);
        if (d == "LT")
            d = "GT";
        else if (d == "GT")
            d = "LT";
        else if (d == "LE")
            d = "GE";
        else if (d == "GE")
            d = "LE";
    }
    if (!limit || !idx || *idx < 0) return std::nullopt;
    // Initial value: element idx of the tuple the loop starts from.
    const HloInstr& init = parent.instrs[static_cast<std::size_t>(w.operands[0].instr)];
    if (init.opcode != "tuple" || static_cast<std::size_t>(*idx) >= init.operands.size())
        return std::nullopt;
    const auto start =
        constant_int(parent.instrs[static_cast<std::size_t>(init.operands[*idx].instr)]);
    if (!start) return std::nullopt;
    // Step: body root element idx = add(counter, constant), else 1.
    std::int64_t step = 1;
    const HloComputation& body = m.computations[static_cast<std::size_t>(bi)];
    const HloInstr& broot = body.instrs[static_cast<std::size_t>(body.root)];
    if (broot.opcode == "tuple" && static_cast<std::size_t>(*idx) < broot.operands.size()) {
        const HloInstr& upd = body.instrs[static_cast<std::size_t>(broot.operands[*idx].instr)];
        if (upd.opcode == "add" && upd.operands.size() == 2) {
            for (const auto& o : upd.operands)
                if (auto c = constant_int(body.instrs[static_cast<std::size_t>(o.instr)]))
                    step = *c;
        } else if (upd.opcode == "subtract" && upd.operands.size() == 2) {
            if (auto c = constant_int(body.instrs[static_cast<std::size_t>(upd.operands[1].instr)]))
                step = -*c;
        }
    }
    if (step == 0) return std::nullopt;
    const std::int64_t span = *limit - *start;
    std::int64_t trips = 0;
    if (d == "LT" && step > 0)
        trips = (span + step - 1) / step;
    else if (d == "LE" && step > 0)
        trips = span / step + 1;
    else if (d == "GT" && step < 0)
        trips = (-span + (-step) - 1) / (-step);
    else if (d == "GE" && step < 0)
        trips = -span / (-step) + 1;
    else if (d == "NE")
        trips = span / step;
    else
        return std::nullopt;
    return trips < 0 ? 0 : trips;
}

// A while loop as a trace loop: the body's ops once, run `trips` times. The body is walked
// twice, from the loop's initial state (trip 0, the ops kept) and from the state trip 0
// leaves (a scratch copy, dropped): a dep of the scratch copy on an op of trip 0 is a
// loop-carried dep. Nullopt (the caller unrolls) when the two walks differ in their ops.
std::optional<Value> Importer::repeat(const HloInstr& w, std::int32_t body, const Value& state,
                                      std::int64_t trips, const std::string& suffix) {
    const auto n0 = static_cast<std::uint32_t>(trace_.ops.size());
    in_loop_ = true;
    struct Leave {
        bool& flag;
        ~Leave() { flag = false; }
    } leave{in_loop_};
    const Value first = walk(body, {state}, suffix);
    const auto n1 = static_cast<std::uint32_t>(trace_.ops.size());
    Value next = walk(body, {first}, fmt::format("{}@repeat", suffix));
    const auto n2 = static_cast<std::uint32_t>(trace_.ops.size());
    const std::uint32_t count = n1 - n0;
    bool same = n2 - n1 == count;
    for (std::uint32_t k = 0; same && k < count; ++k) {
        const TraceOp& a = trace_.ops[n0 + k];
        const TraceOp& b = trace_.ops[n1 + k];
        same = a.kind == b.kind && a.fused == b.fused;
    }
    // The scratch ops go (their ids and fusion claims with them).
    auto drop_from = [&](std::uint32_t from) {
        for (std::uint32_t k = from; k < static_cast<std::uint32_t>(trace_.ops.size()); ++k) {
            ids_.erase(trace_.ops[k].id);
            claimed_.erase(k);
        }
    };
    drop_from(n1);
    if (!same) {  // not the same ops trip after trip: the caller unrolls
        drop_from(n0);
        trace_.ops.resize(n0);
        return std::nullopt;
    }
    for (std::uint32_t k = 0; k < count; ++k) {
        TraceOp& a = trace_.ops[n0 + k];
        for (std::size_t d : trace_.ops[n1 + k].deps) {
            if (d >= n0 && d < n1) {  // the previous trip's op
                if (std::find(a.carried.begin(), a.carried.end(), d) == a.carried.end())
                    a.carried.push_back(d);
            } else if (d < n0 && std::find(a.deps.begin(), a.deps.end(), d) == a.deps.end()) {
                a.deps.push_back(d);  // before the loop (read again in every trip)
            }
        }
    }
    // A body op that reads a carried value reads it by position (docs/trace-format.md).
    for (std::uint32_t k = 0; k < count; ++k)
        if (!trace_.ops[n0 + k].carried.empty()) trace_.ops[n0 + k].operands.clear();
    trace_.ops.resize(n1);
    remap(next, n1, n2, n1 - n0);  // after the loop: the last trip's ops
    if (count > 0) {
        TraceLoop l;
        l.id = unique_id(w.name, suffix);
        l.first = n0;
        l.count = count;
        l.trips = trips;
        trace_.loops.push_back(std::move(l));
    }
    return next;
}

}  // namespace tpusim::hlo_detail
