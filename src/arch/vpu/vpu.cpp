#include "tpusim/arch/vpu/vpu.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tpusim {

VpuCounters& VpuCounters::operator+=(const VpuCounters& o) {
    instructions += o.instructions;
    for (std::size_t u = 0; u < kVUnits; ++u) {
        issued[u] += o.issued[u];
        busy_cycles[u] += o.busy_cycles[u];
    }
    vmem_bytes_loaded += o.vmem_bytes_loaded;
    vmem_bytes_stored += o.vmem_bytes_stored;
    return *this;
}

VpuCounters& VpuCounters::operator-=(const VpuCounters& o) {
    instructions -= o.instructions;
    for (std::size_t u = 0; u < kVUnits; ++u) {
        issued[u] -= o.issued[u];
        busy_cycles[u] -= o.busy_cycles[u];
    }
    vmem_bytes_loaded -= o.vmem_bytes_loaded;
    vmem_bytes_stored -= o.vmem_bytes_stored;
    return *this;
}

VpuCounters VpuCounters::scaled(std::uint64_t n) const {
    VpuCounters r = *this;
    r.instructions *= n;
    for (std::size_t u = 0; u < kVUnits; ++u) {
        r.issued[u] *= n;
        r.busy_cycles[u] *= n;
    }
    r.vmem_bytes_loaded *= n;
    r.vmem_bytes_stored *= n;
    return r;
}

VpuTiming::VpuTiming(const VpuConfig& vpu, const VmemConfig& vmem)
    : vpu_(vpu), load_bpc_(vmem.load_bytes_per_cycle), store_bpc_(vmem.store_bytes_per_cycle) {
    slots_ = {vpu.valu_slots, vpu.vld_slots, vpu.vst_slots, vpu.xlu.units, vpu.eup_units};
    ready_.assign(vpu.vregs, 0);
    last_read_.assign(vpu.vregs, 0);
}

const VpuOpTiming& VpuTiming::timing(VOp op) const {
    const VpuOpTable& t = vpu_.ops;
    switch (op) {
        case VOp::Add:
        case VOp::Sub:
        case VOp::Logic:
            return t.add;
        case VOp::Mul:
            return t.mul;
        case VOp::Fma:
            return t.fma;
        case VOp::Max:
        case VOp::Min:
            return t.max;
        case VOp::Cmp:
        case VOp::Select:
        case VOp::Splat:
            return t.cmp_select;
        case VOp::Exp:
            return t.exp;
        case VOp::Log:
            return t.log;
        case VOp::Rsqrt:
            return t.rsqrt;
        case VOp::Recip:
            return t.reciprocal;
        case VOp::Tanh:
            return t.tanh;
        case VOp::Cvt:
            return t.cvt;
        case VOp::Reduce:
            return vpu_.xlu.reduce;
        case VOp::Broadcast:
            return vpu_.xlu.broadcast;
        case VOp::Transpose:
            return vpu_.xlu.transpose;
        case VOp::Load:
        case VOp::Store:
            break;
    }
    throw std::logic_error("VpuTiming::timing: no table entry for a VMEM access");
}

Cycle VpuTiming::occupancy(const VInstr& in) const {
    // A VMEM access holds its port for as many cycles as its bytes need at the port width
    // (a full 8 x 128 x 32-bit vreg is 4 KiB: one cycle at the default 4 KiB/cycle).
    if (in.op == VOp::Load) return std::max<Cycle>(1, ceil_div(in.bytes, load_bpc_));
    if (in.op == VOp::Store) return std::max<Cycle>(1, ceil_div(in.bytes, store_bpc_));
    return static_cast<Cycle>(timing(in.op).issue_interval_cycles);
}

Cycle VpuTiming::latency(const VInstr& in) const {
    if (in.op == VOp::Load) return static_cast<Cycle>(vpu_.vld_latency_cycles) + occupancy(in) - 1;
    if (in.op == VOp::Store) return occupancy(in);
    return static_cast<Cycle>(timing(in.op).latency_cycles);
}

bool VpuTiming::fits(std::size_t unit, Cycle t, Cycle occ) const {
    const auto& u = used_[unit];
    for (Cycle c = t - front_; c < t - front_ + occ && c < u.size(); ++c) {
        if (u[c] >= slots_[unit]) return false;
    }
    return true;
}

