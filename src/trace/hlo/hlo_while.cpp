// Trip counts of while loops: XLA's known_trip_count in the backend_config, else the
// induction variable: the condition compares a tuple element with a constant, the element
// starts at a constant in the loop's initial tuple and the body adds a constant to it.
#include <cstdlib>

#include "hlo_import.h"

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

std::optional<std::int64_t> known_trip_count(const HloInstr& w) {
    const HloAttr* b = w.attr("backend_config");
    if (!b) return std::nullopt;
    const std::size_t k = b->value.find("known_trip_count");
    if (k == std::string_view::npos) return std::nullopt;
    const std::size_t nkey = b->value.find("\"n\"", k);
    const std::size_t nkey2 = b->value.find("\\\"n\\\"", k);
    std::size_t p = std::min(nkey, nkey2);
    if (p == std::string_view::npos) return std::nullopt;
    while (p < b->value.size() && (b->value[p] < '0' || b->value[p] > '9')) ++p;
    std::int64_t v = 0;
    bool any = false;
    while (p < b->value.size() && b->value[p] >= '0' && b->value[p] <= '9' && v < (1LL << 40)) {
        v = v * 10 + (b->value[p++] - '0');
        any = true;
    }
    return any ? std::optional<std::int64_t>(v) : std::nullopt;
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
    if (auto k = known_trip_count(w)) return k;
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

}  // namespace tpusim::hlo_detail
