// The HLO text reader: module header, metadata tables, computations, instructions, then the
// links (operand names, called computations) and a check that calls form no cycle. The
// grammar is XLA's (xla/hlo/parser/hlo_parser.cc), read, not copied.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <unordered_map>

#include "hlo_cursor.h"
#include "hlo_import.h"
#include "tpusim/common/error.h"
#include "tpusim/common/json_io.h"

namespace tpusim {

using hlo_detail::Cursor;

std::int64_t HloShape::elements_count() const {
    if (tuple) return 0;
    std::int64_t n = 1;
    for (std::int64_t d : dims) n *= d;
    return n;
}

std::int64_t HloShape::bytes() const {
    if (tuple) {
        std::int64_t b = 0;
        for (const auto& e : elements) b += e.bytes();
        return b;
    }
    const std::int64_t n = elements_count();
    // Sub-byte types pack; a 2^62-element array of 128-bit values would not fit, so saturate.
    if (type.bits > 8 && n > (std::int64_t{1} << 62) / (type.bits / 8))
        return std::int64_t{1} << 62;
    return type.bits >= 8 ? n * (type.bits / 8) : (n * type.bits + 7) / 8;
}

const HloAttr* HloInstr::attr(std::string_view n) const {
    for (const auto& a : attrs)
        if (a.name == n) return &a;
    return nullptr;
}

const HloAttr* HloModule::attr(std::string_view n) const {
    for (const auto& a : attrs)
        if (a.name == n) return &a;
    return nullptr;
}

std::int32_t HloModule::find_computation(std::string_view n) const {
    const auto it = by_name.find(n);
    return it == by_name.end() ? -1 : it->second;
}

std::string HloModule::location(std::uint32_t offset) const {
    const std::string& t = *text;
    const std::size_t end = std::min<std::size_t>(offset, t.size());
    int line = 1;
    std::size_t line_start = 0;
    for (std::size_t i = 0; i < end; ++i) {
        if (t[i] == '\n') {
            ++line;
            line_start = i + 1;
        }
    }
    return fmt::format("{}:{}:{}", path, line, end - line_start + 1);
}

void HloModule::fail(std::uint32_t offset, const std::string& what) const {
    throw InputError(location(offset), "", what);
}

namespace {

bool is_table(std::string_view w) {
    return w == "FileNames" || w == "FunctionNames" || w == "FileLocations" || w == "StackFrames";
}

// Attributes whose value names computations, one or a {list}.
bool names_computations(std::string_view a) {
    return a == "calls" || a == "to_apply" || a == "body" || a == "condition" ||
           a == "branch_computations" || a == "true_computation" || a == "false_computation" ||
           a == "called_computations" || a == "select" || a == "scatter";
}

class Parser {
 public:
    explicit Parser(HloModule& m) : m_(m), c_(*m.text, m) {}

    void module() {
        if (c_.accept_word("HloModule")) {
            m_.name = c_.expect_name("the module name after HloModule");
            while (c_.accept(',')) m_.attrs.push_back(attribute());
        }
        while (!c_.at_end()) {
            const std::size_t save = c_.pos();
            const std::string_view w = c_.name();
            if (is_table(w)) {
                table();
                continue;
            }
            if (w == "HloModule")
                c_.fail_at(save,
                           "a second HloModule in one file (split the file, one module "
                           "per file)");
            c_.seek(save);
            computation();
        }
        if (m_.computations.empty()) c_.fail("expected a computation, found the end of the file");
        if (m_.entry < 0) m_.entry = static_cast<std::int32_t>(m_.computations.size()) - 1;
        link();
    }

 private:
    HloAttr attribute() {
        HloAttr a;
        a.offset = c_.pos();
        a.name = c_.expect_name("an attribute name");
        a.offset = c_.pos() - static_cast<std::uint32_t>(a.name.size());
        c_.expect('=', fmt::format("after the attribute name {}", a.name).c_str());
        a.value = c_.value();
        if (a.name == "literal" && c_.peek_raw() == ' ') {  // literal=s32[] 1: shape, value
            const std::size_t save = c_.pos();
            const char next = c_.peek();
            if (next != ',' && next != ')' && next != '}' && next != '\0') {
                const std::string_view rest = c_.value();
                a.value = std::string_view(
                    a.value.data(),
                    static_cast<std::size_t>(rest.data() + rest.size() - a.value.data()));
            } else {
                c_.seek(save);
            }
        }
        return a;
    }

    // FileNames / FunctionNames / FileLocations / StackFrames: lines "<id> <string or {...}>".
    void table() {
        while (std::isdigit(static_cast<unsigned char>(c_.peek())) != 0) {
            c_.integer("a table index");
            if (c_.peek() == '"') {
                c_.string_literal();
            } else if (c_.peek() == '{') {
                c_.group();
            } else {
                c_.fail(
                    fmt::format("expected a string or {{...}} in a table, found {}", c_.found()));
            }
        }
    }

