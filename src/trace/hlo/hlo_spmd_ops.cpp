// The SPMD partitioner (hlo_spmd_partitioner.h): the rules per opcode, after
// xla/service/spmd/dot_handler.cc and convolution_handler.cc (partial sums -> all-reduce),
// reductions, and ops partitioned along a dimension they do not touch; anything else
// replicated with a located warning.
#include "hlo_spmd_partitioner.h"

namespace tpusim::hlo_spmd {

// The layout of a reshape's result: the tiled dimension kept where it maps to a result
// dimension whole, as its major part, or split with the tiles in its major part.
Spec Partitioner::reshaped(const Val& o, const HloShape& out) {
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

std::vector<std::int64_t> Partitioner::ints(const HloInstr& in, const char* name) {
    const HloAttr* a = in.attr(name);
    return a ? hlo_detail::int_list(a->value, m_, a->offset) : std::vector<std::int64_t>{};
}

int Partitioner::index_of(const std::vector<std::int64_t>& v, std::int64_t x) {
    for (std::size_t k = 0; k < v.size(); ++k)
        if (v[k] == x) return static_cast<int>(k);
    return -1;
}

Val Partitioner::dot(Ctx& x, std::int32_t i, const std::optional<Spec>& ann) {
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
Val Partitioner::contraction(Ctx& x, std::int32_t i, const Spec& ls, const Spec& rs, const Spec& os,
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

Val Partitioner::convolution(Ctx& x, std::int32_t i, const std::optional<Spec>& ann) {
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
    const bool plain_groups = count("feature_group_count") == 1 && count("batch_group_count") == 1;
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

Val Partitioner::reduce(Ctx& x, std::int32_t i, const std::optional<Spec>& ann) {
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

// Movement and window ops that keep a dimension they do not touch: its tiling stays.
std::optional<Val> Partitioner::along_free_dim(Ctx& x, std::int32_t i) {
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
            if (in.op == HloOpcode::ReduceWindow && in.operands.size() != 2) return std::nullopt;
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
bool Partitioner::window_is_one(std::string_view w, std::size_t d) {
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
Val Partitioner::replicated_op(Ctx& x, std::int32_t i) {
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

}  // namespace tpusim::hlo_spmd
