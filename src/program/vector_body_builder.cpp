#include "vector_body_builder.h"

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <string>

namespace tpusim {

namespace {
// Informational VMEM addresses: inputs from 0, outputs from here (VMEM banking is not
// modelled; the timing model uses only the byte counts).
constexpr Addr kStoreRegion = Addr{1} << 32;
// At most this many copies of an iteration's vregs (iterations in flight at once).
constexpr int kMaxRegSets = 16;
}  // namespace

VVal BodyBuilder::konst() { return VVal{consts_++, true}; }

VVal BodyBuilder::load(std::uint32_t bytes) {
    VVal d{temps_++, false};
    ins_.push_back({VOp::Load, d, {}, bytes, load_off_});
    load_off_ += bytes;
    return d;
}

VVal BodyBuilder::load_into(std::uint32_t bytes, VVal prev) {
    VVal d{temps_++, false};
    ins_.push_back({VOp::Load, d, {prev, {}, {}}, bytes, load_off_});
    load_off_ += bytes;
    return d;
}

VVal BodyBuilder::op(VOp o, VVal a, VVal b, VVal c) {
    VVal d{temps_++, false};
    ins_.push_back({o, d, {a, b, c}, 0, 0});
    return d;
}

void BodyBuilder::store(VVal v, std::uint32_t bytes) {
    ins_.push_back({VOp::Store, VVal{}, {v, {}, {}}, bytes, kStoreRegion + store_off_});
    store_off_ += bytes;
}

VectorLoop BodyBuilder::finish(std::int64_t iterations, std::int64_t vregs, bool row_op) const {
    VectorLoop loop;
    loop.const_regs = consts_;
    loop.iterations = iterations;
    loop.row_op = row_op;
    for (int c = 0; c < consts_; ++c) {
        VInstr s;
        s.op = VOp::Splat;
        s.dst = static_cast<std::int16_t>(c);
        loop.prologue.push_back(s);
    }

    // Linear scan over the body: a temporary lives from its definition to its last read.
    std::vector<std::size_t> last_use(temps_, 0);
    for (std::size_t i = 0; i < ins_.size(); ++i) {
        for (const VVal& s : ins_[i].src) {
            if (s.id >= 0 && !s.is_const) last_use[s.id] = i;
        }
        if (ins_[i].dst.id >= 0) last_use[ins_[i].dst.id] = std::max(last_use[ins_[i].dst.id], i);
    }
    std::vector<int> reg(temps_, -1);
    std::deque<int> free_regs;
    int used = 0;
    std::vector<std::vector<int>> expire(ins_.size());
    for (std::size_t i = 0; i < ins_.size(); ++i) {
        const Ins& in = ins_[i];
        VInstr out;
        out.op = in.op;
        out.bytes = in.bytes;
        out.addr = in.addr;
        for (int k = 0; k < 3; ++k) {
            const VVal& s = in.src[k];
            if (s.id < 0) continue;
            out.src[k] = static_cast<std::int16_t>(s.is_const ? s.id : consts_ + reg[s.id]);
        }
        // Sources whose last read is this instruction free their vregs before the destination
        // is allocated (a read happens at issue, so the destination may reuse one).
        for (int r : expire[i]) free_regs.push_back(r);
        if (in.dst.id >= 0) {
            int r;
            if (!free_regs.empty()) {
                r = free_regs.front();
                free_regs.pop_front();
            } else {
                r = used++;
            }
            reg[in.dst.id] = r;
            out.dst = static_cast<std::int16_t>(consts_ + r);
            const std::size_t end = last_use[in.dst.id];
            if (end == i) {
                free_regs.push_back(r);  // dead value (never read)
            } else {
                expire[end].push_back(r);
            }
        }
        loop.body.push_back(out);
    }
    loop.body_regs = used;
    const std::int64_t avail = vregs - consts_;
    if (used < 1 || avail < used) {
        throw std::logic_error("vector lowering: one iteration needs " + std::to_string(used) +
                               " vregs besides " + std::to_string(consts_) +
                               " constants; the VPU has " + std::to_string(vregs));
    }
    loop.reg_sets = static_cast<int>(std::min<std::int64_t>(kMaxRegSets, avail / used));
    return loop;
}

}  // namespace tpusim
