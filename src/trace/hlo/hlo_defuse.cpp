// The defusion of another backend's optimised module (docs/hlo.md, "Passes"): its fusions
// inlined back into their callers, so that tpusim's own passes fuse it as the TPU would.
#include <fmt/format.h>

#include <cstdlib>
#include <unordered_set>

#include "hlo_print.h"

namespace tpusim {

namespace hlo_print {

class Defuser {
 public:
    explicit Defuser(const HloModule& m) : m_(m) {}

    std::string run(std::int64_t& count) {
        std::vector<bool> drop(m_.computations.size(), false), other(m_.computations.size());
        for (const auto& c : m_.computations)
            for (const auto& in : c.instrs)
                for (std::int32_t k : in.callees)
                    (in.op == HloOpcode::Fusion ? drop : other)[static_cast<std::size_t>(k)] = true;
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
            if (!top && in.op == HloOpcode::Parameter) {
                const std::size_t n = std::strtoull(std::string(in.literal).c_str(), nullptr, 10);
                if (n >= args.size())
                    m_.fail(in.offset, fmt::format("parameter({}) of a fused computation called "
                                                   "with {} operands",
                                                   n, args.size()));
                val[i] = args[n];
                continue;
            }
            if (in.op == HloOpcode::Fusion && !in.callees.empty()) {
                std::vector<Ref> fargs;
                for (const auto& o : in.operands) fargs.push_back(arg(o));
                ++count_;
                val[i] = inline_computation(
                    m_.computations[static_cast<std::size_t>(in.callees.front())], fargs, false);
                continue;
            }
            if (in.op == HloOpcode::GetTupleElement && in.operands.size() == 1 &&
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
            if (!top && static_cast<std::int32_t>(i) == c.root && in.op == HloOpcode::Tuple) {
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
        // The root is an element of a tuple that no instruction of the defused computation
        // makes (a parameter's element): HLO has no alias to mark as the root.
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

}  // namespace hlo_print

bool is_foreign_fused(const HloModule& m) {
    if (!m.attr("entry_computation_layout") || !hlo_detail::has_fusions(m)) return false;
    for (const auto& c : m.computations) {
        for (const auto& in : c.instrs) {
            if (hlo_print::any_tiled(in.shape)) return false;
            const HloAttr* a =
                in.op == HloOpcode::Fusion ? in.attr("frontend_attributes") : nullptr;
            if (a && a->value.find(hlo_print::kTpusimFusion) != std::string_view::npos)
                return false;
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

}  // namespace tpusim
