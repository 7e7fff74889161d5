// Trip counts of while loops: XLA's known_trip_count in the backend_config, else the
// induction variable as XLA's while_loop_analysis.cc finds it: the condition compares a tuple
// element with a loop constant, the element starts at a constant in the loop's initial tuple
// and the body adds a loop constant to it or subtracts one (docs/hlo.md, "Control flow").
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "hlo_importer.h"

namespace tpusim::hlo_detail {

namespace {

// What a scalar of a loop's computation is, followed back through the instructions that pass
// a value on unchanged: a constant, an element of the computation's tuple parameter, or
// another instruction (`instr`, to look at further).
struct Term {
    enum Kind { Unknown, Constant, Element, Instr } kind = Unknown;
    std::int64_t value = 0;  // Constant: the integer; Element: the tuple index
    std::int32_t instr = -1;
};

bool is_int(const HloType& t) {
    return !t.is_float && !t.name.empty() && t.bits >= 8 && t.bits <= 64 &&
           (t.name[0] == 's' || t.name[0] == 'u');
}

bool is_scalar(const HloShape& s) {
    return !s.tuple && std::all_of(s.dims.begin(), s.dims.end(), [](auto d) { return d == 1; });
}

// The integer of a scalar integer constant; nullopt for a float, a u64 over INT64_MAX or a
// literal that is not one integer.
std::optional<std::int64_t> int_literal(const HloInstr& in) {
    if (in.op != HloOpcode::Constant || !is_scalar(in.shape) || !is_int(in.shape.type))
        return std::nullopt;
    std::string_view s = in.literal;
    while (!s.empty() && (s.front() == '{' || s.front() == ' ')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == '}' || s.back() == ' ')) s.remove_suffix(1);
    std::int64_t v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc{} || r.ptr != s.data() + s.size()) return std::nullopt;
    return v;
}

// Follows operand `o` of computation `c` back through copy, bitcast, reshape and convert of
// integer scalars, get-tuple-element and tuple; `path` holds the tuple indices still to take
// (the last one first). Stops at a constant, at element i of the parameter, or at the first
// instruction that computes something.
Term follow(const HloComputation& c, HloOperand o, std::vector<std::int64_t> path = {}) {
    for (int steps = 0; steps < 256; ++steps) {  // a chain of 256 copies is not a counter
        if (o.instr < 0 || static_cast<std::size_t>(o.instr) >= c.instrs.size()) return {};
        if (o.tuple_index >= 0) path.push_back(o.tuple_index);
        const HloInstr& x = c.instrs[static_cast<std::size_t>(o.instr)];
        if (x.op == HloOpcode::Parameter) {
            if (path.size() != 1) return {};  // the whole tuple, or a nested element
            return {Term::Element, path[0], o.instr};
        }
        if (x.op == HloOpcode::Tuple) {
            if (path.empty()) return {};
            const auto i = static_cast<std::size_t>(path.back());
            if (i >= x.operands.size()) return {};
            path.pop_back();
            o = x.operands[i];
            continue;
        }
        if (x.op == HloOpcode::GetTupleElement) {
            const HloAttr* a = x.attr("index");
            std::int64_t i = -1;
            if (a) std::from_chars(a->value.data(), a->value.data() + a->value.size(), i);
            if (i < 0 || x.operands.empty()) return {};
            path.push_back(i);
            o = x.operands[0];
            continue;
        }
        if (x.op == HloOpcode::Copy && !x.operands.empty()) {
            o = x.operands[0];
            continue;
        }
        if (!path.empty()) return {};  // an element of a tuple some instruction computes
        if (!is_scalar(x.shape) || !is_int(x.shape.type)) return {};
        if (x.op == HloOpcode::Constant) {
            const auto v = int_literal(x);
            return v ? Term{Term::Constant, *v, o.instr} : Term{};
        }
        if ((x.op == HloOpcode::Bitcast || x.op == HloOpcode::Reshape ||
             x.op == HloOpcode::Convert) &&
            x.operands.size() == 1) {
            o = x.operands[0];
            continue;
        }
        return {Term::Instr, 0, o.instr};
    }
    return {};
}

// The smallest and largest value of an integer type (u64 up to INT64_MAX: XLA's
// LiteralAsScalarInt64 counts no further).
std::pair<std::int64_t, std::int64_t> int_range(const HloType& t) {
    const int bits = std::min(t.bits, 64);
    if (t.name[0] == 'u')
        return {0, bits >= 64 ? INT64_MAX : static_cast<std::int64_t>((1ULL << bits) - 1)};
    if (bits >= 64) return {INT64_MIN, INT64_MAX};
    return {-(std::int64_t{1} << (bits - 1)), (std::int64_t{1} << (bits - 1)) - 1};
}

