#include "tpusim/program/fusion.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "tpusim/common/types.h"
#include "tpusim/common/wording.h"

namespace tpusim {

std::vector<std::size_t> first_fused_consumers(const std::vector<OpSpec>& ops) {
    std::vector<std::size_t> first(ops.size(), SIZE_MAX);
    for (std::size_t i = 0; i < ops.size(); ++i) {
        if (!ops[i].fused || ops[i].deps.empty()) continue;
        std::size_t& f = first[ops[i].deps[0]];
        if (f == SIZE_MAX) f = i;
    }
    return first;
}

std::string fusion_blocker(const std::vector<OpSpec>& ops, std::size_t i,
                           const std::vector<std::size_t>& first_fused, const TpuConfig& cfg) {
    const OpSpec& op = ops[i];
    if (op.kind != OpKind::Vector) {
        return fmt::format(
            "only vector ops fuse into their producer; this {} reads its operands from HBM",
            op_kind_name(op.kind));
    }
    if (op.deps.empty()) return "a fused op needs a producer in deps";
    const std::size_t p = op.deps[0];
    const OpSpec& prod = ops[p];
    if (!(prod.kind == OpKind::Matmul || prod.kind == OpKind::Vector)) {
        return fmt::format("its producer \"{}\" is {}: only matmul and vector results stay in VMEM",
                           prod.id, with_article(op_kind_name(prod.kind)));
    }
    if (first_fused[p] != i) {
        return fmt::format("its producer \"{}\" already hands its tiles to the fused op \"{}\"",
                           prod.id, ops[first_fused[p]].id);
    }
    if (prod.cores != op.cores) return fmt::format("it runs on other cores than \"{}\"", prod.id);
    // It is lowered inside the producer's loop, so its other operands must be ready before
    // the producer (else it would not wait for them).
    if (std::any_of(op.deps.begin() + 1, op.deps.end(), [p](std::size_t d) { return d >= p; })) {
        return fmt::format("another of its deps runs after its producer \"{}\"", prod.id);
    }
    // Row-wise consumers need whole rows in a tile: a matmul delivers them only if tiles of its
    // full width fit VMEM even at the smallest M and K.
    if (op.rowwise && prod.kind == OpKind::Matmul) {
        const double np = static_cast<double>(round_up(prod.n, cfg.mxu.cols));
        const double ea = static_cast<double>(prod.lhs_bytes);
        const double eb = static_cast<double>(prod.rhs_bytes);
        const double r = static_cast<double>(cfg.mxu.rows);
        const double min_footprint =
            2 * (8 * r * ea) + 2 * (r * np * eb) + 2 * (8 * np * 4) + 8 * np * 8;
        const double cap = static_cast<double>(cfg.vmem.capacity_mib) * kMiB;
        if (min_footprint > cap * cfg.lowering.matmul_vmem_fraction * 2.0) {
            return fmt::format(
                "a row-wise op needs whole rows of \"{}\" ({} columns) in one VMEM "
                "tile, and they do not fit",
                prod.id, prod.n);
        }
    }
    return {};
}

}  // namespace tpusim
