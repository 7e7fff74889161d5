// HLO module -> trace: walks ENTRY in program order, inlines call / while / conditional /
// async bodies, turns each fusion (explicit, or made by the fusion pass) into a small group
// of trace ops whose intermediate results stay on chip, and tracks which trace ops produce
// each HLO value so that dependencies follow the data (docs/hlo.md).
#include "hlo_import.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "hlo_value.h"
#include "tpusim/common/error.h"

namespace tpusim {

using namespace hlo_detail;

namespace {

class Importer {
 public:
    Importer(const HloModule& m, const HloImportOptions& o, std::int64_t cores, HloImportStats& st)
        : m_(m), opts_(o), stats_(st) {
        trace_.cores = cores;
        for (const auto& c : m.computations)
            for (const auto& in : c.instrs) has_fusions_ = has_fusions_ || in.opcode == "fusion";
        pass_ = opts_.fusion && !has_fusions_;
    }

    Trace run() {
        trace_.name =
            m_.name.empty() ? std::filesystem::path(m_.path).stem().string() : std::string(m_.name);
        trace_.path = m_.path;
        const HloComputation& entry = m_.computations[static_cast<std::size_t>(m_.entry)];
        // The entry parameters live in HBM for the whole program, each once however many
        // instructions (or loop trips) read it; those in VMEM (S(1)) or host memory (S(5))
        // take none.
        trace_.parameter_bytes = 0;
        for (const auto& in : entry.instrs)
            if (in.opcode == "parameter") trace_.parameter_bytes += hbm_bytes(in.shape);
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

 private:
    int line_of(std::uint32_t offset) const {
        // Lines are counted once per op; the text is scanned forward from the last position.
        const std::string& t = *m_.text;
        if (offset < line_pos_) {
            line_pos_ = 0;
            line_no_ = 1;
        }
        for (; line_pos_ < offset && line_pos_ < t.size(); ++line_pos_)
            if (t[line_pos_] == '\n') ++line_no_;
        return line_no_;
    }

    static std::int64_t hbm_bytes(const HloShape& s) {
        if (!s.tuple) return s.memory_space == 0 ? s.bytes() : 0;
        std::int64_t b = 0;
        for (const auto& e : s.elements) b += hbm_bytes(e);
        return b;
    }

    std::string unique_id(std::string_view name, const std::string& suffix) {
        std::string id = std::string(name) + suffix;
        if (ids_.insert(id).second) return id;
        // The next number to try for this id: a name inlined N times costs N tries, not N^2.
        std::int64_t& k = next_copy_[id];
        for (k = std::max<std::int64_t>(k, 2);; ++k) {
            std::string alt = fmt::format("{}/{}", id, k);
            if (ids_.insert(alt).second) return alt;
        }
    }

    // A copy the fusion pass treats as its operand (is_noop_copy); modules that XLA has
    // optimised (with fusions) keep their copies.
    bool noop_copy(const HloComputation& c, const HloInstr& in) const {
        return pass_ && is_noop_copy(c, in);
    }

    static const Value& element(const Value& v, std::int32_t index) {
        if (index >= 0 && v.tuple && static_cast<std::size_t>(index) < v.elems.size())
            return v.elems[static_cast<std::size_t>(index)];
        return v;
    }

    // The read set of the multi-output fusion the pass-made fusion `mem` (rooted at `root`)
    // joins: an earlier group that read one of its HBM operands, over the same elements, on
    // which it does not depend; else a new group of its own. Null for fusions XLA does not
    // fuse so: the output fusion of a dot or convolution, and roots other than elementwise
    // ops and reductions.
    std::unordered_set<std::int64_t>* multi_output_group(
        const HloComputation& c, SiblingFusions& s, const std::vector<std::int32_t>& mem,
        std::int32_t root, const std::function<Place(const HloOperand&)>& ext) {
        const HloInstr& r = c.instrs[static_cast<std::size_t>(root)];
        const bool reduce = r.opcode == "reduce" && !r.operands.empty();
        if (op_class(r.opcode) != OpClass::Elementwise && !reduce) return nullptr;
        std::unordered_set<std::int32_t> in(mem.begin(), mem.end());
        for (std::int32_t j : mem)
            if (op_class(c.instrs[static_cast<std::size_t>(j)].opcode) == OpClass::Heavy)
                return nullptr;
        const std::int64_t space =
            (reduce ? c.instrs[static_cast<std::size_t>(r.operands[0].instr)].shape : r.shape)
                .elements_count();
        if (space <= 0) return nullptr;
        for (std::int32_t j : mem) {
            for (const auto& o : c.instrs[static_cast<std::size_t>(j)].operands) {
                if (in.count(o.instr) || ext(o).on_chip) continue;
                const auto it = s.readers.find(read_key(o));
                if (it == s.readers.end()) continue;
                for (std::size_t g : it->second) {
                    if (s.groups[g].space != space || s.reaches(s.groups[g].members, mem))
                        continue;
                    s.current = g;
                    ++stats_.multi_output_fusions;
                    return &s.groups[g].read;
                }
            }
        }
        s.groups.push_back({{}, space, {}});
        s.current = s.groups.size() - 1;
        return &s.groups.back().read;
    }

    Value walk(std::int32_t ci, const std::vector<Value>& args, const std::string& suffix) {
        const HloComputation& c = m_.computations[static_cast<std::size_t>(ci)];
        // One level of recursion per call, while body or branch: a bounded stack.
        if (depth_ >= kMaxHloCallDepth)
            m_.fail(c.offset, fmt::format("computations call each other more than {} levels deep",
                                          kMaxHloCallDepth));
        ++depth_;
        struct Leave {
            int& depth;
            ~Leave() { --depth; }
        } leave{depth_};
        std::vector<Value> vals(c.instrs.size());
        std::vector<std::vector<std::int32_t>> cluster;
        std::unordered_map<std::int32_t, std::vector<std::int32_t>> members;
        SiblingFusions siblings;
        if (pass_) {
            cluster = fusion_clusters(c);
            for (std::size_t j = 0; j < cluster.size(); ++j)
                for (std::int32_t r : cluster[j])
                    members[r].push_back(static_cast<std::int32_t>(j));
            siblings.init(c);
        }
        auto val = [&](const HloOperand& o) -> const Value& {
            return element(vals[static_cast<std::size_t>(o.instr)], o.tuple_index);
        };
        auto all_operands = [&](const HloInstr& in) {
            std::vector<const Value*> vs;
            for (const auto& o : in.operands) vs.push_back(&val(o));
            return merged(vs);
        };
        for (std::size_t i = 0; i < c.instrs.size(); ++i) {
            const HloInstr& in = c.instrs[i];
            if (++stats_.instructions > opts_.max_instructions)
                m_.fail(in.offset,
                        fmt::format("the module expands to more than {} instructions (loop "
                                    "bodies count once per trip)",
                                    opts_.max_instructions));
            if (!is_known_opcode(in.opcode))
                m_.fail(in.offset, fmt::format("unknown opcode {}", in.opcode));
            const bool fused = pass_ && !cluster[i].empty();
            if (fused && cluster[i][0] != static_cast<std::int32_t>(i)) continue;
            if (noop_copy(c, in)) {  // removed by XLA's simplifier: the value itself
                ++stats_.free_instructions;
                vals[i] = val(in.operands[0]);
                continue;
            }
            const OpClass cls = op_class(in.opcode);
            Value& out = vals[i];
            switch (cls) {
                case OpClass::Free:
                    ++stats_.free_instructions;
                    if (in.opcode == "parameter") {
                        const std::size_t n =
                            std::strtoull(std::string(in.literal).c_str(), nullptr, 10);
                        if (n < args.size()) out = args[n];
                    } else if (in.opcode == "tuple") {
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
                    } else if (in.opcode == "get-tuple-element") {
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
                    // A fusion the pass made joins the multi-output fusion of earlier siblings
                    // that read one of its operands (multi_output_group).
                    std::unordered_set<std::int64_t>* shared =
                        fused ? multi_output_group(c, siblings, mem, static_cast<std::int32_t>(i),
                                                   ext)
                              : nullptr;
                    out = emit_cluster(c, mem, static_cast<std::int32_t>(i), suffix, ext, shared);
                    if (shared) siblings.record(*shared, mem);
                }
            }
        }
        return std::move(vals[static_cast<std::size_t>(c.root)]);
    }

    // An operand from outside a fusion: on chip when generated (broadcast, iota, constant)
    // or held in VMEM (memory space 1), else read from HBM after its producers.
    Place outside(const HloComputation& c, const HloOperand& o, const std::vector<Value>& vals) {
        Place p;
        const Value& v = element(vals[static_cast<std::size_t>(o.instr)], o.tuple_index);
        flatten(v, p.external);
        const HloInstr* x = &c.instrs[static_cast<std::size_t>(o.instr)];
        while ((x->opcode == "bitcast" || x->opcode == "reshape" || noop_copy(c, *x)) &&
               !x->operands.empty())
            x = &c.instrs[static_cast<std::size_t>(x->operands[0].instr)];
        const OpClass cls = op_class(x->opcode);
        p.vmem = !x->shape.tuple && x->shape.memory_space == 1;
        p.on_chip = x->opcode == "constant" || cls == OpClass::Generated || p.vmem;
        return p;
    }

    Value control(const HloComputation& c, const HloInstr& in, std::vector<Value>& vals,
                  const std::string& suffix) {
        std::vector<Value> args;
        for (const auto& o : in.operands)
            args.push_back(element(vals[static_cast<std::size_t>(o.instr)], o.tuple_index));
        auto callee = [&](const char* attr) {
            const HloAttr* a = in.attr(attr);
            std::string_view v = a ? a->value : std::string_view{};
            if (!v.empty() && v.front() == '%') v.remove_prefix(1);
            const std::int32_t k = m_.find_computation(v);
            if (k < 0)
                m_.fail(in.offset, fmt::format("{} needs {}=<computation>", in.opcode, attr));
            return k;
        };
        if (in.opcode == "fusion") {
            const std::int32_t k = callee("calls");
            const HloComputation& f = m_.computations[static_cast<std::size_t>(k)];
            std::vector<std::int32_t> all(f.instrs.size());
            for (std::size_t j = 0; j < all.size(); ++j) all[j] = static_cast<std::int32_t>(j);
            return emit_cluster(f, all, f.root, suffix, [&](const HloOperand& o) {
                return fused_parameter(f, o, c, in, vals);
            });
        }
        if (in.opcode == "while") {
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
        if (in.opcode == "conditional") {
            std::int32_t branch = -1;
            std::size_t pick = 0;
            const auto& callees = in.callees;
            if (callees.empty()) m_.fail(in.offset, "conditional needs branch computations");
            // A constant predicate or index decides; otherwise the largest branch (an upper
            // bound on its time).
            const HloInstr& p = c.instrs[static_cast<std::size_t>(in.operands.at(0).instr)];
            if (p.opcode == "constant" && p.shape.dims.empty()) {
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
        if (in.callees.empty())
            m_.fail(in.offset, fmt::format("{} calls no computation", in.opcode));
        Value v = walk(in.callees.front(), args, suffix);
        if (in.opcode == "async-start") return merged({&v});
        return v;
    }

    Place fused_parameter(const HloComputation& f, const HloOperand& o, const HloComputation& c,
                          const HloInstr& fusion, const std::vector<Value>& vals) {
        const HloInstr& p = f.instrs[static_cast<std::size_t>(o.instr)];
        const std::size_t n = std::strtoull(std::string(p.literal).c_str(), nullptr, 10);
        if (p.opcode != "parameter" || n >= fusion.operands.size()) return Place{};
        Place pl = outside(c, fusion.operands[n], vals);
        if (!p.shape.tuple && p.shape.memory_space == 1) pl.on_chip = pl.vmem = true;
        return pl;
    }

    Value custom_call(const HloComputation& c, const HloInstr& in, Value operands,
                      const std::string& suffix) {
        const HloAttr* a = in.attr("custom_call_target");
        std::string_view target = a ? a->value : std::string_view{};
        if (target.size() >= 2 && target.front() == '"')
            target = target.substr(1, target.size() - 2);
        if (free_custom_call(target)) {
            ++stats_.free_instructions;
            return operands;
        }
        ++stats_.unmodelled_custom_calls;
        if (warned_.insert(in.offset).second)  // once per instruction, not per loop trip
            stats_.warnings.push_back(fmt::format(
                "{}: warning: custom-call {} with target \"{}\" is not modelled (costed as "
                "free)",
                m_.location(in.offset), in.name, target));
        (void)c;
        (void)suffix;
        return operands;
    }

    std::optional<Value> repeat(const HloInstr& w, std::int32_t body, const Value& state,
                                std::int64_t trips, const std::string& suffix);

    // `on_chip`: the fusion's operands (keys of read_key) already on chip when it starts (a
    // sibling of the same multi-output fusion read them); the operands it reads from HBM are
    // added to it. Null: none.
    Value emit_cluster(const HloComputation& c, const std::vector<std::int32_t>& members,
                       std::int32_t root, const std::string& suffix,
                       const std::function<Place(const HloOperand&)>& ext,
                       std::unordered_set<std::int64_t>* on_chip = nullptr);

    const HloModule& m_;
    const HloImportOptions& opts_;
    HloImportStats& stats_;
    Trace trace_;
    std::unordered_set<std::string> ids_;
    std::unordered_map<std::string, std::int64_t> next_copy_;
    std::unordered_set<std::uint32_t> warned_;
    // Trace ops that already hand their tiles to a fused consumer (the program runs one fused
    // consumer per producer; docs/trace-format.md).
    std::unordered_set<std::uint32_t> claimed_;
    int depth_ = 0;         // walk() calls open
    bool in_loop_ = false;  // walking the body of a repeated loop: inner loops are unrolled
    bool has_fusions_ = false, pass_ = false;
    mutable std::size_t line_pos_ = 0;
    mutable int line_no_ = 1;
};

// A while loop as a trace loop: the body's ops once, run `trips` times. The body is walked
// twice, from the loop's initial state (trip 0, the ops kept) and from the state trip 0
// leaves (a scratch copy, dropped): a dep of the scratch copy on an op of trip 0 is a
// loop-carried dep. Nullopt (the caller unrolls) when the two walks differ in their ops.
std::optional<Value> Importer::repeat(const HloInstr& w, std::int32_t body, const Value& state,
                                      std::int64_t trips, const std::string& suffix) {
    const auto n0 = static_cast<std::uint32_t>(trace_.ops.size());
    in_loop_ = true;
    struct Leave {
        bool& flag;
        ~Leave() { flag = false; }
    } leave{in_loop_};
    const Value first = walk(body, {state}, suffix);
    const auto n1 = static_cast<std::uint32_t>(trace_.ops.size());
    Value next = walk(body, {first}, fmt::format("{}@repeat", suffix));
    const auto n2 = static_cast<std::uint32_t>(trace_.ops.size());
    const std::uint32_t count = n1 - n0;
    bool same = n2 - n1 == count;
    for (std::uint32_t k = 0; same && k < count; ++k) {
        const TraceOp& a = trace_.ops[n0 + k];
        const TraceOp& b = trace_.ops[n1 + k];
        same = a.kind == b.kind && a.fused == b.fused;
    }
    // The scratch ops go (their ids and fusion claims with them).
    auto drop_from = [&](std::uint32_t from) {
        for (std::uint32_t k = from; k < static_cast<std::uint32_t>(trace_.ops.size()); ++k) {
            ids_.erase(trace_.ops[k].id);
            claimed_.erase(k);
        }
    };
    drop_from(n1);
    if (!same) {  // not the same ops trip after trip: the caller unrolls
        drop_from(n0);
        trace_.ops.resize(n0);
        return std::nullopt;
    }
    for (std::uint32_t k = 0; k < count; ++k) {
        TraceOp& a = trace_.ops[n0 + k];
        for (std::size_t d : trace_.ops[n1 + k].deps) {
            if (d >= n0 && d < n1) {  // the previous trip's op
                if (std::find(a.carried.begin(), a.carried.end(), d) == a.carried.end())
                    a.carried.push_back(d);
            } else if (d < n0 && std::find(a.deps.begin(), a.deps.end(), d) == a.deps.end()) {
                a.deps.push_back(d);  // before the loop (read again in every trip)
            }
        }
    }
    // A body op that reads a carried value reads it by position (docs/trace-format.md).
    for (std::uint32_t k = 0; k < count; ++k)
        if (!trace_.ops[n0 + k].carried.empty()) trace_.ops[n0 + k].operands.clear();
    trace_.ops.resize(n1);
    remap(next, n1, n2, n1 - n0);  // after the loop: the last trip's ops
    if (count > 0) {
        TraceLoop l;
        l.id = unique_id(w.name, suffix);
        l.first = n0;
        l.count = count;
        l.trips = trips;
        trace_.loops.push_back(std::move(l));
    }
    return next;
}

// A fusion as trace ops: each costed member becomes one op; a member whose operands come
// from ops of the same fusion is `fused` onto them (its primary operand stays on chip), the
// others read their operands from HBM and wait for the fusion's inputs.
Value Importer::emit_cluster(const HloComputation& c, const std::vector<std::int32_t>& members,
                             std::int32_t root, const std::string& suffix,
                             const std::function<Place(const HloOperand&)>& ext,
                             std::unordered_set<std::int64_t>* on_chip) {
    std::unordered_map<std::int32_t, Place> st;
    // A fused kernel reads each of its operands from HBM once, however many of its ops use
    // it: the first op that reads an operand brings its tiles in, later ones find them on
    // chip. Operands are keyed by the value they read (read_key), through bitcasts and
    // reshapes inside the fusion.
    std::unordered_set<std::int64_t> local;
    std::unordered_set<std::int64_t>& read = on_chip ? *on_chip : local;
    std::unordered_set<std::int32_t> in_cluster(members.begin(), members.end());
    auto key_of = [&](HloOperand o) {
        while (in_cluster.count(o.instr)) {
            const HloInstr& x = c.instrs[static_cast<std::size_t>(o.instr)];
            const bool through = x.opcode == "bitcast" || x.opcode == "reshape" || noop_copy(c, x);
            if (!through || x.operands.empty()) break;
            o = x.operands[0];
        }
        return read_key(o);
    };
    std::vector<std::uint32_t> unfused, ext_deps;
    // The trace op that holds each HBM operand of an op (in operand order; -1: a parameter
    // or constant no op produces), made into the op's `operands` once its deps are final.
    std::unordered_map<std::uint32_t, std::vector<std::int64_t>> reads;
    auto costed_class = [](const HloInstr& in) {
        const OpClass k = op_class(in.opcode);
        return k == OpClass::Elementwise || k == OpClass::Movement || k == OpClass::Heavy ||
               k == OpClass::Reduction || k == OpClass::Collective || k == OpClass::Host ||
               k == OpClass::Generated;
    };
    int costed = 0;
    for (std::int32_t j : members) {
        const HloInstr& in = c.instrs[static_cast<std::size_t>(j)];
        costed += (costed_class(in) && op_class(in.opcode) != OpClass::Generated &&
                   !noop_copy(c, in)) ||
                          in.opcode == "fusion"
                      ? 1
                      : 0;
    }
    const bool chained = costed > 1;
    auto place_of = [&](const HloOperand& o) -> Place {
        const auto it = st.find(o.instr);
        if (it != st.end()) return it->second;
        Place p = ext(o);
        ext_deps.insert(ext_deps.end(), p.external.begin(), p.external.end());
        return p;
    };
    for (std::int32_t j : members) {
        const HloInstr& in = c.instrs[static_cast<std::size_t>(j)];
        Place self;
        if (in.opcode == "parameter") {
            self = place_of(HloOperand{j, -1});
            self.external.clear();
            st[j] = self;
            continue;
        }
        std::vector<Place> ps;
        for (const auto& o : in.operands) ps.push_back(place_of(o));
        // Operands this op would read from HBM that an earlier op of the kernel read already.
        // Not for a dot or convolution, whose operand tiles are not the elementwise tiles.
        const bool vector_work = op_class(in.opcode) != OpClass::Heavy;
        std::vector<std::int64_t> hbm_reads;
        for (std::size_t k = 0; k < ps.size() && vector_work; ++k) {
            Place& p = ps[k];
            if (p.on_chip || !p.internal.empty()) continue;
            const std::int64_t key = key_of(in.operands[k]);
            if (read.count(key))
                p.on_chip = true;
            else
                hbm_reads.push_back(key);
        }
        if (in.opcode == "fusion" && !in.callees.empty()) {  // nested fusion: inline
            const HloComputation& f = m_.computations[static_cast<std::size_t>(in.callees[0])];
            std::vector<std::int32_t> all(f.instrs.size());
            for (std::size_t k = 0; k < all.size(); ++k) all[k] = static_cast<std::int32_t>(k);
            const Value v = emit_cluster(f, all, f.root, suffix, [&](const HloOperand& po) {
                const HloInstr& p = f.instrs[static_cast<std::size_t>(po.instr)];
                const std::size_t n = std::strtoull(std::string(p.literal).c_str(), nullptr, 10);
                Place q = n < ps.size() ? ps[n] : Place{};
                q.external = q.internal;
                q.internal.clear();
                return q;
            });
            self.internal = v.ops;
            self.on_chip = true;
            st[j] = self;
            continue;
        }
        std::vector<std::uint32_t> internal;
        for (const auto& p : ps)
            internal.insert(internal.end(), p.internal.begin(), p.internal.end());
        unique_keep_order(internal);
        std::optional<TraceOp> op;
        if (costed_class(in) && !noop_copy(c, in)) {
            std::vector<OperandPlace> places;
            for (const auto& p : ps) places.push_back({p.on_chip || !p.internal.empty()});
            // Broadcasts and iotas are made in registers by the fusion's other ops.
            const bool gen = op_class(in.opcode) == OpClass::Generated;
            const CostContext ctx{m_, opts_, trace_.cores, gen ? costed > 0 : chained,
                                  !internal.empty()};
            op = cost_instruction(in, c, places, ctx);
        }
        if (!op) {  // free in a fusion, or no work
            self.internal = internal;
            self.on_chip =
                ps.empty() || op_class(in.opcode) == OpClass::Generated || in.opcode == "constant";
            for (const auto& p : ps) self.on_chip = self.on_chip || p.on_chip;
            st[j] = self;
            continue;
        }
        op->id = unique_id(in.name, suffix);
        op->line = line_of(in.offset);
        // Only vector ops run on their producer's tiles (docs/trace-format.md): a dot or
        // convolution whose operand the fusion computes reads it from HBM.
        op->fused = chained && !internal.empty() && op->kind == OpKind::Vector;
        // S(1) (VMEM) operands of a matmul or convolution are not read from HBM, and an S(1)
        // result is not written back (elementwise ops already leave S(1) operands out).
        if (op->kind == OpKind::Matmul || op->kind == OpKind::Conv2d)
            for (int k = 0; k < 2 && k < static_cast<int>(ps.size()); ++k)
                if (ps[static_cast<std::size_t>(k)].vmem) op->vmem_operands.push_back(k);
        op->result_in_vmem = !in.shape.tuple && in.shape.memory_space == 1;
        // A vector op that is not fused and whose operands are all on chip (S(1), made in
        // registers, or read by an earlier op of its kernel) streams nothing from HBM.
        if (op->kind == OpKind::Vector && !op->fused &&
            vector_op_info(op->vector.op).inputs == 1 && !ps.empty() &&
            std::all_of(ps.begin(), ps.end(),
                        [](const Place& p) { return p.on_chip || !p.internal.empty(); }))
            op->vmem_operands = {0};
        if (op->kind != OpKind::Matmul && op->kind != OpKind::Conv2d)
            read.insert(hbm_reads.begin(), hbm_reads.end());
        const auto idx = static_cast<std::uint32_t>(trace_.ops.size());
        if (op->fused) {
            // A value used twice inside one fusion stays on chip for both uses, as in XLA's
            // fused kernel (one loop over the tiles computes every member). The op is fused
            // onto the latest operand from the fusion that does not yet feed a fused consumer
            // (the program fuses an op whose other deps come before its producer); operands
            // whose producer already feeds one are not deps (they are on chip, costed so by
            // cost_instruction), so they are not written to HBM for this op. When every
            // operand already feeds a fused consumer, the op is not fused: it reads them from
            // HBM, as the lowering would (docs/trace-format.md).
            auto free_one = internal.end();
            for (auto it = internal.begin(); it != internal.end(); ++it)
                if (!claimed_.count(*it) && (free_one == internal.end() || *it > *free_one))
                    free_one = it;
            if (free_one != internal.end()) {
                std::vector<std::uint32_t> keep{*free_one};
                for (std::uint32_t d : internal)
                    if (d != *free_one && !claimed_.count(d)) keep.push_back(d);
                internal = std::move(keep);
                claimed_.insert(internal.front());
            } else {
                op->fused = false;  // every producer feeds another fused op: read from HBM
            }
        }
        for (std::uint32_t d : internal) op->deps.push_back(d);
        // A fused op reads its other operands from HBM inside its producer's loop: it waits
        // for the ops that hold them, after its producer, so that `operands` names the
        // buffer it reads (not a parameter of its own).
        if (op->fused)
            for (const auto& p : ps)
                if (!p.on_chip && p.internal.empty())
                    for (std::uint32_t e : p.external)
                        if (std::find(op->deps.begin(), op->deps.end(), e) == op->deps.end())
                            op->deps.push_back(e);
        reads[idx] = operand_sources(in, *op, ps, trace_.ops);
        if (!op->fused) unfused.push_back(idx);
        trace_.ops.push_back(std::move(*op));
        self.internal = {idx};
        self.on_chip = true;
        st[j] = self;
    }
    std::sort(ext_deps.begin(), ext_deps.end());
    ext_deps.erase(std::unique(ext_deps.begin(), ext_deps.end()), ext_deps.end());
    for (std::uint32_t u : unfused) {
        auto& deps = trace_.ops[u].deps;
        deps.insert(deps.end(), ext_deps.begin(), ext_deps.end());
        std::sort(deps.begin(), deps.end());
        deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    }
    for (const auto& [u, r] : reads) set_operands(trace_.ops[u], r);
    Value out;
    const auto it = st.find(root);
    out.ops = it == st.end() || it->second.internal.empty() ? ext_deps : it->second.internal;
    return out;
}

}  // namespace

Trace hlo_to_trace(const HloModule& m, const HloImportOptions& opts, std::int64_t board_cores,
                   HloImportStats* stats) {
    HloImportStats local;
    HloImportStats& st = stats ? *stats : local;
    // The program's cores: the SPMD partitions, else the replicas, else the devices named by
    // replica groups (modules written after partitioning without the header attributes).
    std::int64_t cores = 1;
    for (const char* key : {"num_partitions", "replica_count"}) {
        if (const HloAttr* a = m.attr(key)) {
            const auto v = hlo_detail::int_list(a->value, m, a->offset);
            if (v.size() == 1) cores = std::max(cores, v[0]);
        }
    }
    if (cores == 1) {
        for (const auto& c : m.computations)
            for (const auto& in : c.instrs)
                for (const char* key : {"replica_groups", "source_target_pairs"})
                    if (const HloAttr* a = in.attr(key))
                        for (const auto& g : hlo_detail::replica_groups(a->value, m, a->offset))
                            for (std::int64_t id : g) cores = std::max(cores, id + 1);
    }
    if (cores > board_cores)
        throw InputError(m.path, "",
                         fmt::format("the module is a program for {} devices (num_partitions, "
                                     "replica_count or its replica groups) but the board has {} "
                                     "cores: use a config with at least {} cores (e.g. "
                                     "configs/tpu_v3_32.json, configs/tpu_v3_1024.json)",
                                     cores, board_cores, cores));
    return Importer(m, opts, cores, st).run();
}

}  // namespace tpusim
