// The SPMD partitioning pass (docs/hlo.md, "SPMD and collectives"): a module written before
// XLA's SpmdPartitioner (global shapes, `sharding={...}` annotations, num_partitions=N) becomes
// the per-device program that the partitioner would write: per-device shapes, and the
// collectives that move data where a value's sharding differs from what its user needs. The
// rules follow xla/service/spmd/spmd_partitioner.cc (resharding: all-gather, dynamic-slice,
// all-to-all), dot_handler.cc / convolution_handler.cc (partial sums -> all-reduce) and
// xla/service/sharding_propagation.cc (shardings flow forward from operands; broadcasts and
// iotas are made in the sharding each user wants), for values tiled along one dimension.
// Anything else is replicated with a located warning. Like the other HLO -> HLO steps, the
// result is printed as HLO text and parsed again (hlo_print.h).
#include "hlo_spmd_partitioner.h"

namespace tpusim {

namespace hlo_spmd {

std::string Partitioner::run() {
    const Result r = partition(m_.entry, {}, nullptr);
    std::string out = header();
    for (std::size_t ci = 0; ci < m_.computations.size(); ++ci) {
        const HloComputation& c = m_.computations[ci];
        if (hlo_print::in_place(c) || partitioned_.count(static_cast<std::int32_t>(ci))) continue;
        hlo_print::put_computation(out, c.name, false, hlo_print::plain_lines(c));
    }
    for (const auto& [type, name] : adders_) {
        std::vector<Line> lines(3);
        lines[0] = {"x",   fmt::format("= {}[] parameter(0)", type),
                    false, true,
                    0,     fmt::format("{}[]", type)};
        lines[1] = {"y",   fmt::format("= {}[] parameter(1)", type),
                    false, true,
                    1,     fmt::format("{}[]", type)};
        lines[2] = {"sum", fmt::format("= {}[] {}(%x, %y)", type, type == "pred" ? "or" : "add"),
                    true,  false,
                    0,     fmt::format("{}[]", type)};
        hlo_print::put_computation(out, name, false, lines);
    }
    out += callees_;
    out += r.text;
    return out;
}

std::string Partitioner::header() const {
    std::string out = fmt::format("HloModule {}", m_.name.empty() ? "module" : m_.name);
    bool marked = false;
    for (const auto& a : m_.attrs) {
        if (a.name == "entry_computation_layout") {
            out += ", entry_computation_layout=" + entry_layout_;
        } else if (a.name == "frontend_attributes") {
            std::string v(a.value);
            const std::size_t close = v.rfind('}');
            const bool empty = v.find_first_not_of("{} ") == std::string::npos;
            v.insert(close == std::string::npos ? v.size() : close,
                     std::string(empty ? "" : ",") + kMark);
            out += ", frontend_attributes=" + v;
            marked = true;
        } else {
            out += fmt::format(", {}={}", a.name, a.value);
        }
    }
    if (!marked) out += fmt::format(", frontend_attributes={{{}}}", kMark);
    return out + "\n\n";
}

std::string Partitioner::emit(Ctx& x, const std::string& base, const std::string& shape,
                              const std::string& rest) {
    Line l;
    l.name = hlo_print::fresh(x.used, base);
    l.shape = shape;
    l.body = fmt::format("= {} {}", shape, rest);
    x.lines.push_back(std::move(l));
    return "%" + x.lines.back().name;
}

// The line of `in` with its operands, shape and the attributes in `repl` replaced.
std::string Partitioner::emit_instr(Ctx& x, std::int32_t i, const std::vector<std::string>& ops,
                                    const std::string& shape,
                                    const std::map<std::string, std::string>& repl) {
    const HloInstr& in = x.c->instrs[static_cast<std::size_t>(i)];
    std::string name(in.name);
    if (x.named[static_cast<std::size_t>(i)]) {
        name = hlo_print::fresh(x.used, name + ".spmd");
    }
    x.named[static_cast<std::size_t>(i)] = true;
    HloInstr copy = in;
    copy.attrs.clear();
    Line l = hlo_print::make_line(copy, name, ops, shape);
    for (const auto& a : in.attrs) {
        auto it = repl.find(std::string(a.name));
        l.body += fmt::format(", {}={}", a.name, it != repl.end() ? it->second : a.value);
    }
    x.lines.push_back(std::move(l));
    return "%" + name;
}

void Partitioner::warn(std::uint32_t at, const std::string& what) {
    std::string w = fmt::format("{}: warning: spmd-partitioner: {}", m_.location(at), what);
    if (!warned_.insert(w).second) return;  // once per instruction and reason
    ++st_.spmd_fallbacks;
    st_.warnings.push_back(std::move(w));
}

std::string Partitioner::signature(const std::vector<Val>& args, const Val* root) {
    std::string s;
    std::function<void(const Val&)> put = [&](const Val& v) {
        if (v.tuple) {
            s += '(';
            for (const auto& e : v.elems) put(e);
            s += ')';
        } else {
            s += v.spec.key() + ';';
        }
    };
    for (const auto& a : args) put(a);
    s += "->";
    if (root) put(*root);
    return s;
}

// Computation ci partitioned with its parameters laid out as `args` (the entry: as
// annotated) and, where `root` is given, its result resharded to that layout.
Partitioner::Result Partitioner::partition(std::int32_t ci, const std::vector<Val>& args,
                                           const Val* root) {
    const std::string sig = signature(args, root);
    auto found = done_.find({ci, sig});
    if (found != done_.end()) return found->second;
    const HloComputation& c = m_.computations[static_cast<std::size_t>(ci)];
    if (++depth_ > kMaxHloCallDepth)
        m_.fail(c.offset, fmt::format("computations call each other more than {} levels deep",
                                      kMaxHloCallDepth));
    const bool entry = ci == m_.entry;
    Result res;
    res.name = std::string(c.name);
    if (partitioned_.count(ci)) {
        res.name = fmt::format("{}.spmd", c.name);
        for (int k = 1; comp_names_.count(res.name); ++k)
            res.name = fmt::format("{}.spmd{}", c.name, k);
    }
    partitioned_.insert(ci);
    comp_names_.insert(res.name);
    Ctx x;
    x.c = &c;
    x.vals.resize(c.instrs.size());
    x.named.assign(c.instrs.size(), false);
    for (const auto& in : c.instrs) x.used.insert(std::string(in.name));
    for (std::size_t i = 0; i < c.instrs.size(); ++i) {
        // An instruction without the operands or attribute entries its opcode needs
        // (malformed HLO): one located error, not a crash.
        try {
            x.vals[i] = instr(x, static_cast<std::int32_t>(i), args, entry);
        } catch (const std::out_of_range&) {
            m_.fail(c.instrs[i].offset,
                    fmt::format("{} {}: its operands or dimension attributes do not fit its "
                                "shapes (SPMD partitioning)",
                                c.instrs[i].opcode, c.instrs[i].name));
        }
    }
    Val r = x.vals[static_cast<std::size_t>(c.root)];
    if (r.deferred >= 0) r = make(x, r.deferred, root ? root->spec : Spec{});
    if (root) r = conform(x, r, *root);
    // The root: the line that makes it (a parameter or an element read: a copy).
    bool marked = false;
    const std::string rname = r.ref.substr(1);
    for (auto& l : x.lines) {
        l.root = false;
        if (l.name == rname) {
            l.root = true;
            marked = true;
        }
    }
    if (!marked || rname.find('#') != std::string::npos) {
        for (auto& l : x.lines) l.root = false;
        const std::string cp = r.tuple ? "tuple" : "copy";
        std::string body;
        if (r.tuple) {
            std::vector<std::string> refs;
            for (std::size_t k = 0; k < r.elems.size(); ++k) refs.push_back(element(x, r, k).ref);
            body = fmt::format("tuple({})", fmt::join(refs, ", "));
        } else {
            body = fmt::format("copy({})", r.ref);
        }
        r.ref = emit(x, cp, val_shape(r), body);
        x.lines.back().root = true;
        if (r.tuple)
            for (auto& e : r.elems) e.ref.clear();
    }
    // Unused deferred broadcasts were never written; nothing else is dropped.
    if (entry) {
        std::vector<const Line*> params;
        for (const auto& l : x.lines)
            if (l.parameter) params.push_back(&l);
        std::stable_sort(params.begin(), params.end(), [](const Line* a, const Line* b) {
            return a->parameter_number < b->parameter_number;
        });
        std::vector<std::string> ps;
        for (const Line* p : params) ps.push_back(p->shape);
        entry_layout_ = fmt::format("{{({})->{}}}", fmt::join(ps, ", "), val_shape(r));
    }
    hlo_print::put_computation(res.text, res.name, entry, x.lines);
    if (!entry) callees_ += res.text;
    res.root = r;
    --depth_;
    done_[{ci, sig}] = res;
    return res;
}

// Element refs of a tuple value read afresh (after the instruction that made it).
Val Partitioner::fresh_elements(Val v, const std::string& ref) {
    v.ref = ref;
    for (auto& e : v.elems) e.ref.clear();
    return v;
}

Val Partitioner::instr(Ctx& x, std::int32_t i, const std::vector<Val>& args, bool entry) {
    const HloInstr& in = x.c->instrs[static_cast<std::size_t>(i)];
    const std::optional<Sharding> sh = sharding_of(in);
    Val out;
    out.shape = &in.shape;
    // A shard_map region: shapes as written, no resharding.
    bool manual = false;
    for (const auto& o : in.operands) manual = manual || operand(x, o).spec.manual;
    if (in.op == HloOpcode::CustomCall) {
        const HloAttr* t = in.attr("custom_call_target");
        const std::string_view target = t ? unquote(t->value) : std::string_view{};
        if (target == "SPMDFullToShardShape") {
            const Val o = use(x, in, 0, nullptr);
            out = annotated_val(in, in.shape, nullptr, "");
            out.spec = manual_spec();
            out.ref = emit_instr(x, i, {o.ref}, hlo_print::shape_text(in.shape));
            return out;
        }
        if (target == "SPMDShardToFullShape") {
            const Val o = use(x, in, 0, nullptr);
            out = annotated_val(in, in.shape, sh ? &*sh : nullptr, "");
            out.ref = emit_instr(x, i, {o.ref}, val_shape(out));
            return out;
        }
        if (target == "Sharding" && !manual && !in.shape.tuple && in.operands.size() == 1) {
            out = annotated_val(in, in.shape, sh ? &*sh : nullptr, "");
            const Val o = use(x, in, 0, &out.spec);
            out.spec = o.spec;
            out.ref = emit_instr(x, i, {o.ref}, val_shape(out));
            return out;
        }
    }
    if (manual) {
        std::vector<std::string> ops;
        for (std::size_t k = 0; k < in.operands.size(); ++k)
            ops.push_back(use(x, in, k, nullptr).ref);
        out = annotated_val(in, in.shape, nullptr, "");
        out.spec = manual_spec();
        for (auto& e : out.elems) e.spec = manual_spec();
        out.ref = emit_instr(x, i, ops, hlo_print::shape_text(in.shape));
        return out;
    }
    std::optional<Spec> ann;
    if (sh && !in.shape.tuple) ann = annotation(in, in.shape, *sh);
    if (ann && ann->manual) ann.reset();
    const std::size_t rank = in.shape.dims.size();
    auto done = [&](Val v) {
        if (ann && !v.tuple) v = reshard(x, v, *ann);
        return v;
    };
    auto plain = [&](const std::vector<std::string>& ops, const Spec& s,
                     const std::map<std::string, std::string>& repl = {}) {
        Val v;
        v.shape = &in.shape;
        v.spec = s;
        v.ref = emit_instr(x, i, ops, local_text(in.shape, s), repl);
        return v;
    };
    switch (in.op) {
        case HloOpcode::Parameter: {
            const std::size_t n = std::strtoull(std::string(in.literal).c_str(), nullptr, 10);
            if (entry) {
                out = annotated_val(in, in.shape, sh ? &*sh : nullptr, "");
            } else if (n < args.size()) {
                out = args[n];
                out.shape = &in.shape;
            }
            Line l = hlo_print::make_line(in, std::string(in.name), {}, val_shape(out));
            x.named[static_cast<std::size_t>(i)] = true;
            x.lines.push_back(l);
            return fresh_elements(out, "%" + std::string(in.name));
        }
        case HloOpcode::Tuple: {
            std::vector<std::string> ops;
            out.tuple = true;
            for (std::size_t k = 0; k < in.operands.size(); ++k) {
                const Spec* want = nullptr;
                Spec w;
                if (sh && sh->kind == Sharding::Kind::Tuple && k < sh->elements.size() &&
                    k < in.shape.elements.size()) {
                    if (auto a = annotation(in, in.shape.elements[k], sh->elements[k])) {
                        w = *a;
                        want = w.manual ? nullptr : &w;
                    }
                }
                Val e = use(x, in, k, want);
                if (k < in.shape.elements.size()) e.shape = &in.shape.elements[k];
                ops.push_back(e.ref);
                out.elems.push_back(e);
            }
            const std::string ref = emit_instr(x, i, ops, val_shape(out));
            return fresh_elements(out, ref);
        }
        case HloOpcode::GetTupleElement: {
            const HloAttr* a = in.attr("index");
            const std::size_t k = a ? std::strtoull(std::string(a->value).c_str(), nullptr, 10) : 0;
            const Val t = use(x, in, 0, nullptr);
            Val e = t.tuple && k < t.elems.size() ? t.elems[k] : t;
            e.shape = &in.shape;
            e.ref = emit_instr(x, i, {t.ref}, val_shape(e));
            if (e.tuple) e = fresh_elements(e, e.ref);
            return done(e);
        }
        case HloOpcode::Broadcast:
        case HloOpcode::Iota: {
            if (in.op == HloOpcode::Broadcast) {
                const Val o = operand(x, in.operands.at(0));
                if (o.spec.dim() >= 0 && o.deferred < 0) {
                    const HloAttr* a = in.attr("dimensions");
                    const auto dims = a ? hlo_detail::int_list(a->value, m_, a->offset)
                                        : std::vector<std::int64_t>{};
                    const auto od = static_cast<std::size_t>(o.spec.dim());
                    if (od < dims.size())
                        return done(
                            plain({o.ref}, moved(o.spec, rank, static_cast<int>(dims[od]))));
                    return done(plain({reshard(x, o, Spec{}).ref}, Spec{}));
                }
            }
            if (ann) return make(x, i, *ann);
            out.deferred = i;
            return out;
        }
        default:
            break;
    }
    if (is_elementwise(in.op) && !in.shape.tuple) {
        // Operands of the result's rank agree on one layout: the annotation, else the first
        // tiled operand's; scalars stay as they are.
        Spec target;
        if (ann) {
            target = *ann;
        } else {
            for (const auto& o : in.operands) {
                const Val v = operand(x, o);
                if (v.deferred < 0 && !v.tuple && v.shape->dims.size() == rank &&
                    v.spec.dim() >= 0) {
                    target = v.spec;
                    break;
                }
            }
        }
        std::vector<std::string> ops;
        for (std::size_t k = 0; k < in.operands.size(); ++k) {
            const Val v = operand(x, in.operands[k]);
            const bool same_rank = !v.tuple && v.shape->dims.size() == rank && rank > 0;
            ops.push_back(use(x, in, k, same_rank ? &target : nullptr).ref);
        }
        return done(plain(ops, target));
    }
    switch (in.op) {
        case HloOpcode::Transpose: {
            const Val o = use(x, in, 0, nullptr);
            const HloAttr* a = in.attr("dimensions");
            const auto perm =
                a ? hlo_detail::int_list(a->value, m_, a->offset) : std::vector<std::int64_t>{};
            Spec s;
            for (std::size_t k = 0; k < perm.size(); ++k)
                if (o.spec.dim() >= 0 && perm[k] == o.spec.dim())
                    s = moved(o.spec, rank, static_cast<int>(k));
            return done(plain({s.replicated() ? reshard(x, o, Spec{}).ref : o.ref}, s));
        }
        case HloOpcode::Reshape:
        case HloOpcode::Bitcast: {
            Val o = use(x, in, 0, nullptr);
            const Spec s = reshaped(o, in.shape);
            if (s.replicated() && !o.spec.replicated()) o = reshard(x, o, Spec{});
            return done(plain({o.ref}, s));
        }
        case HloOpcode::Dot:
            return done(dot(x, i, ann));
        case HloOpcode::Convolution:
            return done(convolution(x, i, ann));
        case HloOpcode::Reduce:
            if (in.operands.size() == 2 && !in.shape.tuple) return done(reduce(x, i, ann));
            break;
        case HloOpcode::While:
            return done(loop(x, i));
        case HloOpcode::Call:
        case HloOpcode::Conditional:
            return done(call(x, i));
        case HloOpcode::Constant:
            return done(plain({}, Spec{}));
        default:
            break;
    }
    if (auto v = along_free_dim(x, i)) return done(*v);
    return done(replicated_op(x, i));
}

std::optional<HloModule> partitioned(const HloModule& m, const HloImportOptions& opts,
                                     HloImportStats& stats) {
    if (!opts.spmd_partitioner || spmd_state(m) != SpmdState::Global) return std::nullopt;
    return spmd_partition(m, &stats);
}

}  // namespace hlo_spmd

SpmdState spmd_state(const HloModule& m) {
    if (hlo_spmd::partitions(m) <= 1) return SpmdState::NotSharded;
    if (const HloAttr* f = m.attr("frontend_attributes"))
        if (f->value.find("tpusim_spmd_partitioned") != std::string_view::npos)
            return SpmdState::Partitioned;
    if (!hlo_spmd::has_tiled_sharding(m)) return SpmdState::NotSharded;
    // A compiler's output (scheduled, fused, or with the TPU's tiled layouts) comes after the
    // partitioner in XLA's pipeline.
    if (const HloAttr* s = m.attr("is_scheduled"))
        if (s->value == "true") return SpmdState::Partitioned;
    bool collectives = false, manual_regions = false;
    for (const auto& c : m.computations) {
        for (const auto& in : c.instrs) {
            if (in.op == HloOpcode::Fusion || hlo_print::any_tiled(in.shape))
                return SpmdState::Partitioned;
            const auto cls = hlo_detail::op_class(in.op);
            if (cls == hlo_detail::OpClass::Collective || in.op == HloOpcode::PartitionId ||
                in.op == HloOpcode::ReplicaId)
                collectives = true;
            if (in.op == HloOpcode::CustomCall)
                if (const HloAttr* t = in.attr("custom_call_target"))
                    if (hlo_spmd::unquote(t->value) == "SPMDFullToShardShape")
                        manual_regions = true;
        }
    }
    return collectives && !manual_regions ? SpmdState::Partitioned : SpmdState::Global;
}

HloModule spmd_partition(const HloModule& m, HloImportStats* stats) {
    HloImportStats local;
    HloImportStats& st = stats ? *stats : local;
    const std::int64_t parts = hlo_spmd::partitions(m);
    std::string text = hlo_spmd::Partitioner(m, parts, st).run();
    st.spmd_partitioned = true;
    return parse_hlo(std::move(text), m.path);
}

}  // namespace tpusim
