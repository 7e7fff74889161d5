// Collectives: the per-core buffer from the operand shapes and XLA's replica groups (device
// ids of the SPMD program) as the trace's core ids.
#include <fmt/format.h>

#include <algorithm>

#include "hlo_import.h"

namespace tpusim::hlo_detail {

std::optional<TraceOp> collective_op(const HloInstr& in, const CostContext& ctx,
                                     const std::vector<const HloShape*>& operands) {
    TraceOp t;
    t.kind = opcode_info(in.op).collective;
    // ragged-all-to-all and collective-permute carry output buffers as operands: the data is
    // the first operand; the others send the sum of theirs.
    const bool first_only =
        t.kind == OpKind::CollectivePermute || in.op == HloOpcode::RaggedAllToAll;
    std::int64_t bytes = 0;
    const HloType* type = nullptr;
    for (std::size_t k = 0; k < operands.size() && (!first_only || k == 0); ++k) {
        bytes += operands[k]->bytes();
        const HloShape* s = operands[k];
        while (s->tuple && !s->elements.empty()) s = &s->elements.front();
        if (!type && !s->tuple) type = &s->type;
    }
    if (bytes <= 0 || !type) return std::nullopt;
    t.dtype = type->bits == 16       ? (type->name == "f16" ? DType::F16 : DType::Bf16)
              : type->bits >= 32     ? (type->is_float ? DType::F32 : DType::S32)
              : type->name == "pred" ? DType::Pred
                                     : DType::S8;
    const std::int64_t cores = ctx.cores;
    auto in_range = [&](std::int64_t id, std::uint32_t at) {
        if (id >= cores)
            ctx.m.fail(at, fmt::format("{} names device {} but the program runs on {} cores "
                                       "(num_partitions / replica groups)",
                                       in.name, id, cores));
        return static_cast<int>(id);
    };
    std::int64_t group = cores;
    if (t.kind == OpKind::CollectivePermute) {
        const HloAttr* a = in.attr("source_target_pairs");
        if (a)
            for (const auto& [s, d] : pairs_list(a->value, ctx.m, a->offset))
                t.source_target_pairs.emplace_back(in_range(s, a->offset), in_range(d, a->offset));
    } else if (const HloAttr* a = in.attr("replica_groups")) {
        const auto groups = replica_groups(a->value, ctx.m, a->offset);
        std::vector<int> seen;
        for (const auto& g : groups) {
            if (g.empty()) continue;
            if (static_cast<std::int64_t>(g.size()) != static_cast<std::int64_t>(groups[0].size()))
                ctx.m.fail(a->offset, "replica groups of different sizes are not supported");
            std::vector<int> ids;
            for (std::int64_t id : g) {
                const int c = in_range(id, a->offset);
                if (std::find(seen.begin(), seen.end(), c) != seen.end())
                    ctx.m.fail(a->offset,
                               fmt::format("device {} appears twice in replica_groups", c));
                seen.push_back(c);
                ids.push_back(c);
            }
            t.replica_groups.push_back(std::move(ids));
        }
        if (!t.replica_groups.empty()) {
            group = static_cast<std::int64_t>(t.replica_groups[0].size());
            if (static_cast<std::int64_t>(seen.size()) != cores) {
                std::sort(seen.begin(), seen.end());
                t.cores = seen;  // the op runs on the cores its groups name
            }
        }
    }
    // Reduce-scatter and all-to-all split the buffer into one share per member.
    const std::int64_t eb = dtype_bytes(t.dtype);
    std::int64_t unit = eb;
    if (t.kind == OpKind::ReduceScatter || t.kind == OpKind::AllToAll) unit *= group;
    t.bytes = (bytes + unit - 1) / unit * unit;
    return t;
}

std::int64_t program_cores(const HloModule& m) {
    std::int64_t cores = 1;
    for (const char* key : {"num_partitions", "replica_count"}) {
        if (const HloAttr* a = m.attr(key)) {
            const auto v = int_list(a->value, m, a->offset);
            if (v.size() == 1) cores = std::max(cores, v[0]);
        }
    }
    if (cores == 1) {
        for (const auto& c : m.computations)
            for (const auto& in : c.instrs)
                for (const char* key : {"replica_groups", "source_target_pairs"})
                    if (const HloAttr* a = in.attr(key))
                        for (const auto& g : replica_groups(a->value, m, a->offset))
                            for (std::int64_t id : g) cores = std::max(cores, id + 1);
    }
    return cores;
}

}  // namespace tpusim::hlo_detail
