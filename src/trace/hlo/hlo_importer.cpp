// The HLO importer's walker (hlo_importer.h): program order, inlined calls, values and their
// producers; fusions are emitted in hlo_import.cpp (emit_cluster), repeated loops in
// hlo_while.cpp (repeat).
#include "hlo_importer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "hlo_spmd.h"

namespace tpusim::hlo_detail {

Importer::Importer(const HloModule& m, const HloImportOptions& o, std::int64_t cores,
                   HloImportStats& st)
    : own_(prepared(m, o, st)), m_(own_ ? *own_ : m), opts_(o), stats_(st) {
    trace_.cores = cores;
    has_fusions_ = has_fusions(m_);
    // Another backend's optimised module has had its fusions inlined back (defused): the
    // pass runs on it as on a module written before optimisation.
    pass_ = opts_.fusion && !has_fusions_;
    // A module XLA scheduled runs in its text order (its schedule).
    const HloAttr* scheduled = m_.attr("is_scheduled");
    schedule_ = pass_ && opts_.memory_scheduler && !(scheduled && scheduled->value == "true");
}

Trace Importer::run() {
    trace_.name =
        m_.name.empty() ? std::filesystem::path(m_.path).stem().string() : std::string(m_.name);
    trace_.path = m_.path;
    const HloComputation& entry = m_.computations[static_cast<std::size_t>(m_.entry)];
    // The entry parameters live in HBM for the whole program, each once however many
    // instructions (or loop trips) read it; those in VMEM (S(1)) or host memory (S(5))
    // take none.
    trace_.parameter_bytes = 0;
    for (const auto& in : entry.instrs)
        if (in.op == HloOpcode::Parameter) trace_.parameter_bytes += hbm_bytes(in.shape);
    walk(m_.entry, {}, "");
    if (trace_.ops.empty()) {  // nothing but parameters and free ops: the result write
        const HloInstr& root = entry.instrs[static_cast<std::size_t>(entry.root)];
        TraceOp t;
        t.kind = OpKind::Copy;
        t.bytes = std::max<std::int64_t>(1, root.shape.bytes());
        t.id = std::string(root.name);
        t.line = line_of(root.offset);
        trace_.ops.push_back(std::move(t));
    }
    return std::move(trace_);
}

int Importer::line_of(std::uint32_t offset) const {
    const std::string& t = *m_.text;
    if (!newlines_found_) {
        for (std::size_t p = t.find('\n'); p != std::string::npos; p = t.find('\n', p + 1))
            newlines_.push_back(static_cast<std::uint32_t>(p));
        newlines_found_ = true;
    }
    // 1 + the newlines before the offset.
    const auto end = static_cast<std::uint32_t>(std::min<std::size_t>(offset, t.size()));
    return 1 + static_cast<int>(std::lower_bound(newlines_.begin(), newlines_.end(), end) -
                                newlines_.begin());
}

std::optional<HloModule> Importer::prepared(const HloModule& m, const HloImportOptions& o,
                                            HloImportStats& st) {
    std::optional<HloModule> d;
    if (is_foreign_fused(m)) {
        std::int64_t n = 0;
        d = defuse_hlo(m, &n);
        st.defused_fusions += n;
    }
    if (!d) d = hlo_spmd::partitioned(m, o, st);  // an optimised module is partitioned already
    if (o.call_inliner && has_calls(d ? *d : m)) {
        std::int64_t n = 0;
        std::optional<HloModule> inlined = inline_calls(d ? *d : m, &n, o.max_instructions);
        if (inlined) {
            d = std::move(inlined);
            st.inlined_calls += n;
        }
    }
    return d;
}

std::string Importer::unique_id(std::string_view name, const std::string& suffix) {
    std::string id = std::string(name) + suffix;
    if (ids_.insert(id).second) return id;
    // The next number to try for this id: a name inlined N times costs N tries, not N^2.
    std::int64_t& k = next_copy_[id];
    for (k = std::max<std::int64_t>(k, 2);; ++k) {
        std::string alt = fmt::format("{}/{}", id, k);
        if (ids_.insert(alt).second) return alt;
    }
}

bool Importer::noop_copy(const HloComputation& c, const HloInstr& in) const {
    return pass_ && is_noop_copy(c, in);
}

const Value& Importer::element(const Value& v, std::int32_t index) {
    if (index >= 0 && v.tuple && static_cast<std::size_t>(index) < v.elems.size())
        return v.elems[static_cast<std::size_t>(index)];
    return v;
}

Value Importer::walk(std::int32_t ci, const std::vector<Value>& args, const std::string& suffix) {
    const HloComputation& c = m_.computations[static_cast<std::size_t>(ci)];
    // One level of recursion per call, while body or branch: a bounded stack.
    if (depth_ >= kMaxHloCallDepth)
        m_.fail(c.offset, fmt::format("computations call each other more than {} levels deep",
                                      kMaxHloCallDepth));
    ++depth_;
    struct Leave {
        int& depth;
        std::uint32_t& floor;
        const std::vector<TraceOp>& ops;
        ~Leave() {
            --depth;
            floor = static_cast<std::uint32_t>(ops.size());
        }
    } leave{depth_, mof_floor_, trace_.ops};
    mof_floor_ = static_cast<std::uint32_t>(trace_.ops.size());
    std::vector<Value> vals(c.instrs.size());
    std::vector<std::vector<std::int32_t>> cluster;
    std::unordered_map<std::int32_t, std::vector<std::int32_t>> members;
    SiblingFusions siblings;
    const std::vector<std::int32_t>* order = nullptr;  // null: text order
    if (pass_) {
        cluster = fusion_clusters(c);
        for (std::size_t j = 0; j < cluster.size(); ++j)
            for (std::int32_t r : cluster[j]) members[r].push_back(static_cast<std::int32_t>(j));
        siblings.init(c);
        if (schedule_) {
            auto it = schedules_.find(ci);
            if (it == schedules_.end()) {
                std::vector<std::int32_t> groups = sibling_groups(c, cluster);
                MemorySchedule ms = memory_schedule(c, cluster, groups);
                if (!ms.siblings_merged) groups.clear();  // scheduled apart: joined as met
                it = schedules_.emplace(ci, Schedule{std::move(ms), std::move(groups)}).first;
                if (ci == m_.entry) {
                    stats_.entry_schedule = it->second.ms.algorithm;
                    stats_.entry_schedule_peak_bytes = it->second.ms.peak_bytes;
                    stats_.entry_text_peak_bytes = it->second.ms.text_peak_bytes;
                }
            }
            order = &it->second.ms.order;
            siblings.forced = it->second.groups;
        }
    }
    auto val = [&](const HloOperand& o) -> const Value& {
        return element(vals[static_cast<std::size_t>(o.instr)], o.tuple_index);
    };
    auto all_operands = [&](const HloInstr& in) {
        std::vector<const Value*> vs;
        for (const auto& o : in.operands) vs.push_back(&val(o));
        return merged(vs);
    };
    for (std::size_t k = 0; k < c.instrs.size(); ++k) {
        const auto i = order ? static_cast<std::size_t>((*order)[k]) : k;
        const HloInstr& in = c.instrs[i];
        if (++stats_.instructions > opts_.max_instructions)
            m_.fail(in.offset, fmt::format("the module expands to more than {} instructions (loop "
                                           "bodies count once per trip)",
                                           opts_.max_instructions));
        if (in.op == HloOpcode::Unknown)
            m_.fail(in.offset, fmt::format("unknown opcode {}", in.opcode));
        const bool fused = pass_ && !cluster[i].empty();
        if (fused && cluster[i][0] != static_cast<std::int32_t>(i)) continue;
        if (noop_copy(c, in)) {  // removed by XLA's simplifier: the value itself
            ++stats_.free_instructions;
            vals[i] = val(in.operands[0]);
            continue;
        }
        const OpClass cls = op_class(in.op);
        Value& out = vals[i];
        switch (cls) {
            case OpClass::Free:
                ++stats_.free_instructions;
                if (in.op == HloOpcode::Parameter) {
                    const std::size_t n =
                        std::strtoull(std::string(in.literal).c_str(), nullptr, 10);
                    if (n < args.size()) out = args[n];
                } else if (in.op == HloOpcode::Tuple) {
                    out.tuple = true;
                    for (const auto& o : in.operands) {
                        out.elems.push_back(val(o));
                        out.nodes += out.elems.back().nodes;
                        out.depth = std::max(out.depth, out.elems.back().depth + 1);
                        if (out.nodes > kMaxValueNodes || out.depth > kMaxValueDepth) {
                            out = all_operands(in);
                            break;
                        }
                    }
                } else if (in.op == HloOpcode::GetTupleElement) {
                    const HloAttr* a = in.attr("index");
                    const auto idx =
                        a ? int_list(a->value, m_, a->offset) : std::vector<std::int64_t>{};
                    if (idx.size() != 1 || in.operands.size() != 1)
                        m_.fail(in.offset, "get-tuple-element needs one operand and index=");
                    out = element(val(in.operands[0]), static_cast<std::int32_t>(idx[0]));
                } else {
                    out = all_operands(in);
                }
                break;
            case OpClass::PassThrough:
                out = in.operands.empty() ? Value{} : val(in.operands[0]);
                break;
            case OpClass::Control:
                out = control(c, in, vals, suffix);
                break;
            case OpClass::CustomCall:
                out = custom_call(c, in, all_operands(in), suffix);
                break;
            case OpClass::Generated:
                if (pass_) {  // made in registers by every fusion that uses it
                    ++stats_.free_instructions;
                    out = all_operands(in);
                    break;
                }
                [[fallthrough]];
            default: {
                std::vector<std::int32_t> one{static_cast<std::int32_t>(i)};
                const auto& mem = fused ? members[static_cast<std::int32_t>(i)] : one;
                auto ext = [&](const HloOperand& o) { return outside(c, o, vals); };
                // A fusion the pass made joins the multi-output kernel of earlier siblings
                // that read one of its operands (SiblingFusions::join).
                bool joined = false;
                std::unordered_set<std::int64_t>* shared =
                    fused ? siblings.join(
                                c, mem, static_cast<std::int32_t>(i),
                                [&](const HloOperand& o) { return !ext(o).on_chip; }, joined)
                          : nullptr;
                if (joined) ++stats_.multi_output_fusions;
                out = emit_cluster(c, mem, static_cast<std::int32_t>(i), suffix, ext, shared);
                if (shared) siblings.record(*shared, mem);
            }
        }
    }
    return std::move(vals[static_cast<std::size_t>(c.root)]);
}

Place Importer::outside(const HloComputation& c, const HloOperand& o,
                        const std::vector<Value>& vals) {
    Place p;
    const Value& v = element(vals[static_cast<std::size_t>(o.instr)], o.tuple_index);
    flatten(v, p.external);
    const HloInstr& x = viewed(c, o, pass_);
    p.vmem = !x.shape.tuple && x.shape.memory_space == 1;
    p.on_chip = on_chip_operand(c, o, pass_);
    return p;
}

Value Importer::control(const HloComputation& c, const HloInstr& in, std::vector<Value>& vals,
                        const std::string& suffix) {
    std::vector<Value> args;
    for (const auto& o : in.operands)
        args.push_back(element(vals[static_cast<std::size_t>(o.instr)], o.tuple_index));
    auto callee = [&](const char* attr) {
        const HloAttr* a = in.attr(attr);
        std::string_view v = a ? a->value : std::string_view{};
        if (!v.empty() && v.front() == '%') v.remove_prefix(1);
        const std::int32_t k = m_.find_computation(v);
        if (k < 0) m_.fail(in.offset, fmt::format("{} needs {}=<computation>", in.opcode, attr));
        return k;
    };
    if (in.op == HloOpcode::Fusion) {
        const std::int32_t k = callee("calls");
        const HloComputation& f = m_.computations[static_cast<std::size_t>(k)];
        std::vector<std::int32_t> all(f.instrs.size());
        for (std::size_t j = 0; j < all.size(); ++j) all[j] = static_cast<std::int32_t>(j);
        return emit_cluster(f, all, f.root, suffix, [&](const HloOperand& o) {
            return fused_parameter(f, o, c, in, vals);
        });
    }
    if (in.op == HloOpcode::While) {
        const auto trips = while_trip_count(m_, c, in);
        std::int64_t n = trips ? *trips : opts_.while_trips;
        if (!trips && n <= 0)
            m_.fail(in.offset, fmt::format("cannot find the trip count of while {} (no "
                                           "known_trip_count in its backend_config and its "
                                           "condition is not a counter compared with a "
                                           "constant): give --while-trips N",
                                           in.name));
        if (n > kMaxHloTrips)
            m_.fail(in.offset, fmt::format("while {} runs more than 2^40 trips", in.name));
        const std::int32_t body = callee("body");
        Value state = args.empty() ? Value{} : args[0];
        stats_.while_trips += n;
        if (n >= 2 && !in_loop_ && !opts_.unroll_loops) {
            if (auto v = repeat(in, body, state, n, suffix)) return std::move(*v);
        }
        for (std::int64_t t = 0; t < n; ++t)
            state = walk(body, {state}, t == 0 ? suffix : fmt::format("{}@{}", suffix, t));
        return state;
    }
    if (in.op == HloOpcode::Conditional) {
        std::int32_t branch = -1;
        std::size_t pick = 0;
        const auto& callees = in.callees;
        if (callees.empty()) m_.fail(in.offset, "conditional needs branch computations");
        // A constant predicate or index decides; otherwise the largest branch (an upper
        // bound on its time).
        const HloInstr& p = c.instrs[static_cast<std::size_t>(in.operands.at(0).instr)];
        if (p.op == HloOpcode::Constant && p.shape.dims.empty()) {
            const bool is_pred = p.shape.type.name == "pred";
            pick = is_pred ? (p.literal == "true" ? 0 : 1)
                           : static_cast<std::size_t>(constant_int(p).value_or(0));
            if (pick >= callees.size()) pick = callees.size() - 1;
        } else {
            for (std::size_t b = 0; b < callees.size(); ++b)
                if (m_.computations[callees[b]].instrs.size() >
                    m_.computations[callees[pick]].instrs.size())
                    pick = b;
        }
        branch = callees[pick];
        std::vector<Value> bargs;
        if (pick + 1 < args.size()) bargs.push_back(args[pick + 1]);
        return walk(branch, bargs, suffix);
    }
    // call, async-start: the callee inline
    if (in.callees.empty()) m_.fail(in.offset, fmt::format("{} calls no computation", in.opcode));
    Value v = walk(in.callees.front(), args, suffix);
    if (in.op == HloOpcode::AsyncStart) return merged({&v});
    return v;
}

Place Importer::fused_parameter(const HloComputation& f, const HloOperand& o,
                                const HloComputation& c, const HloInstr& fusion,
                                const std::vector<Value>& vals) {
    const HloInstr& p = f.instrs[static_cast<std::size_t>(o.instr)];
    const std::size_t n = std::strtoull(std::string(p.literal).c_str(), nullptr, 10);
    if (p.op != HloOpcode::Parameter || n >= fusion.operands.size()) return Place{};
    Place pl = outside(c, fusion.operands[n], vals);
    if (!p.shape.tuple && p.shape.memory_space == 1) pl.on_chip = pl.vmem = true;
    return pl;
}

Value Importer::custom_call(const HloComputation& c, const HloInstr& in, Value operands,
                            const std::string& suffix) {
    const HloAttr* a = in.attr("custom_call_target");
    std::string_view target = a ? a->value : std::string_view{};
    if (target.size() >= 2 && target.front() == '"') target = target.substr(1, target.size() - 2);
    if (free_custom_call(target)) {
        ++stats_.free_instructions;
        return operands;
    }
    ++stats_.unmodelled_custom_calls;
    if (warned_.insert(in.offset).second)  // once per instruction, not per loop trip
        stats_.warnings.push_back(
            fmt::format("{}: warning: custom-call {} with target \"{}\" is not modelled (costed as "
                        "free)",
                        m_.location(in.offset), in.name, target));
    (void)c;
    (void)suffix;
    return operands;
}

std::optional<std::uint32_t> Importer::producer_to_join(const HloComputation& c, const HloInstr& in,
                                                        const std::vector<Place>& ps) const {
    if (!pass_ || !opts_.producer_fusion || ps[0].on_chip || !ps[0].internal.empty())
        return std::nullopt;
    const std::int64_t held = value_holder(ps[0], trace_.ops);
    if (held < 0) return std::nullopt;
    const auto e = static_cast<std::uint32_t>(held);
    if (e < mof_floor_ || claimed_.count(e)) return std::nullopt;
    const TraceOp& p = trace_.ops[e];
    std::int64_t elems = 0;
    if (p.kind == OpKind::Matmul) {
        elems = p.matmul.batch * p.matmul.m * p.matmul.n;
    } else if (p.kind == OpKind::Conv2d) {
        elems = p.conv.batch * p.conv.out_h() * p.conv.out_w() * p.conv.c_out;
    } else if (p.kind == OpKind::Vector && !p.result_in_vmem &&
               !vector_op_info(p.vector.op).reduces) {
        elems = p.vector.elements();
    }
    const HloInstr* x = &c.instrs[static_cast<std::size_t>(in.operands[0].instr)];
    if (elems <= 0 || x->shape.tuple || x->shape.elements_count() != elems) return std::nullopt;
    for (std::size_t k = 1; k < ps.size(); ++k)
        for (std::uint32_t d : ps[k].external)
            if (!ps[k].on_chip && ps[k].internal.empty() && d >= e) return std::nullopt;
    return e;
}

}  // namespace tpusim::hlo_detail
