// HLO module -> trace (docs/hlo.md): hlo_to_trace, and each fusion (explicit, or made by the
// fusion pass) as a small group of trace ops whose intermediate results stay on chip
// (Importer::emit_cluster). The walker that calls it is hlo_importer.cpp, the trace loops in
// hlo_while.cpp.
#include <fmt/format.h>

#include <algorithm>

#include "hlo_importer.h"

namespace tpusim {

namespace hlo_detail {

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
        while (in_cluster.count(o.instr) &&
               is_view(c, c.instrs[static_cast<std::size_t>(o.instr)], pass_))
            o = c.instrs[static_cast<std::size_t>(o.instr)].operands[0];
        return read_key(o);
    };
    std::vector<std::uint32_t> unfused, ext_deps;
    // Vector ops of the kernel whose result a later member takes in registers (not as a dep):
    // not written to HBM unless the fusion outputs them or another member reads them from HBM.
    std::vector<std::uint32_t> side;
    const auto first_op = static_cast<std::uint32_t>(trace_.ops.size());
    auto side_ok = [&](std::uint32_t d) {
        return opts_.kernel_graphs && d >= first_op && trace_.ops[d].kind == OpKind::Vector;
    };
    // The trace op that holds each HBM operand of an op (in operand order; -1: a parameter
    // or constant no op produces), made into the op's `operands` once its deps are final.
    std::unordered_map<std::uint32_t, std::vector<std::int64_t>> reads;
    auto costed_class = [](const HloInstr& in) {
        const OpClass k = op_class(in.op);
        return k == OpClass::Elementwise || k == OpClass::Movement || k == OpClass::Heavy ||
               k == OpClass::Reduction || k == OpClass::Collective || k == OpClass::Host ||
               k == OpClass::Generated;
    };
    int costed = 0;
    for (std::int32_t j : members) {
        const HloInstr& in = c.instrs[static_cast<std::size_t>(j)];
        costed +=
            (costed_class(in) && op_class(in.op) != OpClass::Generated && !noop_copy(c, in)) ||
                    in.op == HloOpcode::Fusion
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
        if (in.op == HloOpcode::Parameter) {
            self = place_of(HloOperand{j, -1});
            self.external.clear();
            st[j] = self;
            continue;
        }
        std::vector<Place> ps;
        for (const auto& o : in.operands) ps.push_back(place_of(o));
        // Operands this op would read from HBM that an earlier op of the kernel read already.
        // Not for a dot or convolution, whose operand tiles are not the elementwise tiles.
        const bool vector_work = op_class(in.op) != OpClass::Heavy;
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
        if (in.op == HloOpcode::Fusion && !in.callees.empty()) {  // nested fusion: inline
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
            const bool gen = op_class(in.op) == OpClass::Generated;
            const CostContext ctx{m_, opts_, trace_.cores, gen ? costed > 0 : chained,
                                  !internal.empty()};
            op = cost_instruction(in, c, places, ctx);
        }
        if (!op) {  // free in a fusion, or no work
            self.internal = internal;
            self.on_chip =
                ps.empty() || op_class(in.op) == OpClass::Generated || in.op == HloOpcode::Constant;
            for (const auto& p : ps) self.on_chip = self.on_chip || p.on_chip;
            st[j] = self;
            continue;
        }
        op->id = unique_id(in.name, suffix);
        op->line = line_of(in.offset);
        // Only vector ops run on their producer's tiles (docs/trace-format.md): a dot or
        // convolution whose operand the fusion computes reads it from HBM.
        op->fused = chained && !internal.empty() && op->kind == OpKind::Vector;
        // Producer-consumer multi-output fusion: a vector op that reads its primary operand
        // from HBM takes it on chip from the kernel that computes it, which also stores it
        // for its other readers.
        if (!op->fused && op->kind == OpKind::Vector && internal.empty() && !ps.empty())
            if (auto e = producer_to_join(c, in, ps)) {
                op->fused = true;
                internal = {*e};
                ps[0].internal = {*e};
                ++stats_.producer_fusions;
            }
        // S(1) (VMEM) operands of a matmul or convolution are not read from HBM, and an S(1)
        // result is not written back (elementwise ops already leave S(1) operands out).
        if (op->kind == OpKind::Matmul || op->kind == OpKind::Conv2d)
            for (int k = 0; k < 2 && k < static_cast<int>(ps.size()); ++k)
                if (ps[static_cast<std::size_t>(k)].vmem) op->vmem_operands.push_back(k);
        op->result_in_vmem = !in.shape.tuple && in.shape.memory_space == 1;
        // A vector op that is not fused and whose operands are all on chip (S(1), made in
        // registers, or read by an earlier op of its kernel) streams nothing from HBM.
        if (op->kind == OpKind::Vector && !op->fused && vector_inputs(op->vector) == 1 &&
            !ps.empty() && std::all_of(ps.begin(), ps.end(), [](const Place& p) {
                return p.on_chip || !p.internal.empty();
            }))
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
                for (std::uint32_t d : internal) {
                    if (d == *free_one || claimed_.count(d)) continue;
                    // Another value the kernel computes (a second chain of the same loop
                    // over the tiles, as in XLA's fused kernel, which is a graph, not a
                    // chain): it stays in registers for this op when nothing outside the
                    // fusion reads it, instead of going through HBM.
                    if (side_ok(d)) {
                        side.push_back(d);
                        claimed_.insert(d);
                        continue;
                    }
                    keep.push_back(d);
                }
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
    if (!side.empty()) {
        std::unordered_set<std::uint32_t> written(out.ops.begin(), out.ops.end());
        for (std::uint32_t u = first_op; u < trace_.ops.size(); ++u) {
            const TraceOp& t = trace_.ops[u];
            for (std::size_t k = 0; k < t.deps.size(); ++k)
                if (!(t.fused && k == 0)) written.insert(static_cast<std::uint32_t>(t.deps[k]));
        }
        for (std::uint32_t d : side)
            if (!written.count(d)) trace_.ops[d].result_in_vmem = true;
    }
    return out;
}

}  // namespace hlo_detail

Trace hlo_to_trace(const HloModule& m, const HloImportOptions& opts, std::int64_t board_cores,
                   HloImportStats* stats) {
    HloImportStats local;
    HloImportStats& st = stats ? *stats : local;
    const std::int64_t cores = hlo_detail::program_cores(m);
    if (cores > board_cores)
        throw InputError(m.path, "",
                         fmt::format("the module is a program for {} devices (num_partitions, "
                                     "replica_count or its replica groups) but the board has {} "
                                     "cores: use a config with at least {} cores (e.g. "
                                     "configs/tpu_v3_32.json, configs/tpu_v3_1024.json)",
                                     cores, board_cores, cores));
    return hlo_detail::Importer(m, opts, cores, st).run();
}

}  // namespace tpusim
