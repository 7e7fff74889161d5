// The fusion pass for modules written before XLA's optimisation passes (no fusion
// instructions): producers join the fusion of their consumers the way XLA's instruction
// fusion decides it on a TPU, so a pre-optimisation module is not replayed op by op through
// HBM (docs/hlo.md, "Passes").
//   - elementwise ops, converts, data movement, bitcasts and reshapes join the fusion of their
//     users when all their users are in that one fusion (no duplication of work);
//   - broadcasts and iotas are made in registers inside every fusion that uses them;
//   - a dot or convolution joins an elementwise consumer's fusion (output fusion: bias,
//     activation), at most one per fusion; reductions, collectives and control flow end a
//     fusion (a reduction can be its root, as in XLA's input fusion).
#include <string_view>

#include "hlo_import.h"

namespace tpusim::hlo_detail {

std::vector<std::int32_t> fusion_clusters(const HloComputation& comp) {
    const std::size_t n = comp.instrs.size();
    std::vector<std::vector<std::int32_t>> users(n);
    for (std::size_t i = 0; i < n; ++i)
        for (const auto& o : comp.instrs[i].operands)
            users[static_cast<std::size_t>(o.instr)].push_back(static_cast<std::int32_t>(i));
    std::vector<std::int32_t> cluster(n, -1);
    std::vector<bool> has_heavy(n, false);
    std::vector<OpClass> root_class(n, OpClass::Free);
    for (std::size_t i = n; i-- > 0;) {
        const HloInstr& in = comp.instrs[i];
        const OpClass cls = op_class(in.opcode);
        const bool look_through = in.opcode == "bitcast" || in.opcode == "reshape";
        const bool can_root = cls == OpClass::Elementwise || cls == OpClass::Movement ||
                              cls == OpClass::Heavy || cls == OpClass::Reduction;
        if (!can_root && !look_through) continue;
        const bool producer = cls == OpClass::Elementwise || cls == OpClass::Movement ||
                              cls == OpClass::Heavy || look_through;
        if (producer && !in.root && !users[i].empty()) {
            const std::int32_t c = cluster[static_cast<std::size_t>(users[i][0])];
            bool same = c >= 0;
            for (std::int32_t u : users[i])
                same = same && cluster[static_cast<std::size_t>(u)] == c;
            if (same && cls == OpClass::Heavy)
                same = !has_heavy[static_cast<std::size_t>(c)] &&
                       root_class[static_cast<std::size_t>(c)] == OpClass::Elementwise;
            if (same) {
                cluster[i] = c;
                if (cls == OpClass::Heavy) has_heavy[static_cast<std::size_t>(c)] = true;
                continue;
            }
        }
        if (look_through) continue;
        cluster[i] = static_cast<std::int32_t>(i);
        has_heavy[i] = cls == OpClass::Heavy;
        root_class[i] = cls;
    }
    return cluster;
}

}  // namespace tpusim::hlo_detail
