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
//     so its result is never stored, but only where the copies do not move more bytes than
//     storing the result once and reading it in each fusion (duplicated_is_cheaper): the test
//     of XLA's cost-model fusion (xla/service/gpu/priority_fusion.cc fuses a producer into
//     its consumers when the estimated time fused is below the time unfused, and an
//     elementwise kernel's time is its bytes). Without it a cheap op of the backward pass
//     whose users sit in many fusions (a batch-norm gradient) was recomputed in every one of
//     them, and so was every single-user chain behind it: ResNet-50's JAX step ran chains of
//     12.8 M elements up to 38 times;
//   - broadcasts and iotas are made in registers inside every fusion that uses them;
//   - a dot or convolution joins an elementwise consumer's fusion (output fusion: bias,
//     activation), at most one per fusion; reductions, collectives and control flow end a
//     fusion (a reduction can be its root, as in XLA's input fusion).
// The bookkeeping of sibling multi-output fusion (SiblingFusions, hlo_import.h) is here too;
// the importer decides which fusion joins which kernel as it emits them.
#include <algorithm>
#include <string_view>

#include "hlo_import.h"

namespace tpusim::hlo_detail {

namespace {

// The bytes of an operand that a copy of its user reads from HBM: none for values made in
// registers (broadcast, iota, constants), looking through bitcasts and reshapes.
std::int64_t read_bytes(const HloComputation& comp, std::int32_t operand) {
    const std::int64_t bytes = comp.instrs[static_cast<std::size_t>(operand)].shape.bytes();
    const HloInstr& x = viewed(comp, HloOperand{operand, -1}, true);
    if (x.op == HloOpcode::Constant || op_class(x.op) == OpClass::Generated) return 0;
    return bytes;
}

// Whether k copies of `in`, one in each fusion that uses it, move no more bytes than one
// kernel that reads its operands and stores its result, read back once by each of the k
// fusions: k * in <= in + out + k * out, in = the bytes of its distinct operands read from
// HBM, out = its result.
bool duplicated_is_cheaper(const HloComputation& comp, const HloInstr& in, std::size_t k) {
    std::int64_t read = 0;
    std::vector<std::int32_t> seen;
    for (const auto& o : in.operands) {
        if (std::find(seen.begin(), seen.end(), o.instr) != seen.end()) continue;
        seen.push_back(o.instr);
        read += read_bytes(comp, o.instr);
    }
    const auto kk = static_cast<double>(k);
    const auto r = static_cast<double>(read), w = static_cast<double>(in.shape.bytes());
    return kk * r <= r + w + kk * w;
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
        const OpClass cls = op_class(in.op);
        const bool look_through = is_view(comp, in, true);
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
                             !opcode_info(in.op).expensive &&
                             duplicated_is_cheaper(comp, in, into.size());
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

void SiblingFusions::init(const HloComputation& c) {
    users_.assign(c.instrs.size(), {});
    for (std::size_t i = 0; i < c.instrs.size(); ++i)
        for (const auto& o : c.instrs[i].operands)
            users_[static_cast<std::size_t>(o.instr)].push_back(static_cast<std::int32_t>(i));
    seen_.assign(c.instrs.size(), 0);
    target_.assign(c.instrs.size(), 0);
}

bool SiblingFusions::reaches(const std::vector<std::int32_t>& from,
                             const std::vector<std::int32_t>& to) {
    ++stamp_;
    std::int32_t last = 0;
    for (std::int32_t t : to) {
        target_[static_cast<std::size_t>(t)] = stamp_;
        last = std::max(last, t);
    }
    std::vector<std::int32_t> stack;
    for (std::int32_t f : from) {
        const auto fi = static_cast<std::size_t>(f);
        if (target_[fi] == stamp_ || seen_[fi] == stamp_) continue;
        seen_[fi] = stamp_;
        stack.push_back(f);
    }
    while (!stack.empty()) {
        const std::int32_t x = stack.back();
        stack.pop_back();
        for (std::int32_t u : users_[static_cast<std::size_t>(x)]) {
            const auto ui = static_cast<std::size_t>(u);
            if (u > last || seen_[ui] == stamp_) continue;
            if (target_[ui] == stamp_) return true;
            seen_[ui] = stamp_;
            stack.push_back(u);
        }
    }
    return false;
}

std::unordered_set<std::int64_t>* SiblingFusions::join(
    const HloComputation& c, const std::vector<std::int32_t>& mem, std::int32_t root,
    const std::function<bool(const HloOperand&)>& in_hbm, bool& joined) {
    joined = false;
    const HloInstr& r = c.instrs[static_cast<std::size_t>(root)];
    const bool reduce = r.op == HloOpcode::Reduce && !r.operands.empty();
    if (op_class(r.op) != OpClass::Elementwise && !reduce) return nullptr;
    for (std::int32_t j : mem)
        if (op_class(c.instrs[static_cast<std::size_t>(j)].op) == OpClass::Heavy) return nullptr;
    const std::int64_t space =
        (reduce ? c.instrs[static_cast<std::size_t>(r.operands[0].instr)].shape : r.shape)
            .elements_count();
    if (space <= 0) return nullptr;
    if (!forced.empty()) {  // the groups sibling_groups found in text order
        const std::int32_t gid = forced[static_cast<std::size_t>(root)];
        const auto it = gid >= 0 ? live_.find(gid) : live_.end();
        if (it != live_.end()) {
            current = it->second;
            joined = true;
            return &groups[current].read;
        }
        groups.push_back({{}, space, {}});
        current = groups.size() - 1;
        if (gid >= 0) live_[gid] = current;
        return &groups.back().read;
    }
    const std::unordered_set<std::int32_t> in(mem.begin(), mem.end());
    for (std::int32_t j : mem) {
        for (const auto& o : c.instrs[static_cast<std::size_t>(j)].operands) {
            if (in.count(o.instr) || !in_hbm(o)) continue;
            const auto it = readers.find(read_key(o));
            if (it == readers.end()) continue;
            for (std::size_t g : it->second) {
                if (groups[g].space != space || reaches(groups[g].members, mem)) continue;
                current = g;
                joined = true;
                return &groups[g].read;
            }
        }
    }
    groups.push_back({{}, space, {}});
    current = groups.size() - 1;
    return &groups.back().read;
}

void SiblingFusions::record(const std::unordered_set<std::int64_t>& read,
                            const std::vector<std::int32_t>& mem) {
    Group& g = groups[current];
    for (std::int64_t key : read) {
        auto& r = readers[key];
        if (std::find(r.begin(), r.end(), current) == r.end()) r.push_back(current);
    }
    g.members.insert(g.members.end(), mem.begin(), mem.end());
}

bool on_chip_operand(const HloComputation& c, const HloOperand& o, bool copies) {
    const HloInstr& x = viewed(c, o, copies);
    const bool vmem = !x.shape.tuple && x.shape.memory_space == 1;
    return x.op == HloOpcode::Constant || op_class(x.op) == OpClass::Generated || vmem;
}

std::vector<std::int32_t> sibling_groups(const HloComputation& c,
                                         const std::vector<std::vector<std::int32_t>>& cluster) {
    const std::size_t n = c.instrs.size();
    std::vector<std::vector<std::int32_t>> members(n);
    for (std::size_t i = 0; i < n; ++i)
        for (std::int32_t r : cluster[i])
            members[static_cast<std::size_t>(r)].push_back(static_cast<std::int32_t>(i));
    SiblingFusions sib;
    sib.init(c);
    std::vector<std::int32_t> group(n, -1);
    auto in_hbm = [&](const HloOperand& o) { return !on_chip_operand(c, o, true); };
    for (std::size_t i = 0; i < n; ++i) {
        if (cluster[i].empty() || cluster[i][0] != static_cast<std::int32_t>(i)) continue;
        const auto& mem = members[i];
        bool joined = false;
        std::unordered_set<std::int64_t>* read =
            sib.join(c, mem, static_cast<std::int32_t>(i), in_hbm, joined);
        if (!read) continue;
        // What the fusion's kernel reads from HBM, as emit_cluster adds it: each operand from
        // outside (through the fusion's bitcasts and reshapes) that is not made on chip.
        const std::unordered_set<std::int32_t> in(mem.begin(), mem.end());
        for (std::int32_t j : mem) {
            for (HloOperand o : c.instrs[static_cast<std::size_t>(j)].operands) {
                while (in.count(o.instr) &&
                       is_view(c, c.instrs[static_cast<std::size_t>(o.instr)], true))
                    o = c.instrs[static_cast<std::size_t>(o.instr)].operands[0];
                if (in.count(o.instr) || on_chip_operand(c, o, true)) continue;
                read->insert(read_key(o));
            }
        }
        sib.record(*read, mem);
        group[i] = static_cast<std::int32_t>(sib.current);
    }
    // Groups of one fusion are none.
    std::vector<std::int32_t> size(n, 0);
    for (std::int32_t g : group)
        if (g >= 0) ++size[static_cast<std::size_t>(g)];
    for (auto& g : group)
        if (g >= 0 && size[static_cast<std::size_t>(g)] < 2) g = -1;
    return group;
}

}  // namespace tpusim::hlo_detail
