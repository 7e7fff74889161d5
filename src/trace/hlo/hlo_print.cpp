// The HLO text writer, and the HLO -> HLO steps written with it (docs/hlo.md, "Passes"): the
// fusion pass as fusion instructions (what `--after-passes FILE` writes) and the defusion of
// another backend's optimised module. Each step prints text and parses it again, so that its
// result is a module like any other (string views into text it owns).
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "hlo_import.h"

namespace tpusim {

// The frontend attribute that marks the fusions this writer makes: a module whose fusions
// carry it is tpusim's own, not another backend's (is_foreign_fused).
constexpr const char* kTpusimFusion = "tpusim_fusion_pass";

// Named, not anonymous: the layer compiles in unity batches.
namespace hlo_print {

using hlo_detail::op_class;
using hlo_detail::OpClass;

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

// The shape of an operand's value: the instruction's, or its tuple element.
const HloShape& value_shape(const HloComputation& c, const HloOperand& o) {
    const HloShape& s = c.instrs[static_cast<std::size_t>(o.instr)].shape;
    if (o.tuple_index >= 0 && s.tuple &&
        static_cast<std::size_t>(o.tuple_index) < s.elements.size())
        return s.elements[static_cast<std::size_t>(o.tuple_index)];
    return s;
}

// One instruction line, "  [ROOT ]%name = shape opcode(operands), attrs".
struct Line {
    std::string name;
    std::string body;  // "= shape opcode(...)..." without the name
    bool root = false;
    bool parameter = false;
    std::int64_t parameter_number = 0;
    std::string shape;
};

Line make_line(const HloInstr& in, std::string name, const std::vector<std::string>& operands,
               std::string shape = {}) {
    Line l;
    l.name = std::move(name);
    l.shape = shape.empty() ? shape_text(in.shape) : std::move(shape);
    l.body = fmt::format("= {} {}(", l.shape, in.opcode);
    if (in.opcode == "constant" || in.opcode == "parameter") {
        l.body += in.literal;
    } else {
        for (std::size_t i = 0; i < operands.size(); ++i) {
            if (i > 0) l.body += ", ";
            l.body += operands[i];
        }
    }
    l.body += ')';
    for (const auto& a : in.attrs) l.body += fmt::format(", {}={}", a.name, a.value);
    if (in.opcode == "parameter") {
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

bool has_fusions(const HloModule& m) {
    for (const auto& c : m.computations)
        for (const auto& in : c.instrs)
            if (in.opcode == "fusion") return true;
    return false;
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

// ---- defusion ----------------------------------------------------------------------------

class Defuser {
 public:
    explicit Defuser(const HloModule& m) : m_(m) {}

    std::string run(std::int64_t& count) {
        std::vector<bool> drop(m_.computations.size(), false), other(m_.computations.size());
        for (const auto& c : m_.computations)
            for (const auto& in : c.instrs)
                for (std::int32_t k : in.callees)
                    (in.opcode == "fusion" ? drop : other)[static_cast<std::size_t>(k)] = true;
        std::string out;
        put_header(out, m_);
        for (std::size_t ci = 0; ci < m_.computations.size(); ++ci) {
            const HloComputation& c = m_.computations[ci];
            const bool entry = static_cast<std::int32_t>(ci) == m_.entry;
            if (in_place(c) || (drop[ci] && !other[ci] && !entry)) continue;
            lines_.clear();
            used_.clear();
            for (const auto& in : c.instrs) used_.insert(std::string(in.name));
            const Ref root = inline_computation(c, {}, true);
            mark_root(root, c);
            put_computation(out, c.name, entry, lines_);
        }
        count = count_;
        return out;
    }

 private:
    // A value: the operand text that reads it, and its elements when it is a tuple made by an
    // inlined tuple root (a get-tuple-element of it reads the element directly).
    struct Ref {
        std::string text;
        std::string name;  // the instruction, without '%' and '#'
        std::vector<Ref> elements;
        bool made = true;  // false: a tuple whose instruction is written only when used whole
        const HloInstr* tuple = nullptr;
        std::vector<std::string> tuple_ops;
    };

    // The lines of computation c with its parameters bound to `args` (none: c's own);
    // returns its root's value.
    Ref inline_computation(const HloComputation& c, const std::vector<Ref>& args, bool top) {
        if (++depth_ > kMaxHloCallDepth)
            m_.fail(c.offset,
                    fmt::format("fusions nest more than {} levels deep", kMaxHloCallDepth));
        std::vector<Ref> val(c.instrs.size());
        for (std::size_t i = 0; i < c.instrs.size(); ++i) {
            const HloInstr& in = c.instrs[i];
            auto arg = [&](const HloOperand& o) -> Ref {
                const Ref& r = val[static_cast<std::size_t>(o.instr)];
                if (o.tuple_index >= 0) {
                    if (static_cast<std::size_t>(o.tuple_index) < r.elements.size())
                        return whole(r.elements[static_cast<std::size_t>(o.tuple_index)]);
                    const Ref w = whole(r);
                    return {
                        fmt::format("{}#{}", w.text, o.tuple_index), w.name, {}, true, nullptr, {}};
                }
                return whole(r);
            };
            if (!top && in.opcode == "parameter") {
                const std::size_t n = std::strtoull(std::string(in.literal).c_str(), nullptr, 10);
                if (n >= args.size())
                    m_.fail(in.offset, fmt::format("parameter({}) of a fused computation called "
                                                   "with {} operands",
                                                   n, args.size()));
                val[i] = args[n];
                continue;
            }
            if (in.opcode == "fusion" && !in.callees.empty()) {
                std::vector<Ref> fargs;
                for (const auto& o : in.operands) fargs.push_back(arg(o));
                ++count_;
                val[i] = inline_computation(
                    m_.computations[static_cast<std::size_t>(in.callees.front())], fargs, false);
                continue;
            }
            if (in.opcode == "get-tuple-element" && in.operands.size() == 1 &&
                in.operands[0].tuple_index < 0) {
                const Ref& t = val[static_cast<std::size_t>(in.operands[0].instr)];
                const HloAttr* a = in.attr("index");
                const std::size_t k =
                    a ? std::strtoull(std::string(a->value).c_str(), nullptr, 10) : 0;
                if (!t.elements.empty() && k < t.elements.size() &&
                    static_cast<std::int32_t>(i) != c.root) {
                    val[i] = t.elements[k];
                    continue;
                }
            }
            std::vector<std::string> ops;
            for (const auto& o : in.operands) ops.push_back(arg(o).text);
            const std::string name =
                top ? std::string(in.name) : fresh(used_, std::string(in.name));
            Ref r{"%" + name, name, {}, true, nullptr, {}};
            // An inlined tuple root: its elements are read directly; the tuple itself is
            // written only if something reads it whole.
            if (!top && static_cast<std::int32_t>(i) == c.root && in.opcode == "tuple") {
                for (const auto& o : in.operands) r.elements.push_back(arg(o));
                r.made = false;
                r.tuple = &in;
                r.tuple_ops = ops;
                val[i] = std::move(r);
                continue;
            }
            lines_.push_back(make_line(in, name, ops));
            val[i] = std::move(r);
        }
        --depth_;
        return val[static_cast<std::size_t>(c.root)];
    }

    // The value read whole: an inlined tuple root is written out on first use.
    Ref whole(const Ref& r) {
        if (r.made) return r;
        if (!written_.count(r.name)) {
            lines_.push_back(make_line(*r.tuple, r.name, r.tuple_ops));
            written_.insert(r.name);
        }
        Ref w = r;
        w.made = true;
        return w;
    }

    void mark_root(const Ref& root, const HloComputation& c) {
        const Ref r = whole(root);
        for (auto it = lines_.rbegin(); it != lines_.rend(); ++it) {
            if (it->name == r.name && r.text.find('#') == std::string::npos) {
                it->root = true;
                return;
            }
        }
        // The root reads a parameter's element or the like: one get-tuple-element-free alias
        // is not possible in HLO, so the original root instruction is kept as written.
        const HloInstr& in = c.instrs[static_cast<std::size_t>(c.root)];
        m_.fail(in.offset, fmt::format("cannot defuse: the root {} of computation {} reads {}",
                                       in.name, c.name, r.text));
    }

    const HloModule& m_;
    std::vector<Line> lines_;
    std::unordered_set<std::string> used_, written_;
    std::int64_t count_ = 0;
    int depth_ = 0;
};

// ---- the fusion pass as fusions ----------------------------------------------------------

class PassWriter {
 public:
    explicit PassWriter(const HloModule& m) : m_(m) {
        for (const auto& c : m.computations) comp_names_.insert(std::string(c.name));
    }

    std::string run() {
        // The computations the import walks (and so fuses): ENTRY and what it calls, loops'
        // bodies and branches, transitively; not conditions or to_apply computations.
        std::vector<bool> walked(m_.computations.size(), false);
        std::vector<std::int32_t> stack{m_.entry};
        walked[static_cast<std::size_t>(m_.entry)] = true;
        while (!stack.empty()) {
            const HloComputation& c = m_.computations[static_cast<std::size_t>(stack.back())];
            stack.pop_back();
            for (const auto& in : c.instrs) {
                std::vector<std::int32_t> next;
                if (in.opcode == "while") {
                    if (const HloAttr* a = in.attr("body")) {
                        std::string_view v = a->value;
                        if (!v.empty() && v.front() == '%') v.remove_prefix(1);
                        const std::int32_t k = m_.find_computation(v);
                        if (k >= 0) next.push_back(k);
                    }
                } else if (in.opcode == "call" || in.opcode == "async-start" ||
                           in.opcode == "conditional") {
                    next = in.callees;
                }
                for (std::int32_t k : next)
                    if (!walked[static_cast<std::size_t>(k)]) {
                        walked[static_cast<std::size_t>(k)] = true;
                        stack.push_back(k);
                    }
            }
        }
        std::string out;
        put_header(out, m_);
        for (std::size_t ci = 0; ci < m_.computations.size(); ++ci) {
            const HloComputation& c = m_.computations[ci];
            if (in_place(c)) continue;
            const bool entry = static_cast<std::int32_t>(ci) == m_.entry;
            if (!walked[ci]) {
                put_computation(out, c.name, entry, plain_lines(c));
                continue;
            }
            std::string fused;
            const std::vector<Line> lines = fuse(c, fused);
            out += fused;
            put_computation(out, c.name, entry, lines);
        }
        return out;
    }

 private:
    const HloInstr& at(const HloComputation& c, std::int32_t i) const {
        return c.instrs[static_cast<std::size_t>(i)];
    }

    // A while loop whose trip count the import finds from its induction variable gets it
    // written as XLA's TPU pipeline records it (WhileLoopBackendConfig known_trip_count):
    // once the pass has fused the counter's increment, the written body no longer shows it.
    void annotate_trip_count(const HloComputation& c, const HloInstr& in, Line& l) const {
        if (in.opcode != "while") return;
        const HloAttr* b = in.attr("backend_config");
        if (b && b->value.find("known_trip_count") != std::string_view::npos) return;
        const auto n = hlo_detail::while_trip_count(m_, c, in);
        if (!n) return;
        const std::string config =
            fmt::format("backend_config={{\"known_trip_count\":{{\"n\":\"{}\"}}}}", *n);
        if (!b) {
            l.body += ", " + config;
            return;
        }
        const std::string old = fmt::format("backend_config={}", b->value);
        const std::size_t at = l.body.find(old);
        if (at != std::string::npos) l.body.replace(at, old.size(), config);
    }

    // The value an operand reads once no-op copies are gone.
    HloOperand resolve(const HloComputation& c, HloOperand o) const {
        while (hlo_detail::is_noop_copy(c, at(c, o.instr))) o = at(c, o.instr).operands[0];
        return o;
    }

    // Made in registers by every fusion that reads it: a constant, a broadcast or iota, or a
    // bitcast / reshape of one.
    bool clonable(const HloComputation& c, std::int32_t i) const {
        const HloInstr& in = at(c, i);
        if (in.opcode == "constant" || op_class(in.opcode) == OpClass::Generated) return true;
        return hlo_detail::is_view(c, in, true) && clonable(c, resolve(c, in.operands[0]).instr);
    }

    std::vector<Line> fuse(const HloComputation& c, std::string& fused_out) {
        const std::size_t n = c.instrs.size();
        fusion_names_.clear();
        fusion_members_.clear();
        const auto cluster = hlo_detail::fusion_clusters(c);
        std::unordered_set<std::string> names;
        for (const auto& in : c.instrs) names.insert(std::string(in.name));
        std::vector<std::string> top(n);  // the name each instruction has at the top level
        for (std::size_t i = 0; i < n; ++i) top[i] = std::string(c.instrs[i].name);
        std::vector<bool> noop(n), is_root(n);
        std::map<std::int32_t, std::vector<std::int32_t>> members;
        for (std::size_t i = 0; i < n; ++i) {
            noop[i] = hlo_detail::is_noop_copy(c, c.instrs[i]);
            for (std::int32_t r : cluster[i])
                if (!noop[i]) members[r].push_back(static_cast<std::int32_t>(i));
            is_root[i] = cluster[i].size() == 1 && cluster[i][0] == static_cast<std::int32_t>(i);
        }
        // Fusions: their computations, and the operands each reads from outside.
        std::map<std::int32_t, std::vector<HloOperand>> externals;
        for (auto& [r, mem] : members) {
            const std::string fname = fresh(names, fmt::format("fusion.{}", next_));
            const std::string cname =
                fresh(comp_names_, fmt::format("fused_computation.{}", next_));
            ++next_;
            top[static_cast<std::size_t>(r)] = fname;
            fused_out += fused_computation(c, mem, r, cname, externals[r]);
            fusion_names_[r] = {fname, cname};
        }
        // What stays at the top level, decided from the last instruction back: a clonable
        // instruction only when something at the top level still reads it.
        const HloOperand root = resolve(c, {c.root, -1});
        std::vector<bool> keep(n, false), read(n, false);
        read[static_cast<std::size_t>(root.instr)] = true;
        for (std::size_t i = n; i-- > 0;) {
            const auto ii = static_cast<std::int32_t>(i);
            if (noop[i] || (!cluster[i].empty() && !is_root[i])) continue;
            if (is_root[i]) {
                keep[i] = true;
                for (const auto& o : externals[ii]) read[static_cast<std::size_t>(o.instr)] = true;
                continue;
            }
            if (clonable(c, ii) && !read[i]) continue;
            keep[i] = true;
            for (const auto& o : c.instrs[i].operands)
                read[static_cast<std::size_t>(resolve(c, o).instr)] = true;
        }
        std::vector<Line> lines;
        for (std::size_t i = 0; i < n; ++i) {
            if (!keep[i]) continue;
            const HloInstr& in = c.instrs[i];
            const auto ii = static_cast<std::int32_t>(i);
            std::vector<std::string> ops;
            if (is_root[i]) {
                for (const auto& o : externals[ii])
                    ops.push_back(
                        operand_ref(top[static_cast<std::size_t>(o.instr)], o.tuple_index));
                lines.push_back(fusion_line(c, ii, ops));
            } else {
                for (const auto& o : in.operands) {
                    const HloOperand x = resolve(c, o);
                    ops.push_back(
                        operand_ref(top[static_cast<std::size_t>(x.instr)], x.tuple_index));
                }
                lines.push_back(make_line(in, top[i], ops));
                annotate_trip_count(c, in, lines.back());
            }
            lines.back().root = ii == root.instr && root.tuple_index < 0;
        }
        if (root.tuple_index >= 0) {  // the root was a no-op copy of a tuple element
            const HloInstr& in = at(c, c.root);
            m_.fail(in.offset, fmt::format("cannot write the fusion pass: the root {} of {} is a "
                                           "copy of a tuple element",
                                           in.name, c.name));
        }
        return lines;
    }

    Line fusion_line(const HloComputation& c, std::int32_t r, const std::vector<std::string>& ops) {
        const auto& mem = fusion_members_[r];
        bool heavy = false;
        for (std::int32_t j : mem) heavy = heavy || op_class(at(c, j).opcode) == OpClass::Heavy;
        const char* kind = heavy                                             ? "kOutput"
                           : op_class(at(c, r).opcode) == OpClass::Reduction ? "kInput"
                                                                             : "kLoop";
        Line l;
        l.name = fusion_names_[r].first;
        l.shape = shape_text(at(c, r).shape);
        l.body = fmt::format("= {} fusion(", l.shape);
        for (std::size_t i = 0; i < ops.size(); ++i) l.body += (i > 0 ? ", " : "") + ops[i];
        l.body += fmt::format("), kind={}, calls=%{}, frontend_attributes={{{}=\"true\"}}", kind,
                              fusion_names_[r].second, kTpusimFusion);
        return l;
    }

    // The fused computation of the cluster rooted at r: parameters for the values it reads
    // from outside (in the order first read), clones of what is made in registers, then its
    // members in program order.
    std::string fused_computation(const HloComputation& c, const std::vector<std::int32_t>& mem,
                                  std::int32_t r, const std::string& cname,
                                  std::vector<HloOperand>& ext) {
        fusion_members_[r] = mem;
        const std::unordered_set<std::int32_t> in_mem(mem.begin(), mem.end());
        std::unordered_set<std::string> used;
        for (std::int32_t j : mem) used.insert(std::string(at(c, j).name));
        std::map<std::int64_t, std::string> params;  // read_key -> parameter name
        std::vector<Line> param_lines, body;
        std::unordered_set<std::int32_t> cloned;
        std::function<std::string(HloOperand)> ref = [&](HloOperand o) -> std::string {
            o = resolve(c, o);
            const HloInstr& x = at(c, o.instr);
            if (in_mem.count(o.instr)) return operand_ref(x.name, o.tuple_index);
            if (clonable(c, o.instr)) {
                if (!cloned.count(o.instr)) {
                    std::vector<std::string> ops;
                    for (const auto& oo : x.operands) ops.push_back(ref(oo));
                    if (!cloned.count(o.instr)) {
                        cloned.insert(o.instr);
                        used.insert(std::string(x.name));
                        body.push_back(make_line(x, std::string(x.name), ops));
                    }
                }
                return operand_ref(x.name, o.tuple_index);
            }
            const std::int64_t key = hlo_detail::read_key(o);
            auto it = params.find(key);
            if (it == params.end()) {
                const std::size_t k = ext.size();
                ext.push_back(o);
                Line l;
                l.name = fresh(used, fmt::format("param_{}", k));
                l.shape = shape_text(value_shape(c, o));
                l.body = fmt::format("= {} parameter({})", l.shape, k);
                l.parameter = true;
                l.parameter_number = static_cast<std::int64_t>(k);
                param_lines.push_back(std::move(l));
                it = params.emplace(key, param_lines.back().name).first;
            }
            return "%" + it->second;
        };
        // Clone names must not collide with members: reserve the member names first (done),
        // and a clone keeps its own name (unique in the computation).
        for (std::int32_t j : mem) {
            const HloInstr& in = at(c, j);
            std::vector<std::string> ops;
            for (const auto& o : in.operands) ops.push_back(ref(o));
            body.push_back(make_line(in, std::string(in.name), ops));
            body.back().root = j == r;
        }
        std::vector<Line> lines = std::move(param_lines);
        for (auto& l : body) lines.push_back(std::move(l));
        std::string out;
        put_computation(out, cname, false, lines);
        return out;
    }

    const HloModule& m_;
    std::unordered_set<std::string> comp_names_;
    std::map<std::int32_t, std::pair<std::string, std::string>> fusion_names_;
    std::map<std::int32_t, std::vector<std::int32_t>> fusion_members_;
    int next_ = 0;
};

}  // namespace hlo_print

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

bool is_foreign_fused(const HloModule& m) {
    if (!m.attr("entry_computation_layout") || !hlo_print::has_fusions(m)) return false;
    for (const auto& c : m.computations) {
        for (const auto& in : c.instrs) {
            if (hlo_print::any_tiled(in.shape)) return false;
            const HloAttr* a = in.opcode == "fusion" ? in.attr("frontend_attributes") : nullptr;
            if (a && a->value.find(kTpusimFusion) != std::string_view::npos) return false;
        }
    }
    return true;
}

HloModule defuse_hlo(const HloModule& m, std::int64_t* fusions) {
    std::int64_t n = 0;
    std::string text = hlo_print::Defuser(m).run(n);
    if (fusions) *fusions = n;
    return parse_hlo(std::move(text), m.path);
}

HloModule apply_fusion_pass(const HloModule& m) {
    return parse_hlo(hlo_print::PassWriter(m).run(), m.path);
}

HloModule hlo_after_passes(const HloModule& m, const HloImportOptions& opts) {
    std::optional<HloModule> d;
    const HloModule* cur = &m;
    if (is_foreign_fused(m)) {
        d = defuse_hlo(m);
        cur = &*d;
    }
    if (opts.fusion && !hlo_print::has_fusions(*cur)) return apply_fusion_pass(*cur);
    return parse_hlo(print_hlo(*cur), m.path);
}

}  // namespace tpusim
