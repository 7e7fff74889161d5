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
#include "hlo_spmd.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "hlo_import.h"
#include "hlo_print.h"

namespace tpusim {

namespace hlo_spmd {

namespace {

using hlo_print::Line;

// A value's layout over the devices: tiled (tile[d] pieces along dimension d, devices listed
// row-major over [tile..., rep]), replicated (tile empty) or manual (a shard_map region: shapes
// already per device).
struct Spec {
    std::vector<std::int64_t> tile;
    std::int64_t rep = 1;
    std::vector<std::int64_t> devs;
    bool manual = false;
    bool replicated() const { return tile.empty() && !manual; }
    // The one tiled dimension; -1 replicated or manual, -2 tiled along several.
    int dim() const {
        int d = -1;
        for (std::size_t i = 0; i < tile.size(); ++i)
            if (tile[i] > 1) {
                if (d >= 0) return -2;
                d = static_cast<int>(i);
            }
        return d;
    }
    std::int64_t n() const {
        const int d = dim();
        return d >= 0 ? tile[static_cast<std::size_t>(d)] : 1;
    }
    bool operator==(const Spec& o) const {
        return manual == o.manual && tile == o.tile && rep == o.rep && devs == o.devs;
    }
    bool operator!=(const Spec& o) const { return !(*this == o); }
    // Same devices in the same order along the tiled dimension (where it lies aside).
    bool same_layout(const Spec& o) const { return n() == o.n() && rep == o.rep && devs == o.devs; }
    std::string key() const {
        if (manual) return "manual";
        return fmt::format("[{}]x{}:{}", fmt::join(tile, ","), rep, fmt::join(devs, ","));
    }
};

Spec normalized(Spec s) {
    if (std::all_of(s.tile.begin(), s.tile.end(), [](std::int64_t t) { return t == 1; }))
        s = Spec{{}, 1, {}, s.manual};
    return s;
}

Spec manual_spec() { return Spec{{}, 1, {}, true}; }

// `like` (tiled along one dimension) moved to dimension d of a rank-r array.
Spec moved(const Spec& like, std::size_t rank, int d) {
    if (d < 0 || static_cast<std::size_t>(d) >= rank || like.dim() < 0) return Spec{};
    Spec s;
    s.tile.assign(rank, 1);
    s.tile[static_cast<std::size_t>(d)] = like.n();
    s.rep = like.rep;
    s.devs = like.devs;
    return s;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// A value of the partitioned computation.
struct Val {
    std::string ref;  // "%name" or "%name#k"; empty: an element not read yet
    Spec spec;
    const HloShape* shape = nullptr;  // the global shape
    bool tuple = false;
    std::vector<Val> elems;
    std::int32_t deferred = -1;  // a broadcast / iota made where it is used, as users need it
};

std::string shape_with_dims(const HloShape& g, const std::vector<std::int64_t>& dims) {
    HloShape l = g;
    l.text = {};
    l.dims = dims;
    return hlo_print::shape_text(l);
}

std::vector<std::int64_t> local_dims(const HloShape& g, const Spec& s) {
    std::vector<std::int64_t> d = g.dims;
    if (s.tile.size() == d.size())
        for (std::size_t i = 0; i < d.size(); ++i) d[i] = ceil_div(d[i], s.tile[i]);
    return d;
}

std::string local_text(const HloShape& g, const Spec& s) {
    if (g.tuple || s.tile.empty()) return hlo_print::shape_text(g);
    return shape_with_dims(g, local_dims(g, s));
}

std::string val_shape(const Val& v) {
    if (!v.tuple) return local_text(*v.shape, v.spec);
    std::string out = "(";
    for (std::size_t i = 0; i < v.elems.size(); ++i)
        out += (i > 0 ? ", " : "") + val_shape(v.elems[i]);
    return out + ")";
}

// Device groups that differ only in their tile coordinate along d (those that gather or sum
// along d), in tile order.
std::vector<std::vector<std::int64_t>> groups_along(const Spec& s, int d) {
    std::vector<std::int64_t> dims = s.tile;
    dims.push_back(s.rep);
    std::vector<std::int64_t> stride(dims.size(), 1);
    for (std::size_t i = dims.size(); i-- > 1;) stride[i - 1] = stride[i] * dims[i];
    const auto ud = static_cast<std::size_t>(d);
    std::vector<std::vector<std::int64_t>> out;
    for (std::size_t f = 0; f < s.devs.size(); ++f) {
        if ((static_cast<std::int64_t>(f) / stride[ud]) % dims[ud] != 0) continue;
        std::vector<std::int64_t> g;
        for (std::int64_t k = 0; k < dims[ud]; ++k)
            g.push_back(s.devs[f + static_cast<std::size_t>(k * stride[ud])]);
        out.push_back(std::move(g));
    }
    return out;
}

std::string groups_text(const std::vector<std::vector<std::int64_t>>& gs) {
    std::string out = "{";
    for (std::size_t i = 0; i < gs.size(); ++i)
        out += fmt::format("{}{{{}}}", i > 0 ? "," : "", fmt::join(gs[i], ","));
    return out + "}";
}

bool is_elementwise(HloOpcode op) {
    return hlo_detail::op_class(op) == hlo_detail::OpClass::Elementwise || op == HloOpcode::Copy;
}

std::string_view unquote(std::string_view s) {
    if (s.size() >= 2 && s.front() == '"') return s.substr(1, s.size() - 2);
    return s;
}

class Partitioner {
 public:
    Partitioner(const HloModule& m, std::int64_t parts, HloImportStats& st)
        : m_(m), parts_(parts), st_(st) {
        for (const auto& c : m_.computations) {
            comp_names_.insert(std::string(c.name));
            for (const auto& in : c.instrs)
                if (const HloAttr* a = in.attr("channel_id"))
                    channel_ = std::max<std::int64_t>(
                        channel_, std::strtoll(std::string(a->value).c_str(), nullptr, 10));
        }
    }

    std::string run() {
        const Result r = partition(m_.entry, {}, nullptr);
        std::string out = header();
        for (std::size_t ci = 0; ci < m_.computations.size(); ++ci) {
            const HloComputation& c = m_.computations[ci];
            if (hlo_print::in_place(c) || partitioned_.count(static_cast<std::int32_t>(ci)))
                continue;
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
            lines[2] = {
                "sum", fmt::format("= {}[] {}(%x, %y)", type, type == "pred" ? "or" : "add"),
                true,  false,
                0,     fmt::format("{}[]", type)};
            hlo_print::put_computation(out, name, false, lines);
        }
        out += callees_;
        out += r.text;
        return out;
    }

 private:
    struct Result {
        std::string name, text;
        Val root;
    };
    struct Ctx {
        const HloComputation* c = nullptr;
        std::vector<Line> lines;
        std::unordered_set<std::string> used;
        std::vector<Val> vals;
        std::vector<bool> named;  // the instruction's own name is taken
        std::map<std::string, std::string> cache;
        std::map<std::pair<std::int32_t, std::string>, Val> made;
        std::map<std::string, Val> resharded;
    };

    // ---- output -----------------------------------------------------------------------------

    std::string header() const {
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

    std::string emit(Ctx& x, const std::string& base, const std::string& shape,
                     const std::string& rest) {
        Line l;
        l.name = hlo_print::fresh(x.used, base);
        l.shape = shape;
        l.body = fmt::format("= {} {}", shape, rest);
        x.lines.push_back(std::move(l));
        return "%" + x.lines.back().name;
    }

    // The line of `in` with its operands, shape and the attributes in `repl` replaced.
    std::string emit_instr(Ctx& x, std::int32_t i, const std::vector<std::string>& ops,
                           const std::string& shape,
                           const std::map<std::string, std::string>& repl = {}) {
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

    void warn(std::uint32_t at, const std::string& what) {
        std::string w = fmt::format("{}: warning: spmd-partitioner: {}", m_.location(at), what);
        if (!warned_.insert(w).second) return;  // once per instruction and reason
        ++st_.spmd_fallbacks;
        st_.warnings.push_back(std::move(w));
    }

    std::string channel() { return fmt::format("channel_id={}", ++channel_); }

    std::string adder(std::string_view type) {
        auto it = adders_.find(std::string(type));
        if (it != adders_.end()) return "%" + it->second;
        std::string name = fmt::format("spmd_add.{}", type);
        for (int k = 1; comp_names_.count(name); ++k) name = fmt::format("spmd_add.{}.{}", type, k);
        comp_names_.insert(name);
        adders_[std::string(type)] = name;
        return "%" + name;
    }

    // ---- resharding -------------------------------------------------------------------------

    std::string partition_id(Ctx& x) {
        auto& pid = x.cache["pid"];
        if (pid.empty()) pid = emit(x, "partition-id", "u32[]", "partition-id()");
        return pid;
    }

    // This device's start along dimension d of `s`: a table of every partition's offset read
    // at partition-id, as XLA's partitioner writes it.
    std::string offset(Ctx& x, const Spec& s, int d, std::int64_t chunk) {
        if (static_cast<std::size_t>(d) >= s.tile.size() ||
            s.tile[static_cast<std::size_t>(d)] == 1) {
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
    Val slice_local(Ctx& x, const Val& v, const Spec& to) {
        const HloShape& g = *v.shape;
        const auto ld = local_dims(g, to);
        std::vector<std::string> ops{v.ref};
        for (std::size_t d = 0; d < ld.size(); ++d)
            ops.push_back(offset(x, to, static_cast<int>(d), ld[d]));
        Val r = v;
        r.spec = to;
        r.ref = emit(x, "dynamic-slice", local_text(g, to),
                     fmt::format("dynamic-slice({}), dynamic_slice_sizes={{{}}}",
                                 fmt::join(ops, ", "), fmt::join(ld, ",")));
        return r;
    }

    // Tiled -> replicated: an all-gather along each tiled dimension.
    Val gather(Ctx& x, const Val& v) {
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

    Val reshard(Ctx& x, const Val& v, const Spec& to) {
        if (v.deferred >= 0) return make(x, v.deferred, to);
        if (v.tuple || v.spec.manual || to.manual || v.spec == to || v.shape->dims.empty())
            return v;
        // One copy of each resharded value per computation (XLA's CSE keeps one).
        const std::string key = fmt::format("{} {} -> {}", v.ref, v.spec.key(), to.key());
        auto it = x.resharded.find(key);
        if (it != x.resharded.end()) return it->second;
        Val r = reshard_new(x, v, to);
        x.resharded.emplace(key, r);
        return r;
    }

    Val reshard_new(Ctx& x, const Val& v, const Spec& to) {
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
    Val all_reduce(Ctx& x, Val v, const Spec& over, int d, const std::string& to_apply,
                   const std::optional<Spec>& want = std::nullopt) {
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

    // ---- values -----------------------------------------------------------------------------

    Val element(Ctx& x, const Val& t, std::size_t k) {
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

    Val operand(Ctx& x, const HloOperand& o) {
        const Val& v = x.vals[static_cast<std::size_t>(o.instr)];
        return o.tuple_index >= 0 ? element(x, v, static_cast<std::size_t>(o.tuple_index)) : v;
    }

    // Operand k read in layout `to` (a deferred broadcast made so; else resharded).
    Val use(Ctx& x, const HloInstr& in, std::size_t k, const Spec* to) {
        Val v = operand(x, in.operands[k]);
        if (v.deferred >= 0) return make(x, v.deferred, to ? *to : Spec{});
        return to ? reshard(x, v, *to) : v;
    }

    // The sharding written on `in` as a spec for its shape; none when it has none or one the
    // pass does not read (with a warning).
    std::optional<Spec> annotation(const HloInstr& in, const HloShape& s, const Sharding& sh) {
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
                                                   in.name, sh.tile.size(),
                                                   hlo_print::shape_text(s), s.dims.size()));
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

    std::optional<Sharding> sharding_of(const HloInstr& in) {
        const HloAttr* a = in.attr("sharding");
        if (!a) return std::nullopt;
        return parse_sharding(a->value, m_, a->offset, parts_);
    }

    // A value of shape s laid out as `sh` (tuples element by element; none: replicated).
    Val annotated_val(const HloInstr& in, const HloShape& s, const Sharding* sh,
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
    Val conform(Ctx& x, const Val& v, const Val& want) {
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
    Val make(Ctx& x, std::int32_t i, const Spec& to_in) {
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
            const std::int64_t id =
                a ? std::strtoll(std::string(a->value).c_str(), nullptr, 10) : 0;
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

    // ---- computations -----------------------------------------------------------------------

    static std::string signature(const std::vector<Val>& args, const Val* root) {
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
    Result partition(std::int32_t ci, const std::vector<Val>& args, const Val* root) {
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
                for (std::size_t k = 0; k < r.elems.size(); ++k)
                    refs.push_back(element(x, r, k).ref);
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
    static Val fresh_elements(Val v, const std::string& ref) {
        v.ref = ref;
        for (auto& e : v.elems) e.ref.clear();
        return v;
    }

    Val instr(Ctx& x, std::int32_t i, const std::vector<Val>& args, bool entry) {
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
                const std::size_t k =
                    a ? std::strtoull(std::string(a->value).c_str(), nullptr, 10) : 0;
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

    // The layout of a reshape's result: the tiled dimension kept where it maps to a result
    // dimension whole, as its major part, or split with the tiles in its major part.
    static Spec reshaped(const Val& o, const HloShape& out) {
        const int d = o.spec.dim();
        if (d < 0) return Spec{};
        const auto& a = o.shape->dims;
        const std::int64_t n = o.spec.n(), size = a[static_cast<std::size_t>(d)];
        if (size == 0 || size % n != 0) return Spec{};
        std::int64_t before = 1;
        for (int k = 0; k < d; ++k) before *= a[static_cast<std::size_t>(k)];
        std::int64_t pb = 1;
        for (std::size_t e = 0; e < out.dims.size(); ++e) {
            if (pb == before && out.dims[e] > 1) {
                const std::int64_t r = out.dims[e];
                const bool ok = r == size || (r > size && r % size == 0) ||
                                (r < size && size % r == 0 && r % n == 0);
                return ok ? moved(o.spec, out.dims.size(), static_cast<int>(e)) : Spec{};
            }
            pb *= out.dims[e];
            if (pb > before) break;
        }
        return Spec{};
    }

    std::vector<std::int64_t> ints(const HloInstr& in, const char* name) {
        const HloAttr* a = in.attr(name);
        return a ? hlo_detail::int_list(a->value, m_, a->offset) : std::vector<std::int64_t>{};
    }

    static int index_of(const std::vector<std::int64_t>& v, std::int64_t x) {
        for (std::size_t k = 0; k < v.size(); ++k)
            if (v[k] == x) return static_cast<int>(k);
        return -1;
    }

    Val dot(Ctx& x, std::int32_t i, const std::optional<Spec>& ann) {
        const HloInstr& in = x.c->instrs[static_cast<std::size_t>(i)];
        const auto lb = ints(in, "lhs_batch_dims"), rb = ints(in, "rhs_batch_dims");
        const auto lc = ints(in, "lhs_contracting_dims"), rc = ints(in, "rhs_contracting_dims");
        Val l = operand(x, in.operands.at(0)), r = operand(x, in.operands.at(1));
        const std::size_t lr = l.shape->dims.size(), rr = r.shape->dims.size();
        auto free_dims = [](std::size_t rank, const std::vector<std::int64_t>& b,
                            const std::vector<std::int64_t>& c) {
            std::vector<std::int64_t> f;
            for (std::size_t k = 0; k < rank; ++k)
                if (index_of(b, static_cast<std::int64_t>(k)) < 0 &&
                    index_of(c, static_cast<std::int64_t>(k)) < 0)
                    f.push_back(static_cast<std::int64_t>(k));
            return f;
        };
        const auto lf = free_dims(lr, lb, lc), rf = free_dims(rr, rb, rc);
        const std::size_t rank = in.shape.dims.size();
        Spec ls, rs, os;   // operand layouts needed, result layout
        int partial = -1;  // the lhs dimension summed across devices
        const int ld = l.deferred >= 0 ? -1 : l.spec.dim();
        const int rd = r.deferred >= 0 ? -1 : r.spec.dim();
        if (ld == -2 || rd == -2)
            warn(in.offset, fmt::format("dot {}: an operand is tiled along several dimensions; "
                                        "it is gathered",
                                        in.name));
        const int e = ann ? ann->dim() : -1;
        const int nb = static_cast<int>(lb.size()), nlf = static_cast<int>(lf.size());
        if (ld < 0 && rd < 0 && e >= 0) {
            // Replicated operands, a tiled result: each device computes its piece from the
            // slices of the operands it needs (sharding propagation backwards from the user).
            os = *ann;
            if (e < nb) {
                ls = moved(os, lr, static_cast<int>(lb[static_cast<std::size_t>(e)]));
                rs = moved(os, rr, static_cast<int>(rb.at(static_cast<std::size_t>(e))));
            } else if (e < nb + nlf) {
                ls = moved(os, lr, static_cast<int>(lf[static_cast<std::size_t>(e - nb)]));
            } else {
                rs = moved(os, rr, static_cast<int>(rf.at(static_cast<std::size_t>(e - nb - nlf))));
            }
        } else if (ld >= 0) {
            ls = l.spec;
            if (int k = index_of(lb, ld); k >= 0) {
                rs = moved(ls, rr, static_cast<int>(rb.at(static_cast<std::size_t>(k))));
                os = moved(ls, rank, k);
            } else if (int k2 = index_of(lc, ld); k2 >= 0) {
                rs = moved(ls, rr, static_cast<int>(rc.at(static_cast<std::size_t>(k2))));
                partial = ld;
            } else {
                os = moved(ls, rank, static_cast<int>(lb.size()) + index_of(lf, ld));
                if (rd >= 0 && index_of(rf, rd) >= 0)
                    warn(in.offset, fmt::format("dot {}: both operands tiled on free dimensions "
                                                "(a 2-D tiling of the result); the rhs is "
                                                "gathered",
                                                in.name));
            }
        } else if (rd >= 0) {
            rs = r.spec;
            if (int k = index_of(rb, rd); k >= 0) {
                ls = moved(rs, lr, static_cast<int>(lb.at(static_cast<std::size_t>(k))));
                os = moved(rs, rank, k);
            } else if (int k2 = index_of(rc, rd); k2 >= 0) {
                ls = moved(rs, lr, static_cast<int>(lc.at(static_cast<std::size_t>(k2))));
                partial = static_cast<int>(lc.at(static_cast<std::size_t>(k2)));
            } else {
                os = moved(rs, rank, static_cast<int>(lb.size() + lf.size()) + index_of(rf, rd));
            }
        }
        return contraction(x, i, ls, rs, os, partial, ann);
    }

    // A dot or convolution with its operands laid out as ls and rs, its result as os; partial:
    // the tiled dimension of ls that it contracts (>= 0), whose partial sums are all-reduced.
    Val contraction(Ctx& x, std::int32_t i, const Spec& ls, const Spec& rs, const Spec& os,
                    int partial, const std::optional<Spec>& ann) {
        const HloInstr& in = x.c->instrs[static_cast<std::size_t>(i)];
        const Val l = use(x, in, 0, &ls), r = use(x, in, 1, &rs);
        Val v;
        v.shape = &in.shape;
        v.spec = os;
        v.ref = emit_instr(x, i, {l.ref, r.ref}, local_text(in.shape, os));
        if (partial >= 0) v = all_reduce(x, v, ls, partial, adder(in.shape.type.name), ann);
        return v;
    }

    Val convolution(Ctx& x, std::int32_t i, const std::optional<Spec>& ann) {
        const HloInstr& in = x.c->instrs[static_cast<std::size_t>(i)];
        const HloAttr* dl = in.attr("dim_labels");
        const std::string labels = dl ? std::string(dl->value) : "";
        const std::size_t us = labels.find('_'), ar = labels.find("->");
        if (us == std::string::npos || ar == std::string::npos || ar < us)
            m_.fail(in.offset, fmt::format("convolution {} needs dim_labels=", in.name));
        const std::string lab_l = labels.substr(0, us), lab_r = labels.substr(us + 1, ar - us - 1),
                          lab_o = labels.substr(ar + 2);
        auto pos = [](const std::string& s, char c) {
            const std::size_t p = s.find(c);
            return p == std::string::npos ? -1 : static_cast<int>(p);
        };
        auto count = [&](const char* name) {
            const HloAttr* a = in.attr(name);
            return a ? std::strtoll(std::string(a->value).c_str(), nullptr, 10) : 1;
        };
        const bool plain_groups =
            count("feature_group_count") == 1 && count("batch_group_count") == 1;
        Val l = operand(x, in.operands.at(0)), r = operand(x, in.operands.at(1));
        const std::size_t rank = in.shape.dims.size();
        const int ld = l.deferred >= 0 ? -1 : l.spec.dim();
        const int rd = r.deferred >= 0 ? -1 : r.spec.dim();
        Spec ls, rs, os;
        int partial = -1;
        if (ld >= 0 && ld == pos(lab_l, 'b') && count("batch_group_count") == 1) {
            ls = l.spec;
            os = moved(ls, rank, pos(lab_o, 'b'));
        } else if (ld >= 0 && ld == pos(lab_l, 'f') && plain_groups) {
            ls = l.spec;
            rs = moved(ls, r.shape->dims.size(), pos(lab_r, 'i'));
            partial = ld;
        } else if (rd >= 0 && rd == pos(lab_r, 'o') && plain_groups) {
            rs = r.spec;
            os = moved(rs, rank, pos(lab_o, 'f'));
        } else if (rd >= 0 && rd == pos(lab_r, 'i') && plain_groups) {
            rs = r.spec;
            ls = moved(rs, l.shape->dims.size(), pos(lab_l, 'f'));
            partial = pos(lab_l, 'f');
        } else if (ld != -1 || rd != -1) {
            warn(in.offset, fmt::format("convolution {}: tiled along a spatial dimension, several "
                                        "dimensions or across feature/batch groups; its operands "
                                        "are gathered",
                                        in.name));
        }
        return contraction(x, i, ls, rs, os, partial, ann);
    }

    Val reduce(Ctx& x, std::int32_t i, const std::optional<Spec>& ann) {
        const HloInstr& in = x.c->instrs[static_cast<std::size_t>(i)];
        const auto dims = ints(in, "dimensions");
        Val o = operand(x, in.operands[0]);
        const Val init = use(x, in, 1, nullptr);
        const int d = o.deferred >= 0 ? -1 : o.spec.dim();
        if (d == -2) {
            warn(in.offset, fmt::format("reduce {}: its operand is tiled along several "
                                        "dimensions; it is gathered",
                                        in.name));
            o = reshard(x, o, Spec{});
        } else {
            o = use(x, in, 0, nullptr);
        }
        Val v;
        v.shape = &in.shape;
        if (d >= 0 && index_of(dims, d) < 0) {
            int before = 0;
            for (std::int64_t k : dims) before += k < d ? 1 : 0;
            v.spec = moved(o.spec, in.shape.dims.size(), d - before);
        }
        v.ref = emit_instr(x, i, {o.ref, init.ref}, local_text(in.shape, v.spec));
        if (d >= 0 && index_of(dims, d) >= 0) {
            const HloAttr* a = in.attr("to_apply");
            std::string f = a ? std::string(a->value) : adder(in.shape.type.name);
            if (!f.empty() && f.front() != '%') f = "%" + f;
            v = all_reduce(x, v, o.spec, d, f, ann);
        }
        return v;
    }

    std::string callee_ref(const std::string& name) { return "%" + name; }

    Val loop(Ctx& x, std::int32_t i) {
        const HloInstr& in = x.c->instrs[static_cast<std::size_t>(i)];
        const auto body = m_.find_computation(strip(in.attr("body")));
        const auto cond = m_.find_computation(strip(in.attr("condition")));
        if (body < 0 || cond < 0 || in.operands.size() != 1)
            m_.fail(in.offset,
                    fmt::format("while {} needs body=, condition= and one operand", in.name));
        Val init = use(x, in, 0, nullptr);
        init.shape = &in.shape;
        if (init.tuple) init = conform(x, init, init);  // element refs of the operand
        // The state's layout around the loop: the operand's, except where the body makes a
        // replicated element tiled (a scan's stacked outputs, written piece by piece): there
        // the state is tiled from the start (the operand sliced before the loop), as sharding
        // propagation unifies a while's operand, body and result. The body's result is then
        // resharded to the state's layout; a counter stays replicated.
        Val state = init;
        for (int round = 0; round < 4 && state.tuple; ++round) {
            const Snapshot before = snapshot();
            const Result probe = partition(body, {state}, nullptr);
            restore(before);
            bool changed = false;
            for (std::size_t k = 0; k < state.elems.size() && k < probe.root.elems.size(); ++k) {
                Val& e = state.elems[k];
                const Val& r = probe.root.elems[k];
                if (!e.tuple && !r.tuple && e.spec.replicated() && r.spec.dim() >= 0 &&
                    r.spec.tile.size() == e.shape->dims.size()) {
                    e.spec = r.spec;
                    changed = true;
                }
            }
            if (!changed) break;
        }
        if (state.tuple && signature({state}, nullptr) != signature({init}, nullptr)) {
            init = conform(x, init, state);
            init.shape = &in.shape;
        }
        const Result b = partition(body, {init}, &init);
        const Result c = partition(cond, {init}, nullptr);
        Val v = init;
        const std::string ref =
            emit_instr(x, i, {init.ref}, val_shape(init),
                       {{"body", callee_ref(b.name)}, {"condition", callee_ref(c.name)}});
        return v.tuple ? fresh_elements(v, ref) : (v.ref = ref, v);
    }

    // What partitioning a computation leaves behind, for a trial partition (loop()).
    struct Snapshot {
        std::map<std::pair<std::int32_t, std::string>, Result> done;
        std::set<std::int32_t> partitioned;
        std::unordered_set<std::string> comp_names, warned;
        std::map<std::string, std::string> adders;
        std::string callees;
        std::int64_t channel = 0;
        HloImportStats stats;
    };
    Snapshot snapshot() const {
        return {done_, partitioned_, comp_names_, warned_, adders_, callees_, channel_, st_};
    }
    void restore(const Snapshot& s) {
        done_ = s.done;
        partitioned_ = s.partitioned;
        comp_names_ = s.comp_names;
        warned_ = s.warned;
        adders_ = s.adders;
        callees_ = s.callees;
        channel_ = s.channel;
        st_ = s.stats;
    }

    static std::string_view strip(const HloAttr* a) {
        std::string_view v = a ? a->value : std::string_view{};
        if (!v.empty() && v.front() == '%') v.remove_prefix(1);
        return v;
    }

    Val call(Ctx& x, std::int32_t i) {
        const HloInstr& in = x.c->instrs[static_cast<std::size_t>(i)];
        if (in.callees.empty())
            m_.fail(in.offset, fmt::format("{} calls no computation", in.opcode));
        std::map<std::string, std::string> repl;
        std::vector<std::string> ops;
        Val result;
        if (in.op == HloOpcode::Call) {
            std::vector<Val> args;
            for (std::size_t k = 0; k < in.operands.size(); ++k) {
                Val a = use(x, in, k, nullptr);
                if (a.tuple) a = conform(x, a, a);
                args.push_back(a);
                ops.push_back(a.ref);
            }
            const Result r = partition(in.callees.front(), args, nullptr);
            result = r.root;
            repl["to_apply"] = callee_ref(r.name);
        } else {  // conditional: branch k reads operand k + 1; every branch returns the layout
                  // of the first
            ops.push_back(use(x, in, 0, &result.spec).ref);
            std::vector<std::string> names;
            const Val* first = nullptr;
            Result r0;
            for (std::size_t b = 0; b < in.callees.size(); ++b) {
                std::vector<Val> args;
                if (b + 1 < in.operands.size()) {
                    Val a = use(x, in, b + 1, nullptr);
                    if (a.tuple) a = conform(x, a, a);
                    args.push_back(a);
                    ops.push_back(a.ref);
                }
                const Result r = partition(in.callees[b], args, first);
                if (b == 0) {
                    r0 = r;
                    first = &r0.root;
                }
                names.push_back(callee_ref(r.name));
            }
            result = r0.root;
            if (in.attr("branch_computations"))
                repl["branch_computations"] = fmt::format("{{{}}}", fmt::join(names, ", "));
            if (in.attr("true_computation") && names.size() == 2) {
                repl["true_computation"] = names[0];
                repl["false_computation"] = names[1];
            }
        }
        result.shape = &in.shape;
        const std::string ref = emit_instr(x, i, ops, val_shape(result), repl);
        return result.tuple ? fresh_elements(result, ref) : (result.ref = ref, result);
    }

    // Movement and window ops that keep a dimension they do not touch: its tiling stays.
    std::optional<Val> along_free_dim(Ctx& x, std::int32_t i) {
        const HloInstr& in = x.c->instrs[static_cast<std::size_t>(i)];
        if (in.shape.tuple || in.operands.empty()) return std::nullopt;
        Val o = operand(x, in.operands[0]);
        if (o.tuple) return std::nullopt;
        if (in.op == HloOpcode::DynamicUpdateSlice && in.operands.size() >= 2 &&
            (o.deferred >= 0 || o.spec.replicated())) {
            // A replicated buffer updated with a tiled piece along a dimension the update
            // covers whole: the buffer is used tiled (made or sliced locally).
            const Val u = operand(x, in.operands[1]);
            const int du = u.deferred >= 0 || u.tuple ? -1 : u.spec.dim();
            if (du < 0 || u.shape->dims.size() != o.shape->dims.size() ||
                u.shape->dims[static_cast<std::size_t>(du)] !=
                    o.shape->dims[static_cast<std::size_t>(du)])
                return std::nullopt;
            o.spec = u.spec;
            o.deferred = -1;
        }
        if (o.deferred >= 0) return std::nullopt;
        const int d = o.spec.dim();
        if (d < 0 || o.shape->dims.size() != in.shape.dims.size()) return std::nullopt;
        const auto ud = static_cast<std::size_t>(d);
        const std::int64_t size = o.shape->dims[ud];
        if (in.shape.dims[ud] != size) return std::nullopt;
        std::vector<std::size_t> same;  // operands laid out as operand 0
        std::map<std::string, std::string> repl;
        const auto ld = local_dims(*o.shape, o.spec);
        switch (in.op) {
            case HloOpcode::Slice: {
                const HloAttr* a = in.attr("slice");
                if (!a) return std::nullopt;
                // [start:limit(:stride)] per dimension: find dimension d's triple.
                std::string text(a->value);
                std::vector<std::string> parts;
                std::size_t p = 0;
                while ((p = text.find('[', p)) != std::string::npos) {
                    const std::size_t q = text.find(']', p);
                    if (q == std::string::npos) return std::nullopt;
                    parts.push_back(text.substr(p + 1, q - p - 1));
                    p = q;
                }
                if (parts.size() != in.shape.dims.size()) return std::nullopt;
                const std::string full0 = fmt::format("0:{}", size);
                if (parts[ud] != full0 && parts[ud] != full0 + ":1") return std::nullopt;
                parts[ud] = fmt::format("0:{}", ld[ud]);
                std::string s = "{";
                for (std::size_t k = 0; k < parts.size(); ++k)
                    s += fmt::format("{}[{}]", k > 0 ? ", " : "", parts[k]);
                repl["slice"] = s + "}";
                break;
            }
            case HloOpcode::Pad: {
                const HloAttr* a = in.attr("padding");
                if (!a) return std::nullopt;
                std::vector<std::string> parts;
                std::string text(a->value);
                std::size_t b = 0;
                while (b <= text.size()) {
                    std::size_t e = text.find('x', b);
                    if (e == std::string::npos) e = text.size();
                    parts.push_back(text.substr(b, e - b));
                    b = e + 1;
                }
                if (parts.size() != in.shape.dims.size() ||
                    (parts[ud] != "0_0" && parts[ud] != "0_0_0"))
                    return std::nullopt;
                break;
            }
            case HloOpcode::Concatenate:
                if (index_of(ints(in, "dimensions"), d) >= 0) return std::nullopt;
                for (std::size_t k = 1; k < in.operands.size(); ++k) same.push_back(k);
                break;
            case HloOpcode::Reverse:
                if (index_of(ints(in, "dimensions"), d) >= 0) return std::nullopt;
                break;
            case HloOpcode::ReduceWindow:
            case HloOpcode::SelectAndScatter: {
                if (in.op == HloOpcode::ReduceWindow && in.operands.size() != 2)
                    return std::nullopt;
                const HloAttr* w = in.attr("window");
                if (!w || !window_is_one(w->value, ud)) return std::nullopt;
                if (in.op == HloOpcode::SelectAndScatter) same.push_back(1);
                break;
            }
            case HloOpcode::DynamicSlice: {
                const auto sizes = ints(in, "dynamic_slice_sizes");
                if (ud >= sizes.size() || sizes[ud] != size) return std::nullopt;
                auto s = sizes;
                s[ud] = ld[ud];
                repl["dynamic_slice_sizes"] = fmt::format("{{{}}}", fmt::join(s, ","));
                break;
            }
            case HloOpcode::DynamicUpdateSlice: {
                const Val u = operand(x, in.operands.at(1));
                if (u.tuple || u.shape->dims.size() != in.shape.dims.size() ||
                    u.shape->dims[ud] != size)
                    return std::nullopt;
                same.push_back(1);
                break;
            }
            default:
                return std::nullopt;
        }
        std::vector<std::string> ops;
        for (std::size_t k = 0; k < in.operands.size(); ++k) {
            const bool lay = k == 0 || std::find(same.begin(), same.end(), k) != same.end();
            Val v = use(x, in, k, lay ? &o.spec : nullptr);
            if (!lay && !v.spec.replicated()) v = reshard(x, v, Spec{});
            ops.push_back(v.ref);
        }
        Val v;
        v.shape = &in.shape;
        v.spec = o.spec;
        v.ref = emit_instr(x, i, ops, local_text(in.shape, o.spec), repl);
        return v;
    }

    // Whether a window={size=AxB stride=.. pad=..} leaves dimension d alone.
    static bool window_is_one(std::string_view w, std::size_t d) {
        auto field = [&](std::string_view key) -> std::string {
            const std::size_t p = w.find(key);
            if (p == std::string_view::npos) return "";
            std::size_t e = p + key.size();
            while (e < w.size() && w[e] != ' ' && w[e] != '}') ++e;
            return std::string(w.substr(p + key.size(), e - p - key.size()));
        };
        auto nth = [&](const std::string& v, char sep) -> std::string {
            std::size_t b = 0;
            for (std::size_t k = 0; k < d; ++k) {
                b = v.find(sep, b);
                if (b == std::string::npos) return "";
                ++b;
            }
            return v.substr(b, v.find(sep, b) - b);
        };
        const std::string size = field("size="), stride = field("stride="), pad = field("pad="),
                          lhs = field("lhs_dilate="), rhs = field("rhs_dilate=");
        if (nth(size, 'x') != "1") return false;
        if (!stride.empty() && nth(stride, 'x') != "1") return false;
        if (!pad.empty() && nth(pad, 'x') != "0_0") return false;
        if (!lhs.empty() && nth(lhs, 'x') != "1") return false;
        if (!rhs.empty() && nth(rhs, 'x') != "1") return false;
        return true;
    }

    // Any other op: its operands gathered (a located warning when one was tiled), its result
    // replicated.
    Val replicated_op(Ctx& x, std::int32_t i) {
        const HloInstr& in = x.c->instrs[static_cast<std::size_t>(i)];
        std::vector<std::string> ops;
        bool tiled = false;
        for (std::size_t k = 0; k < in.operands.size(); ++k) {
            Val v = use(x, in, k, nullptr);
            if (v.tuple) {
                bool any = false;
                for (const auto& e : v.elems) any = any || !e.spec.replicated();
                if (any) {
                    Val want = v;
                    for (auto& e : want.elems) e.spec = Spec{};
                    v = conform(x, v, want);
                    tiled = true;
                }
            } else if (!v.spec.replicated() && !v.spec.manual) {
                v = reshard(x, v, Spec{});
                tiled = true;
            }
            ops.push_back(v.ref);
        }
        if (tiled)
            warn(in.offset, fmt::format("{} {} is outside the pass's rules for tiled operands: "
                                        "they are gathered and it runs replicated",
                                        in.opcode, in.name));
        Val v = annotated_val(in, in.shape, nullptr, "");
        v.ref = emit_instr(x, i, ops, hlo_print::shape_text(in.shape));
        return v.tuple ? fresh_elements(v, v.ref) : v;
    }

    static constexpr const char* kMark = "tpusim_spmd_partitioned=\"true\"";

    const HloModule& m_;
    std::int64_t parts_;
    HloImportStats& st_;
    std::int64_t channel_ = 0;
    std::unordered_set<std::string> comp_names_, warned_;
    std::map<std::string, std::string> adders_;
    std::set<std::int32_t> partitioned_;
    std::map<std::pair<std::int32_t, std::string>, Result> done_;
    std::string callees_, entry_layout_ = "{()->()}";
    int depth_ = 0;
};

std::int64_t partitions(const HloModule& m) {
    const HloAttr* a = m.attr("num_partitions");
    return a ? std::strtoll(std::string(a->value).c_str(), nullptr, 10) : 1;
}

}  // namespace

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
