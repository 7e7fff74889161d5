// The SPMD partitioner (hlo_spmd_partitioner.h): shardings as annotated, and the collectives
// that move a value from one layout to another (all-gather, dynamic-slice, all-to-all,
// all-reduce of partial sums), as xla/service/spmd/spmd_partitioner.cc reshards.
#include "hlo_spmd_partitioner.h"

namespace tpusim::hlo_spmd {

std::string Partitioner::adder(std::string_view type) {
    auto it = adders_.find(std::string(type));
    if (it != adders_.end()) return "%" + it->second;
    std::string name = fmt::format("spmd_add.{}", type);
    for (int k = 1; comp_names_.count(name); ++k) name = fmt::format("spmd_add.{}.{}", type, k);
    comp_names_.insert(name);
    adders_[std::string(type)] = name;
    return "%" + name;
}

std::string Partitioner::partition_id(Ctx& x) {
    auto& pid = x.cache["pid"];
    if (pid.empty()) pid = emit(x, "partition-id", "u32[]", "partition-id()");
    return pid;
}

// This device's start along dimension d of `s`: a table of every partition's offset read
// at partition-id, as XLA's partitioner writes it.
std::string Partitioner::offset(Ctx& x, const Spec& s, int d, std::int64_t chunk) {
    if (static_cast<std::size_t>(d) >= s.tile.size() || s.tile[static_cast<std::size_t>(d)] == 1) {
        auto& z = x.cache["zero"];
        if (z.empty()) z = emit(x, "constant", "s32[]", "constant(0)");
        return z;
    }
    auto& o = x.cache[fmt::format("off {} {} {}", s.key(), d, chunk)];
    if (!o.empty()) return o;
    std::vector<std::int64_t> dims = s.tile;
    dims.push_back(s.rep);
    std::int64_t stride = 1;
    for (std::size_t i = dims.size(); i-- > static_cast<std::size_t>(d) + 1;) stride *= dims[i];
    std::vector<std::int64_t> table(static_cast<std::size_t>(parts_), 0);
    for (std::size_t f = 0; f < s.devs.size(); ++f)
        table[static_cast<std::size_t>(s.devs[f])] =
            (static_cast<std::int64_t>(f) / stride) % dims[static_cast<std::size_t>(d)] * chunk;
    const std::string pid = partition_id(x);
    const std::string t = emit(x, "offsets", fmt::format("s32[{}]{{0}}", parts_),
                               fmt::format("constant({{{}}})", fmt::join(table, ", ")));
    const std::string one =
        emit(x, "offset", "s32[1]{0}",
             fmt::format("dynamic-slice({}, {}), dynamic_slice_sizes={{1}}", t, pid));
    o = emit(x, "offset", "s32[]", fmt::format("reshape({})", one));
    return o;
}

// Replicated -> tiled: each device keeps its piece (no communication).
Val Partitioner::slice_local(Ctx& x, const Val& v, const Spec& to) {
    const HloShape& g = *v.shape;
    const auto ld = local_dims(g, to);
    std::vector<std::string> ops{v.ref};
    for (std::size_t d = 0; d < ld.size(); ++d)
        ops.push_back(offset(x, to, static_cast<int>(d), ld[d]));
    Val r = v;
    r.spec = to;
    r.ref = emit(x, "dynamic-slice", local_text(g, to),
                 fmt::format("dynamic-slice({}), dynamic_slice_sizes={{{}}}", fmt::join(ops, ", "),
                             fmt::join(ld, ",")));
    return r;
}

// Tiled -> replicated: an all-gather along each tiled dimension.
Val Partitioner::gather(Ctx& x, const Val& v) {
    const HloShape& g = *v.shape;
    std::vector<std::int64_t> cur = local_dims(g, v.spec);
    Val r = v;
    for (std::size_t d = 0; d < cur.size(); ++d) {
        if (v.spec.tile.empty() || v.spec.tile[d] == 1) continue;
        const auto groups = groups_along(v.spec, static_cast<int>(d));
        cur[d] *= v.spec.tile[d];
        ++st_.spmd_collectives_inserted;
        r.ref = emit(x, "all-gather", shape_with_dims(g, cur),
                     fmt::format("all-gather({}), {}, replica_groups={}, dimensions={{{}}}, "
                                 "use_global_device_ids=true",
                                 r.ref, channel(), groups_text(groups), d));
        if (cur[d] != g.dims[d]) {  // uneven tiles: the padding cut off
            std::string sl;
            for (std::size_t k = 0; k < cur.size(); ++k)
                sl += fmt::format("{}[0:{}]", k > 0 ? ", " : "", k == d ? g.dims[d] : cur[k]);
            cur[d] = g.dims[d];
            r.ref = emit(x, "slice", shape_with_dims(g, cur),
                         fmt::format("slice({}), slice={{{}}}", r.ref, sl));
        }
    }
    r.spec = Spec{};
    return r;
}

Val Partitioner::reshard(Ctx& x, const Val& v, const Spec& to) {
    if (v.deferred >= 0) return make(x, v.deferred, to);
    if (v.tuple || v.spec.manual || to.manual || v.spec == to || v.shape->dims.empty()) return v;
    // One copy of each resharded value per computation (XLA's CSE keeps one).
    const std::string key = fmt::format("{} {} -> {}", v.ref, v.spec.key(), to.key());
    auto it = x.resharded.find(key);
    if (it != x.resharded.end()) return it->second;
    Val r = reshard_new(x, v, to);
    x.resharded.emplace(key, r);
    return r;
}

Val Partitioner::reshard_new(Ctx& x, const Val& v, const Spec& to) {
    const HloShape& g = *v.shape;
    const int fd = v.spec.dim(), td = to.dim();
    if (fd >= 0 && td >= 0 && fd != td && v.spec.same_layout(to) &&
        g.dims[static_cast<std::size_t>(fd)] % v.spec.n() == 0 &&
        g.dims[static_cast<std::size_t>(td)] % to.n() == 0) {
        // Tiled along another dimension: one all-to-all (XLA writes it between a reshape
        // and a transpose; the bytes are the same).
        ++st_.spmd_collectives_inserted;
        const std::string a =
            emit(x, "all-to-all", local_text(g, v.spec),
                 fmt::format("all-to-all({}), {}, replica_groups={}, dimensions={{{}}}", v.ref,
                             channel(), groups_text(groups_along(v.spec, fd)), td));
        Val r = v;
        r.spec = to;
        r.ref = emit(x, "reshape", local_text(g, to), fmt::format("reshape({})", a));
        return r;
    }
    Val r = v.spec.replicated() ? v : gather(x, v);
    if (!to.replicated()) r = slice_local(x, r, to);
    return r;
}

// Partial sums over the devices that hold the other tiles of `over` along d: an
// all-reduce, or, where the result is wanted tiled over those same devices in the same
// order (`want`), a reduce-scatter that leaves each its piece (XLA's ReduceScatterCreator
// makes one of the all-reduce and the slice).
Val Partitioner::all_reduce(Ctx& x, Val v, const Spec& over, int d, const std::string& to_apply,
                            const std::optional<Spec>& want) {
    ++st_.spmd_collectives_inserted;
    const auto groups = groups_along(over, d);
    const int e = want ? want->dim() : -1;
    if (e >= 0 && !v.tuple && v.shape->dims[static_cast<std::size_t>(e)] % want->n() == 0 &&
        groups_along(*want, e) == groups) {
        v.spec = *want;
        v.ref = emit(x, "reduce-scatter", val_shape(v),
                     fmt::format("reduce-scatter({}), {}, replica_groups={}, "
                                 "use_global_device_ids=true, dimensions={{{}}}, to_apply={}",
                                 v.ref, channel(), groups_text(groups), e, to_apply));
        return v;
    }
    v.ref = emit(x, "all-reduce", val_shape(v),
                 fmt::format("all-reduce({}), {}, replica_groups={}, "
                             "use_global_device_ids=true, to_apply={}",
                             v.ref, channel(), groups_text(groups), to_apply));
    return v;
}

Val Partitioner::element(Ctx& x, const Val& t, std::size_t k) {
    if (!t.tuple || k >= t.elems.size()) return t;
    Val e = t.elems[k];
    if (e.ref.empty()) {
        if (t.ref.find('#') == std::string::npos) {
            e.ref = fmt::format("{}#{}", t.ref, k);
        } else {
            e.ref = emit(x, "get-tuple-element", val_shape(e),
                         fmt::format("get-tuple-element({}), index={}", t.ref, k));
        }
    }
    return e;
}

Val Partitioner::operand(Ctx& x, const HloOperand& o) {
    const Val& v = x.vals[static_cast<std::size_t>(o.instr)];
    return o.tuple_index >= 0 ? element(x, v, static_cast<std::size_t>(o.tuple_index)) : v;
}

// Operand k read in layout `to` (a deferred broadcast made so; else resharded).
Val Partitioner::use(Ctx& x, const HloInstr& in, std::size_t k, const Spec* to) {
    Val v = operand(x, in.operands[k]);
    if (v.deferred >= 0) return make(x, v.deferred, to ? *to : Spec{});
    return to ? reshard(x, v, *to) : v;
}

// The sharding written on `in` as a spec for its shape; none when it has none or one the
// pass does not read (with a warning).
std::optional<Spec> Partitioner::annotation(const HloInstr& in, const HloShape& s,
                                            const Sharding& sh) {
    switch (sh.kind) {
        case Sharding::Kind::Replicated:
        case Sharding::Kind::Maximal:  // one device's value: costed as replicated
            return Spec{};
        case Sharding::Kind::Manual:
            return manual_spec();
        case Sharding::Kind::Tiled: {
            if (s.tuple) break;
            if (sh.tile.size() != s.dims.size())
                m_.fail(in.offset, fmt::format("{}'s sharding has {} tile dimensions but its "
                                               "shape {} has {}",
                                               in.name, sh.tile.size(), hlo_print::shape_text(s),
                                               s.dims.size()));
            Spec sp = normalized(Spec{sh.tile, sh.replicate, sh.devices, false});
            if (sp.dim() == -2) {
                warn(in.offset, fmt::format("{} is tiled along several dimensions ({}): the "
                                            "pass tiles one; the value is replicated",
                                            in.name, fmt::join(sh.tile, "x")));
                return Spec{};
            }
            return sp;
        }
        case Sharding::Kind::Other:
            warn(in.offset, fmt::format("{} has {}, which the pass does not read: its value "
                                        "follows its operands",
                                        in.name, sh.other));
            return std::nullopt;
        case Sharding::Kind::Tuple:
            break;
    }
    return std::nullopt;
}

std::optional<Sharding> Partitioner::sharding_of(const HloInstr& in) {
    const HloAttr* a = in.attr("sharding");
    if (!a) return std::nullopt;
    return parse_sharding(a->value, m_, a->offset, parts_);
}

// A value of shape s laid out as `sh` (tuples element by element; none: replicated).
Val Partitioner::annotated_val(const HloInstr& in, const HloShape& s, const Sharding* sh,
                               const std::string& ref) {
    Val v;
    v.ref = ref;
    v.shape = &s;
    if (s.tuple) {
        v.tuple = true;
        for (std::size_t k = 0; k < s.elements.size(); ++k) {
            const Sharding* e = nullptr;
            if (sh && sh->kind == Sharding::Kind::Tuple && k < sh->elements.size())
                e = &sh->elements[k];
            else if (sh && sh->kind != Sharding::Kind::Tuple)
                e = sh;  // one sharding for every element
            v.elems.push_back(annotated_val(in, s.elements[k], e, ""));
        }
        return v;
    }
    if (sh) {
        if (auto sp = annotation(in, s, *sh)) v.spec = *sp;
    }
    return v;
}

// Val v resharded as `want` element by element (tuples), its refs made.
Val Partitioner::conform(Ctx& x, const Val& v, const Val& want) {
    if (!v.tuple || !want.tuple) return reshard(x, v, want.spec);
    bool same = true;
    std::vector<Val> es;
    for (std::size_t k = 0; k < v.elems.size() && k < want.elems.size(); ++k) {
        Val e = element(x, v, k);
        Val r = conform(x, e, want.elems[k]);
        same = same && r.ref == e.ref;
        es.push_back(std::move(r));
    }
    if (same) return v;
    Val t = v;
    t.elems = es;
    std::vector<std::string> refs;
    for (const auto& e : es) refs.push_back(e.ref);
    t.ref = emit(x, "tuple", val_shape(t), fmt::format("tuple({})", fmt::join(refs, ", ")));
    for (std::size_t k = 0; k < t.elems.size(); ++k) t.elems[k].ref.clear();
    return t;
}

// A broadcast or iota made in layout `to` where it is used (sharding propagation puts the
// user's sharding on it: no communication, the per-device piece only).
Val Partitioner::make(Ctx& x, std::int32_t i, const Spec& to_in) {
    const HloInstr& in = x.c->instrs[static_cast<std::size_t>(i)];
    Spec to = to_in.manual ? Spec{} : to_in;
    if (to.dim() == -2) to = Spec{};
    auto key = std::make_pair(i, to.key());
    auto it = x.made.find(key);
    if (it != x.made.end()) return it->second;
    Val v;
    v.shape = &in.shape;
    v.spec = to;
    const int td = to.dim();
    if (in.op == HloOpcode::Broadcast) {
        const HloAttr* a = in.attr("dimensions");
        const auto dims =
            a ? hlo_detail::int_list(a->value, m_, a->offset) : std::vector<std::int64_t>{};
        Spec need;
        const HloShape& os = *operand(x, in.operands.at(0)).shape;
        for (std::size_t k = 0; k < dims.size(); ++k)
            if (td >= 0 && dims[k] == td) need = moved(to, os.dims.size(), static_cast<int>(k));
        const Val o = use(x, in, 0, &need);
        v.ref = emit_instr(x, i, {o.ref}, local_text(in.shape, to));
    } else {  // iota: the piece along the iota dimension is a slice of the whole
        const HloAttr* a = in.attr("iota_dimension");
        const std::int64_t id = a ? std::strtoll(std::string(a->value).c_str(), nullptr, 10) : 0;
        if (td >= 0 && td == id) {
            Val whole;
            whole.shape = &in.shape;
            whole.ref = emit_instr(x, i, {}, local_text(in.shape, Spec{}));
            v = slice_local(x, whole, to);
        } else {
            v.ref = emit_instr(x, i, {}, local_text(in.shape, to));
        }
    }
    x.made[key] = v;
    return v;
}

}  // namespace tpusim::hlo_spmd