void VpuTiming::reserve(std::size_t unit, Cycle t, Cycle occ) {
    auto& u = used_[unit];
    if (u.size() < t - front_ + occ) u.resize(t - front_ + occ, 0);
    for (Cycle c = t - front_; c < t - front_ + occ; ++c) ++u[c];
}

void VpuTiming::move_front(Cycle t) {
    if (t <= front_) return;
    for (auto& u : used_) u.erase(u.begin(), u.begin() + std::min<Cycle>(t - front_, u.size()));
    front_ = t;
}

Cycle VpuTiming::issue(const VInstr& in) {
    auto check = [&](std::int16_t r) {
        if (r >= static_cast<std::int64_t>(ready_.size())) {
            throw std::invalid_argument(std::string("vector instruction ") + vop_name(in.op) +
                                        " names vreg " + std::to_string(r) + " of " +
                                        std::to_string(ready_.size()));
        }
    };
    const Cycle occ = occupancy(in);
    const Cycle lat = latency(in);
    Cycle t = front_;
    for (std::int16_t s : in.src) {
        if (s < 0) continue;
        check(s);
        t = std::max(t, ready_[s]);
    }
    if (in.dst >= 0) {
        check(in.dst);
        // WAW and WAR: the result lands after the previous write and after the last read.
        const Cycle after = std::max(ready_[in.dst], last_read_[in.dst] + 1);
        if (after > lat) t = std::max(t, after - lat);
    }
    const auto u = static_cast<std::size_t>(vop_unit(in.op));
    constexpr auto kValu = static_cast<std::size_t>(VUnit::Valu);
    const bool push = vop_unit(in.op) == VUnit::Eup;  // the EUP is fed from a VALU slot
    while (!fits(u, t, occ) || (push && !fits(kValu, t, 1))) ++t;

    reserve(u, t, occ);
    if (push) {
        reserve(kValu, t, 1);
        counters_.busy_cycles[kValu] += 1;
    }
    for (std::int16_t s : in.src) {
        if (s >= 0) last_read_[s] = std::max(last_read_[s], t);
    }
    if (in.dst >= 0) ready_[in.dst] = t + lat;
    finish_ = std::max(finish_, t + lat);

    // The window: the next instruction may not go before the one schedule_window_instrs - 1
    // places older than it, i.e. this one's window_.front() once the window is full.
    window_.push_back(t);
    if (static_cast<std::int64_t>(window_.size()) >= vpu_.schedule_window_instrs) {
        const Cycle oldest = window_.front();
        window_.pop_front();
        move_front(oldest);
    }

    ++counters_.instructions;
    ++counters_.issued[u];
    counters_.busy_cycles[u] += occ;
    if (in.op == VOp::Load) counters_.vmem_bytes_loaded += in.bytes;
    if (in.op == VOp::Store) counters_.vmem_bytes_stored += in.bytes;
    return t;
}

void VpuTiming::run(const VectorProgram& prog) {
    for (const VInstr& in : prog.instrs) issue(in);
}

void VpuTiming::advance_to(Cycle t) {
    // Instructions handed over later cannot be hoisted into the past.
    window_.clear();
    move_front(t);
}

std::vector<std::int64_t> VpuTiming::relative_state() const {
    // Times at or before front_ no longer constrain anything (every later instruction issues
    // at or after front_), so they are clamped to zero.
    auto rel = [&](Cycle c) { return c > front_ ? static_cast<std::int64_t>(c - front_) : 0; };
    std::vector<std::int64_t> s;
    s.reserve(2 * ready_.size() + window_.size() + 64);
    for (Cycle c : ready_) s.push_back(rel(c));
    for (Cycle c : last_read_) s.push_back(rel(c + 1));
    for (Cycle c : window_) s.push_back(rel(c));
    s.push_back(-1);
    for (const auto& u : used_) {
        std::size_t n = u.size();
        while (n > 0 && u[n - 1] == 0) --n;  // trailing free cycles are no state
        s.insert(s.end(), u.begin(), u.begin() + static_cast<std::ptrdiff_t>(n));
        s.push_back(-1);
    }
    s.push_back(rel(finish_));
    return s;
}

}  // namespace tpusim