    void computation() {
        HloComputation comp;
        const bool entry = c_.accept_word("ENTRY");
        comp.offset = c_.pos();
        comp.name = c_.expect_name("a computation name (or HloModule / ENTRY)");
        comp.offset = c_.pos() - static_cast<std::uint32_t>(comp.name.size());
        if (c_.peek() == '(') {
            c_.group();  // parameters; their shapes are repeated by the parameter instructions
            if (!c_.accept('-') || c_.peek_raw() != '>')
                c_.fail(fmt::format("expected '->' and the result shape, found {}", c_.found()));
            c_.accept('>');
            c_.shape();
        }
        if (c_.peek() == ',') {  // execution_thread="..." and similar
            while (c_.accept(',')) attribute();
        }
        c_.expect('{', fmt::format("to open computation {}", comp.name).c_str());
        names_.clear();
        while (!c_.accept('}')) {
            if (c_.at_end())
                c_.fail_at(comp.offset, fmt::format("computation {} is not closed: missing '}}' "
                                                    "before the end of the file",
                                                    comp.name));
            instruction(comp);
        }
        while (c_.accept(',')) attribute();  // }, execution_thread="..."
        if (comp.instrs.empty()) c_.fail_at(comp.offset, "a computation needs instructions");
        if (comp.root < 0) comp.root = static_cast<std::int32_t>(comp.instrs.size()) - 1;
        const auto index = static_cast<std::int32_t>(m_.computations.size());
        if (!m_.by_name.emplace(comp.name, index).second)
            c_.fail_at(comp.offset, fmt::format("duplicate computation name {}", comp.name));
        if (entry) {
            if (m_.entry >= 0) c_.fail_at(comp.offset, "a second ENTRY computation");
            m_.entry = index;
        }
        m_.computations.push_back(std::move(comp));
    }

    void instruction(HloComputation& comp) {
        HloInstr in;
        in.root = c_.accept_word("ROOT");
        in.offset = c_.pos();
        in.name = c_.expect_name("an instruction name (or '}' to close the computation)");
        in.offset = c_.pos() - static_cast<std::uint32_t>(in.name.size());
        c_.expect('=', fmt::format("after the instruction name {}", in.name).c_str());
        // The shape may be left out (XLA infers it); an opcode is a name followed by '('.
        bool inferred = false;
        {
            const std::size_t save = c_.pos();
            const std::string_view w = c_.name();
            inferred = !w.empty() && c_.peek_raw() == '(' && !hlo_detail::find_type(w);
            c_.seek(save);
        }
        if (!inferred) in.shape = c_.shape();
        in.opcode = c_.expect_name("an opcode");
        in.op = hlo_detail::hlo_opcode(in.opcode);
        c_.expect('(', fmt::format("after the opcode {}", in.opcode).c_str());
        if (in.op == HloOpcode::Constant || in.op == HloOpcode::Parameter) {
            c_.seek(c_.pos() - 1);
            const std::string_view g = c_.group();
            in.literal = g.substr(1, g.size() - 2);
        } else if (!c_.accept(')')) {
            do {
                in.operands.push_back(operand(comp));
            } while (c_.accept(','));
            c_.expect(')', "to close the operand list");
        }
        while (c_.accept(',')) {
            in.attrs.push_back(attribute());
            const HloAttr& a = in.attrs.back();
            if (names_computations(a.name) && a.value.front() == '{' &&
                a.value.find('=') != std::string_view::npos)
                inline_computation(a);
        }
        if (inferred) in.shape = infer_shape(comp, in);
        const auto index = static_cast<std::int32_t>(comp.instrs.size());
        if (!names_.emplace(in.name, index).second)
            c_.fail_at(in.offset, fmt::format("duplicate instruction name {}", in.name));
        if (in.root) {
            if (comp.root >= 0) c_.fail_at(in.offset, "a second ROOT in one computation");
            comp.root = index;
        }
        comp.instrs.push_back(std::move(in));
    }

    // calls={ p = f32[] parameter(0) ... }: a computation written in place, registered under
    // the attribute's whole value (which is how the instruction names it).
    void inline_computation(const HloAttr& a) {
        const std::size_t after = c_.pos();
        auto outer = std::move(names_);
        names_.clear();
        HloComputation comp;
        comp.name = a.value;
        comp.offset = static_cast<std::uint32_t>(a.value.data() - m_.text->data());
        c_.seek(comp.offset + 1);
        while (!c_.accept('}')) instruction(comp);
        if (comp.instrs.empty()) c_.fail_at(comp.offset, "a computation needs instructions");
        if (comp.root < 0) comp.root = static_cast<std::int32_t>(comp.instrs.size()) - 1;
        m_.by_name.emplace(comp.name, static_cast<std::int32_t>(m_.computations.size()));
        m_.computations.push_back(std::move(comp));
        names_ = std::move(outer);
        c_.seek(after);
    }

