// Which buffer each HBM operand of an imported op reads: the trace's `operands` list
// (docs/trace-format.md, "Which buffer an operand reads"), written where reading operand j
// from deps[j] would be wrong.
#include <algorithm>

#include "hlo_import.h"

namespace tpusim::hlo_detail {

std::int64_t value_holder(const Place& p, const std::vector<TraceOp>& ops) {
    if (!p.internal.empty()) return p.internal.front();
    std::int64_t best = -1;
    for (std::uint32_t e : p.external)
        if (best < 0 || op_bytes_out(ops[e]) > op_bytes_out(ops[static_cast<std::size_t>(best)]))
            best = e;
    return best;
}

std::vector<std::int64_t> operand_sources(const HloInstr& in, const TraceOp& op,
                                          const std::vector<Place>& ps,
                                          const std::vector<TraceOp>& ops) {
    auto holder = [&](const Place& p) { return value_holder(p, ops); };
    std::vector<std::int64_t> r;
    if (op.kind == OpKind::Matmul || op.kind == OpKind::Conv2d) {
        for (std::size_t k = 0; k < 2 && k < ps.size(); ++k) r.push_back(holder(ps[k]));
    } else if (in.op == HloOpcode::DynamicUpdateSlice && ps.size() > 1) {
        r.push_back(holder(ps[1]));  // the update, written in place
    } else if (in.op == HloOpcode::Scatter && !ps.empty()) {
        r.push_back(holder(ps.back()));
    } else {
        if (op.fused) r.push_back(op.deps.front());  // the primary, on chip
        std::vector<std::int32_t> seen;
        for (std::size_t k = 0; k < ps.size(); ++k) {
            if (ps[k].on_chip || !ps[k].internal.empty()) continue;
            const std::int32_t src = in.operands[k].instr;
            if (std::find(seen.begin(), seen.end(), src) != seen.end()) continue;
            seen.push_back(src);
            r.push_back(holder(ps[k]));
        }
    }
    return r;
}

void set_operands(TraceOp& op, const std::vector<std::int64_t>& sources) {
    std::vector<int> pos;
    for (std::int64_t src : sources) {
        const auto it = std::find(op.deps.begin(), op.deps.end(), static_cast<std::size_t>(src));
        pos.push_back(src < 0 || it == op.deps.end() ? -1 : static_cast<int>(it - op.deps.begin()));
    }
    // Positional reads (operand j = deps[j]) need no list.
    bool positional = op.deps.size() <= pos.size();
    for (std::size_t j = 0; j < pos.size(); ++j)
        positional = positional && pos[j] == (j < op.deps.size() ? static_cast<int>(j) : -1);
    if (!positional) op.operands = std::move(pos);
}

}  // namespace tpusim::hlo_detail
