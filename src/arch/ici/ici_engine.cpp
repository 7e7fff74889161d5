#include "tpusim/arch/ici/ici_engine.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "tpusim/config/board_config.h"
#include "tpusim/config/core_config.h"
#include "tpusim/config/hbm_config.h"

namespace tpusim {

namespace {
// Delivery tags: collective slot, participant, step.
constexpr int kPartBits = 20, kStepBits = 20;
std::uint64_t make_tag(std::uint32_t coll, std::uint32_t part, std::uint32_t step) {
    return (static_cast<std::uint64_t>(coll) << (kPartBits + kStepBits)) |
           (static_cast<std::uint64_t>(part) << kStepBits) | step;
}
}  // namespace

AnalyticalReductionCost::AnalyticalReductionCost(const VpuConfig& vpu, const HbmConfig& hbm,
                                                 const ChipConfig& chip)
    : elements_per_cycle_(static_cast<double>(vpu.sublanes * vpu.lanes * vpu.alus_per_lane)),
      // Each core owns half of the chip's HBM channels (hbm_config.h).
      hbm_bytes_per_cycle_(hbm.peak_bytes_per_second() / (chip.clock_mhz * 1e6) /
                           static_cast<double>(chip.cores_per_chip)) {}

double AnalyticalReductionCost::cycles(Bytes bytes, Bytes element_bytes) const {
    const double elements = static_cast<double>(bytes) / static_cast<double>(element_bytes);
    const double vpu = elements / elements_per_cycle_;
    const double hbm = 3.0 * static_cast<double>(bytes) / hbm_bytes_per_cycle_;
    return std::max(vpu, hbm);
}

IciEngine::IciEngine(const Topology& topo, const IciConfig& cfg, double clock_mhz,
                     const ReductionCostModel& cost)
    : topo_(topo),
      cost_(cost),
      clock_mhz_(clock_mhz),
      fabric_(std::make_unique<IciFabric>(topo, cfg, clock_mhz, queue_,
                                          static_cast<IciDeliveryIf&>(*this))),
      vpu_free_(static_cast<std::size_t>(topo.cores()), 0) {}

IciEngine::~IciEngine() = default;

std::uint32_t IciEngine::new_group(std::size_t streams, ReplyTo done) {
    std::uint32_t g;
    if (!free_groups_.empty()) {
        g = free_groups_.back();
        free_groups_.pop_back();
    } else {
        g = static_cast<std::uint32_t>(groups_.size());
        groups_.emplace_back();
    }
    groups_[g] = Group{streams, done};
    return g;
}

void IciEngine::start(Schedule schedule, Cycle at, ReplyTo done) {
    start_stream(std::move(schedule), at, new_group(1, done));
}

void IciEngine::start_stream(Schedule schedule, Cycle at, std::uint32_t group) {
    const Tick when = std::max(now_, static_cast<Tick>(at) * kTicksPerCycle);
    if (schedule.cores.size() >= (1u << kPartBits)) throw std::invalid_argument("too many cores");
    std::uint32_t slot;
    if (!free_slots_.empty()) {
        slot = free_slots_.back();
        free_slots_.pop_back();
    } else {
        slot = static_cast<std::uint32_t>(active_.size());
        active_.emplace_back();
    }
    auto a = std::make_unique<Active>();
    a->parts.resize(schedule.cores.size());
    for (std::size_t i = 0; i < schedule.cores.size(); ++i) {
        const std::size_t n = schedule.cores[i].steps.size();
        if (n >= (1u << kStepBits)) throw std::invalid_argument("too many steps");
        a->parts[i].arrived.assign(n, 0);
        a->parts[i].pending.assign(n, 0);
    }
    a->parts_left = schedule.cores.size();
    a->schedule = std::move(schedule);
    a->group = group;
    active_[slot] = std::move(a);
    ++active_count_;
    queue_.push(when, kStart, slot);
}

void IciEngine::start(LoweredCollective collective, Cycle at, ReplyTo done) {
    // The setup (barrier, descriptors) runs before any stream sends.
    at += static_cast<Cycle>(std::llround(collective.setup_us * clock_mhz_));
    if (collective.streams.empty()) {
        start(Schedule{}, at, done);
        return;
    }
    const std::uint32_t group = new_group(collective.streams.size(), done);
    for (auto& s : collective.streams) start_stream(std::move(s), at, group);
}

void IciEngine::dispatch(const IciEvent& e) {
    now_ = e.when;
    if (e.kind < IciFabric::kFabricEventKinds) {
        fabric_->handle(e);
        return;
    }
    if (e.kind == kStart) {
        Active& a = *active_[e.a];
        if (a.parts.empty()) {
            advance(e.a, 0);
            return;
        }
        // The last advance may retire the collective (and `a` with it).
        const auto n = static_cast<std::uint32_t>(a.parts.size());
        for (std::uint32_t p = 0; p < n; ++p) advance(e.a, p);
    } else if (e.kind == kReduced) {
        Part& p = active_[e.a]->parts[e.b];
        const auto step = static_cast<std::size_t>(e.c >> 40);
        p.arrived[step] += e.c & ((std::uint64_t{1} << 40) - 1);
        --p.pending[step];
        if (step == p.step) advance(e.a, e.b);
    } else {
        throw std::logic_error("IciEngine: unknown event kind");
    }
}

void IciEngine::deliver(std::uint64_t tag, Bytes bytes, Tick when) {
    const auto coll = static_cast<std::uint32_t>(tag >> (kPartBits + kStepBits));
    const auto part = static_cast<std::uint32_t>((tag >> kStepBits) & ((1u << kPartBits) - 1));
    const auto step = static_cast<std::uint32_t>(tag & ((1u << kStepBits) - 1));
    Active& a = *active_[coll];
    Part& p = a.parts[part];
    const CoreSchedule& cs = a.schedule.cores[part];
    if (cs.steps[step].reduce) {
        // The core's vector unit reduces each train as it lands, one after another; data
        // for a later step may be reduced early (its local operand is already there).
        Tick& free = vpu_free_[static_cast<std::size_t>(cs.core)];
        free = std::max(free, when) +
               static_cast<Tick>(std::ceil(cost_.cycles(bytes, a.schedule.element_bytes) *
                                           static_cast<double>(kTicksPerCycle)));
        ++p.pending[step];
        reduced_bytes_ += bytes;
        queue_.push(free, kReduced, coll, part, (static_cast<std::uint64_t>(step) << 40) | bytes);
        return;
    }
    p.arrived[step] += bytes;
    if (step == p.step) advance(coll, part);
}

// Moves a participant through every step whose data is complete, issuing each step's sends.
void IciEngine::advance(std::uint32_t coll, std::uint32_t part) {
    Active& a = *active_[coll];
    if (!a.parts.empty()) {
        Part& p = a.parts[part];
        const CoreSchedule& cs = a.schedule.cores[part];
        while (p.step < cs.steps.size()) {
            const Step& st = cs.steps[p.step];
            if (p.issued == p.step) {
                // A step's sends go out when it begins: its blocks are final by then.
                ++p.issued;
                const int src_chip = topo_.chip_of_core(cs.core);
                for (const Transfer& t : st.sends) {
                    const int dst_core = a.schedule.cores[static_cast<std::size_t>(t.dst)].core;
                    fabric_->send(src_chip, topo_.chip_of_core(dst_core), t.bytes, now_,
                                  make_tag(coll, static_cast<std::uint32_t>(t.dst),
                                           static_cast<std::uint32_t>(t.dst_step)),
                                  t.prefer_sign);
                }
            }
            if (p.pending[p.step] != 0 || p.arrived[p.step] < st.recv_bytes) return;
            ++p.step;
        }
        if (--a.parts_left > 0) return;
    }
    const std::uint32_t group = a.group;
    active_[coll].reset();
    free_slots_.push_back(coll);
    --active_count_;
    Group& g = groups_[group];
    if (--g.left > 0) return;
    const ReplyTo done = g.done;
    free_groups_.push_back(group);
    if (done) done(ticks_to_cycles(now_));
}

void IciEngine::run_until(Cycle c) {
    const Tick limit = static_cast<Tick>(c) * kTicksPerCycle;
    while (!queue_.empty() && queue_.top().when <= limit) dispatch(queue_.pop());
    fabric_->set_elapsed(now_);
}

Cycle IciEngine::run() {
    while (!queue_.empty()) dispatch(queue_.pop());
    fabric_->set_elapsed(now_);
    check_progress();
    return ticks_to_cycles(now_);
}

// Nothing left to do while a collective waits means a schedule expects bytes nobody sends
// (a lowering bug) or the fabric deadlocked: say so instead of hanging the caller.
void IciEngine::check_progress() const {
    if (queue_.empty() && active_count_ > 0) {
        throw std::logic_error("IciEngine: " + std::to_string(active_count_) +
                               " collective(s) can no longer make progress");
    }
}

std::optional<Cycle> IciEngine::next_event_cycle() const {
    if (queue_.empty()) return std::nullopt;
    return ticks_to_cycles(queue_.top().when);
}

}  // namespace tpusim
