// The fusion pass for modules written before XLA's optimisation passes (no fusion
// instructions): producers join the fusion of their consumers the way XLA's instruction
// fusion decides it on a TPU, so a pre-optimisation module is not replayed op by op through
// HBM (docs/hlo.md, "Passes").
//   - elementwise ops, converts, data movement, bitcasts and reshapes join the fusion of their
//     users when all their users are in that one fusion;
//   - a cheap elementwise op (not one of XLA's expensive ones: divide, exp, log, tanh, sqrt,
//     ...) whose users are all fused but in several fusions, none of them around a dot or
//     convolution (XLA fuses producers into loop and input fusions only), is duplicated into
//     each of them,
//     as XLA's instruction fusion does for producers that are not expensive
//     (xla/service/instruction_fusion.cc: it refuses to duplicate only an expensive producer),
//     so its result is never stored;
//   - broadcasts and iotas are made in registers inside every fusion that uses them;
//   - a dot or convolution joins an elementwise consumer's fusion (output fusion: bias,
//     activation), at most one per fusion; reductions, collectives and control flow end a
//     fusion (a reduction can be its root, as in XLA's input fusion).
#include <algorithm>
#include <string_view>

#include "hlo_import.h"

namespace tpusim::hlo_detail {

namespace {

// XLA's HloInstruction::IsOpElementwise ops that it counts as expensive
// (HloInstruction::IsExpensive): never duplicated.
bool expensive(std::string_view op) {
    for (std::string_view e : {"divide",
                               "power",
                               "sqrt",
                               "rsqrt",
                               "cbrt",
                               "exponential",
                               "exponential-minus-one",
                               "log",
                               "log-plus-one",
                               "tanh",
                               "atan2",
                               "sine",
                               "cosine",
                               "tan",
                               "erf",
                               "logistic",
                               "remainder",
                               "rng",
                               "rng-bit-generator",
                               "map"})
        if (op == e) return true;
    return false;
}

}  // namespace

std::vector<std::vector<std::int32_t>> fusion_clusters(const HloComputation& comp) {
    const std::size_t n = comp.instrs.size();
    std::vector<std::vector<std::int32_t>> users(n);
    for (std::size_t i = 0; i < n; ++i)
        for (const auto& o : comp.instrs[i].operands)
            users[static_cast<std::size_t>(o.instr)].push_back(static_cast<std::int32_t>(i));
    std::vector<std::vector<std::int32_t>> cluster(n);
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
            // The fusions of its users, each once, in the order first met.
            std::vector<std::int32_t> into;
            bool all_fused = true;
            for (std::int32_t u : users[i]) {
                const auto& cu = cluster[static_cast<std::size_t>(u)];
                all_fused = all_fused && !cu.empty();
                for (std::int32_t c : cu)
                    if (std::find(into.begin(), into.end(), c) == into.end()) into.push_back(c);
            }
            bool join = all_fused && into.size() == 1;
            if (join && cls == OpClass::Heavy)
                join = !has_heavy[static_cast<std::size_t>(into[0])] &&
                       root_class[static_cast<std::size_t>(into[0])] == OpClass::Elementwise;
            // Not into the output fusion of a dot or convolution: XLA's ShouldFuse fuses a
            // producer only into loop and input fusions.
            bool duplicate = all_fused && into.size() > 1 && cls == OpClass::Elementwise &&
                             !expensive(in.opcode);
            for (std::int32_t c : into)
                duplicate = duplicate && !has_heavy[static_cast<std::size_t>(c)];
            if (join || duplicate) {
                cluster[i] = std::move(into);
                if (cls == OpClass::Heavy)
                    has_heavy[static_cast<std::size_t>(cluster[i][0])] = true;
                continue;
            }
        }
        if (look_through) continue;
        cluster[i] = {static_cast<std::int32_t>(i)};
        has_heavy[i] = cls == OpClass::Heavy;
        root_class[i] = cls;
    }
    return cluster;
}

}  // namespace tpusim::hlo_detail
