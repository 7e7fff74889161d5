// The HLO text writer (print_hlo) and the pieces the HLO -> HLO steps share (hlo_print.h):
// each step prints text and parses it again, so that its result is a module like any other
// (string views into text it owns). The steps: hlo_defuse.cpp, hlo_after_passes.cpp.
#include "hlo_print.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

namespace tpusim {

namespace hlo_print {

void put_shape(std::string& out, const HloShape& s) {
    if (s.tuple) {
        out += '(';
        for (std::size_t i = 0; i < s.elements.size(); ++i) {
            if (i > 0) out += ", ";
            put_shape(out, s.elements[i]);
        }
        out += ')';
        return;
    }
    if (!s.text.empty()) {
        out += s.text;
        return;
    }
    out += s.type.name;
    out += '[';
    for (std::size_t i = 0; i < s.dims.size(); ++i)
        out += fmt::format("{}{}", i > 0 ? "," : "", s.dims[i]);
    out += ']';
    if (!s.minor_to_major.empty() || s.memory_space != 0) {
        out += '{';
        for (std::size_t i = 0; i < s.minor_to_major.size(); ++i)
            out += fmt::format("{}{}", i > 0 ? "," : "", s.minor_to_major[i]);
        if (s.memory_space != 0) out += fmt::format(":S({})", s.memory_space);
        out += '}';
    }
}

std::string shape_text(const HloShape& s) {
    std::string out;
    put_shape(out, s);
    return out;
}

Line make_line(const HloInstr& in, std::string name, const std::vector<std::string>& operands,
               std::string shape) {
    Line l;
    l.name = std::move(name);
    l.shape = shape.empty() ? shape_text(in.shape) : std::move(shape);
    l.body = fmt::format("= {} {}(", l.shape, in.opcode);
    if (in.op == HloOpcode::Constant || in.op == HloOpcode::Parameter) {
        l.body += in.literal;
    } else {
        for (std::size_t i = 0; i < operands.size(); ++i) {
            if (i > 0) l.body += ", ";
            l.body += operands[i];
        }
    }
    l.body += ')';
    for (const auto& a : in.attrs) l.body += fmt::format(", {}={}", a.name, a.value);
    if (in.op == HloOpcode::Parameter) {
        l.parameter = true;
        l.parameter_number = std::strtoll(std::string(in.literal).c_str(), nullptr, 10);
    }
    return l;
}

// A computation: "[ENTRY ]%name (params) -> result {", its lines, "}".
void put_computation(std::string& out, std::string_view name, bool entry,
                     const std::vector<Line>& lines) {
    std::vector<const Line*> params;
    const Line* root = lines.empty() ? nullptr : &lines.back();
    for (const auto& l : lines) {
        if (l.parameter) params.push_back(&l);
        if (l.root) root = &l;
    }
    std::stable_sort(params.begin(), params.end(), [](const Line* a, const Line* b) {
        return a->parameter_number < b->parameter_number;
    });
    out += fmt::format("{}%{} (", entry ? "ENTRY " : "", name);
    for (std::size_t i = 0; i < params.size(); ++i)
        out += fmt::format("{}{}: {}", i > 0 ? ", " : "", params[i]->name, params[i]->shape);
    out += fmt::format(") -> {} {{\n", root ? root->shape : "()");
    for (const auto& l : lines)
        out += fmt::format("  {}%{} {}\n", l.root ? "ROOT " : "", l.name, l.body);
    out += "}\n\n";
}

void put_header(std::string& out, const HloModule& m) {
    if (m.name.empty()) return;
    out += fmt::format("HloModule {}", m.name);
    for (const auto& a : m.attrs) out += fmt::format(", {}={}", a.name, a.value);
    out += "\n\n";
}

std::string operand_ref(std::string_view name, std::int32_t tuple_index) {
    return tuple_index >= 0 ? fmt::format("%{}#{}", name, tuple_index) : fmt::format("%{}", name);
}

// Written in place (calls={...}): printed inside its attribute, not on its own.
bool in_place(const HloComputation& c) { return !c.name.empty() && c.name.front() == '{'; }

std::vector<Line> plain_lines(const HloComputation& c) {
    std::vector<Line> lines;
    for (std::size_t i = 0; i < c.instrs.size(); ++i) {
        const HloInstr& in = c.instrs[i];
        std::vector<std::string> ops;
        for (const auto& o : in.operands)
            ops.push_back(
                operand_ref(c.instrs[static_cast<std::size_t>(o.instr)].name, o.tuple_index));
        lines.push_back(make_line(in, std::string(in.name), ops));
        lines.back().root = static_cast<std::int32_t>(i) == c.root;
    }
    return lines;
}

bool any_tiled(const HloShape& s) {
    if (s.tiled) return true;
    for (const auto& e : s.elements)
        if (any_tiled(e)) return true;
    return false;
}

// A name not in `used`, `base` if free; added to `used`.
std::string fresh(std::unordered_set<std::string>& used, const std::string& base) {
    std::string n = base;
    for (int k = 1; !used.insert(n).second; ++k) n = fmt::format("{}.{}", base, k);
    return n;
}

}  // namespace hlo_print

namespace hlo_detail {

bool has_fusions(const HloModule& m) {
    for (const auto& c : m.computations)
        for (const auto& in : c.instrs)
            if (in.op == HloOpcode::Fusion) return true;
    return false;
}

}  // namespace hlo_detail

std::string print_hlo(const HloModule& m) {
    std::string out;
    hlo_print::put_header(out, m);
    for (std::size_t ci = 0; ci < m.computations.size(); ++ci) {
        const HloComputation& c = m.computations[ci];
        if (hlo_print::in_place(c)) continue;
        hlo_print::put_computation(out, c.name, static_cast<std::int32_t>(ci) == m.entry,
                                   hlo_print::plain_lines(c));
    }
    return out;
}

}  // namespace tpusim