    // The shape of an instruction written without one: a tuple element for
    // get-tuple-element, else the first operand's (elementwise ops), else an empty tuple.
    HloShape infer_shape(const HloComputation& comp, const HloInstr& in) {
        if (in.operands.empty()) {
            HloShape s;
            s.tuple = true;
            return s;
        }
        const HloOperand& o = in.operands[0];
        HloShape s = comp.instrs[static_cast<std::size_t>(o.instr)].shape;
        std::int64_t index = o.tuple_index;
        if (in.op == HloOpcode::GetTupleElement)
            if (const HloAttr* a = in.attr("index"))
                index = std::strtoll(std::string(a->value).c_str(), nullptr, 10);
        if (index >= 0 && s.tuple && static_cast<std::size_t>(index) < s.elements.size())
            return s.elements[static_cast<std::size_t>(index)];
        return s;
    }

    HloOperand operand(const HloComputation& comp) {
        // "[shape] name[#index]": a shape starts with '(' or an element type followed by '['.
        if (c_.peek() == '(') {
            c_.shape();
        } else {
            const std::size_t save = c_.pos();
            const std::string_view w = c_.name();
            if (hlo_detail::find_type(w) && c_.peek_raw() == '[') {
                c_.seek(save);
                c_.shape();
            } else {
                c_.seek(save);
            }
        }
        const std::uint32_t at = c_.pos();
        const std::string_view n = c_.expect_name("an operand name");
        HloOperand op;
        const auto it = names_.find(n);
        if (it == names_.end())
            c_.fail_at(at + (c_.pos() - at - n.size()),
                       fmt::format("unknown operand {} (not defined earlier in computation {})", n,
                                   comp.name));
        op.instr = it->second;
        if (c_.peek_raw() == '#') {
            c_.seek(c_.pos() + 1);
            op.tuple_index = static_cast<std::int32_t>(c_.integer("a tuple index after '#'"));
        }
        return op;
    }

    // Called computations by name, then a walk from ENTRY that rejects call cycles.
    void link() {
        for (auto& comp : m_.computations) {
            for (auto& in : comp.instrs) {
                for (const auto& a : in.attrs) {
                    if (!names_computations(a.name)) continue;
                    if (const std::int32_t k = m_.find_computation(a.value); k >= 0) {
                        in.callees.push_back(k);  // written in place
                        continue;
                    }
                    if (a.name == "scatter" && in.op != HloOpcode::SelectAndScatter) continue;
                    if (a.name == "select" && in.op != HloOpcode::SelectAndScatter) continue;
                    std::string_view v = a.value;
                    if (!v.empty() && v.front() == '{') v = v.substr(1, v.size() - 2);
                    std::size_t i = 0;
                    while (i < v.size()) {
                        std::size_t j = v.find(',', i);
                        if (j == std::string_view::npos) j = v.size();
                        std::string_view n = v.substr(i, j - i);
                        while (!n.empty() && (n.front() == ' ' || n.front() == '%'))
                            n.remove_prefix(1);
                        while (!n.empty() && n.back() == ' ') n.remove_suffix(1);
                        const std::int32_t k = m_.find_computation(n);
                        if (k < 0)
                            m_.fail(a.offset, fmt::format("{}={}: no computation named {}", a.name,
                                                          a.value, n));
                        in.callees.push_back(k);
                        i = j + 1;
                    }
                }
            }
        }
        // Iterative DFS with colours: 1 on the stack, 2 done.
        std::vector<int> colour(m_.computations.size(), 0);
        struct Frame {
            std::int32_t comp;
            std::size_t instr = 0, callee = 0;
        };
        std::vector<Frame> stack{{m_.entry}};
        colour[m_.entry] = 1;
        while (!stack.empty()) {
            Frame& f = stack.back();
            const auto& comp = m_.computations[f.comp];
            if (f.instr >= comp.instrs.size()) {
                colour[f.comp] = 2;
                stack.pop_back();
                continue;
            }
            const HloInstr& in = comp.instrs[f.instr];
            if (f.callee >= in.callees.size()) {
                ++f.instr;
                f.callee = 0;
                continue;
            }
            const std::int32_t k = in.callees[f.callee++];
            if (colour[k] == 1)
                m_.fail(in.offset, fmt::format("{} calls computation {}, which is already on the "
                                               "call path (a cycle through calls)",
                                               in.name, m_.computations[k].name));
            if (colour[k] == 0) {
                colour[k] = 1;
                stack.push_back({k});
            }
        }
    }

    HloModule& m_;
    Cursor c_;
    std::unordered_map<std::string_view, std::int32_t> names_;
};

}  // namespace

HloModule parse_hlo(std::string text, const std::string& path) {
    HloModule m;
    m.path = path;
    m.text = std::make_shared<const std::string>(std::move(text));
    try {
        Parser(m).module();
    } catch (const InputError& e) {
        // A JSON file given where HLO text belongs: say where it goes.
        const std::size_t first = m.text->find_first_not_of(" \t\r\n");
        if (first == std::string::npos || (*m.text)[first] != '{') throw;
        throw InputError(e.file(), e.where(),
                         e.what_only() +
                             " (this looks like JSON: a trace goes to --trace, a "
                             "board configuration to --config)");
    }
    return m;
}

HloModule read_hlo(const std::string& path) {
    return parse_hlo(read_input_file(path, kMaxProgramFileBytes, "an HLO text file"), path);
}

}  // namespace tpusim
