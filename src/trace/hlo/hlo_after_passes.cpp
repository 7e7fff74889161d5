// The fusion pass written as fusions (docs/hlo.md, "Passes"): what `--after-passes FILE`
// writes, each cluster of fusion_clusters as a fusion instruction calling its fused
// computation.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "hlo_print.h"
#include "hlo_spmd.h"

namespace tpusim {

namespace hlo_print {

using hlo_detail::op_class;
using hlo_detail::OpClass;

class PassWriter {
 public:
    // `schedule`: write each fused computation's instructions in memory_schedule's order (the
    // order the import runs its kernels in), else in the text's.
    PassWriter(const HloModule& m, bool schedule) : m_(m), schedule_(schedule) {
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
                if (in.op == HloOpcode::While) {
                    if (const HloAttr* a = in.attr("body")) {
                        std::string_view v = a->value;
                        if (!v.empty() && v.front() == '%') v.remove_prefix(1);
                        const std::int32_t k = m_.find_computation(v);
                        if (k >= 0) next.push_back(k);
                    }
                } else if (in.op == HloOpcode::Call || in.op == HloOpcode::AsyncStart ||
                           in.op == HloOpcode::Conditional) {
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
        if (in.op != HloOpcode::While) return;
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
        if (in.op == HloOpcode::Constant || op_class(in.op) == OpClass::Generated) return true;
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
        std::vector<std::int32_t> order;
        if (schedule_)
            order = hlo_detail::memory_schedule(c, cluster, hlo_detail::sibling_groups(c, cluster))
                        .order;
        for (std::size_t k = 0; k < n; ++k) {
            const std::size_t i = schedule_ ? static_cast<std::size_t>(order[k]) : k;
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
        for (std::int32_t j : mem) heavy = heavy || op_class(at(c, j).op) == OpClass::Heavy;
        const char* kind = heavy                                         ? "kOutput"
                           : op_class(at(c, r).op) == OpClass::Reduction ? "kInput"
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
                l.shape = shape_text(hlo_detail::value_shape(c, o));
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
    bool schedule_ = true;
    std::unordered_set<std::string> comp_names_;
    std::map<std::int32_t, std::pair<std::string, std::string>> fusion_names_;
    std::map<std::int32_t, std::vector<std::int32_t>> fusion_members_;
    int next_ = 0;
};

}  // namespace hlo_print

HloModule apply_fusion_pass(const HloModule& m, bool memory_scheduler) {
    const HloAttr* scheduled = m.attr("is_scheduled");
    const bool schedule = memory_scheduler && !(scheduled && scheduled->value == "true");
    return parse_hlo(hlo_print::PassWriter(m, schedule).run(), m.path);
}

HloModule hlo_after_passes(const HloModule& m, const HloImportOptions& opts) {
    std::optional<HloModule> d;
    const HloModule* cur = &m;
    if (is_foreign_fused(m)) {
        d = defuse_hlo(m);
        cur = &*d;
    }
    HloImportStats st;
    if (auto p = d ? std::nullopt : hlo_spmd::partitioned(*cur, opts, st)) {
        d = std::move(p);
        cur = &*d;
    }
    if (opts.call_inliner && has_calls(*cur)) {
        std::optional<HloModule> inlined = inline_calls(*cur, nullptr, opts.max_instructions);
        if (inlined) {
            d = std::move(inlined);
            cur = &*d;
        }
    }
    if (opts.fusion && !hlo_detail::has_fusions(*cur))
        return apply_fusion_pass(*cur, opts.memory_scheduler);
    return parse_hlo(print_hlo(*cur), m.path);
}

}  // namespace tpusim