// Trips of `for (i = init; i <dir> bound; i += step)` over integers in [lo, hi]; nullopt when
// the counter would leave the type (wrap) before the condition fails, the step never ends
// the loop, or (NE) the counter steps over the bound.
std::optional<std::int64_t> count_trips(std::string_view dir, std::int64_t init, std::int64_t bound,
                                        std::int64_t step, std::int64_t lo, std::int64_t hi) {
    if (dir != "LT" && dir != "LE" && dir != "GT" && dir != "GE" && dir != "NE" && dir != "EQ")
        return std::nullopt;
    const bool runs = dir == "LT"   ? init < bound
                      : dir == "LE" ? init <= bound
                      : dir == "GT" ? init > bound
                      : dir == "GE" ? init >= bound
                      : dir == "NE" ? init != bound
                                    : init == bound;
    if (init < lo || init > hi) return std::nullopt;
    if (!runs) return 0;
    if (step == 0) return std::nullopt;  // true at the start and for ever
    if (dir == "EQ") return 1;           // init + step is not init, even wrapped
    // Distances as unsigned: bound - init of two int64s fits in a uint64.
    const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
    const std::uint64_t up = step > 0 ? u(step) : 0 - u(step);  // |step|
    const bool rising = dir == "LT" || dir == "LE" || (dir == "NE" && bound > init);
    if ((step > 0) != rising) return std::nullopt;  // moves away from the bound: wraps
    const std::uint64_t span = rising ? u(bound) - u(init) : u(init) - u(bound);
    std::uint64_t trips = 0, past = 0;  // past: how far beyond the bound the loop ends
    if (dir == "NE") {
        if (span % up != 0) return std::nullopt;  // steps over the bound
        trips = span / up;
    } else if (dir == "LT" || dir == "GT") {
        trips = (span - 1) / up + 1;
        past = span % up == 0 ? 0 : up - span % up;
    } else {
        trips = span / up + 1;
        past = up - span % up;
    }
    if (trips > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
    // The value that ends the loop, bound + past (rising) or bound - past, must be of the type.
    if (rising ? bound > hi || u(hi) - u(bound) < past : bound < lo || u(bound) - u(lo) < past)
        return std::nullopt;
    return static_cast<std::int64_t>(trips);
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
    if (in.op != HloOpcode::Constant || in.shape.tuple || !in.shape.dims.empty())
        return std::nullopt;
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
    if (!ca || !ba || w.operands.size() != 1) return std::nullopt;
    auto comp_of = [&](std::string_view v) {
        if (!v.empty() && v.front() == '%') v.remove_prefix(1);
        return m.find_computation(v);
    };
    const std::int32_t ci = comp_of(ca->value), bi = comp_of(ba->value);
    if (ci < 0 || bi < 0) return std::nullopt;
    const HloComputation& cond = m.computations[static_cast<std::size_t>(ci)];
    const HloComputation& body = m.computations[static_cast<std::size_t>(bi)];
    if (cond.root < 0 || body.root < 0) return std::nullopt;
    const HloInstr& cmp = cond.instrs[static_cast<std::size_t>(cond.root)];
    const HloAttr* dir = cmp.attr("direction");
    if (cmp.op != HloOpcode::Compare || cmp.operands.size() != 2 || !dir) return std::nullopt;
    if (body.instrs[static_cast<std::size_t>(body.root)].op != HloOpcode::Tuple)
        return std::nullopt;
    const HloOperand body_root{body.root, -1};
    // Element i's value on entry: a constant in the tuple the loop starts from.
    auto init_of = [&](std::int64_t i) -> std::optional<std::int64_t> {
        const Term t = follow(parent, w.operands[0], {i});
        if (t.kind != Term::Constant) return std::nullopt;
        return t.value;
    };
    // A value the same in every trip: a constant (sunk into the condition or the body), or a
    // tuple element the body passes on unchanged that starts at a constant.
    auto loop_constant = [&](const Term& t) -> std::optional<std::int64_t> {
        if (t.kind == Term::Constant) return t.value;
        if (t.kind != Term::Element) return std::nullopt;
        const Term next = follow(body, body_root, {t.value});
        if (next.kind != Term::Element || next.value != t.value) return std::nullopt;
        return init_of(t.value);
    };
    // The body's update of element i: add(i, step), add(step, i) or subtract(i, step), step a
    // loop constant; its instruction gives the counter's type.
    struct Update {
        std::int64_t step;
        const HloInstr* instr;
    };
    auto update_of = [&](std::int64_t i) -> std::optional<Update> {
        const Term t = follow(body, body_root, {i});
        if (t.kind != Term::Instr) return std::nullopt;
        const HloInstr& x = body.instrs[static_cast<std::size_t>(t.instr)];
        if (x.operands.size() != 2) return std::nullopt;
        const Term l = follow(body, x.operands[0]), r = follow(body, x.operands[1]);
        auto is_i = [&](const Term& s) { return s.kind == Term::Element && s.value == i; };
        std::optional<std::int64_t> step;
        if (x.op == HloOpcode::Add && is_i(l))
            step = loop_constant(r);
        else if (x.op == HloOpcode::Add && is_i(r))
            step = loop_constant(l);
        else if (x.op == HloOpcode::Subtract && is_i(l) && (step = loop_constant(r)))
            step = *step == INT64_MIN ? std::nullopt : std::optional<std::int64_t>{-*step};
        if (!step) return std::nullopt;
        return Update{*step, &x};
    };
    // The counter on either side of the compare, the bound on the other (the direction swapped
    // when the counter is on the right).
    for (std::size_t side = 0; side < 2; ++side) {
        const Term counter = follow(cond, cmp.operands[side]);
        if (counter.kind != Term::Element) continue;
        const auto upd = update_of(counter.value);
        const auto bound = loop_constant(follow(cond, cmp.operands[1 - side]));
        const auto init = init_of(counter.value);
        if (!upd || !bound || !init) continue;
        std::string_view d = dir->value;
        if (side == 1)
            d = d == "LT" ? "GT" : d == "GT" ? "LT" : d == "LE" ? "GE" : d == "GE" ? "LE" : d;
        const auto [lo, hi] = int_range(upd->instr->shape.type);
        return count_trips(d, *init, *bound, upd->step, lo, hi);
    }
    return std::nullopt;
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
