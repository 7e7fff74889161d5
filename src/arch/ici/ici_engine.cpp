#include "tpusim/arch/ici/ici_engine.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "arch/ici/ici_symmetry.h"
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
      cfg_(cfg),
      clock_mhz_(clock_mhz),
      fabric_(std::make_unique<IciFabric>(topo, cfg, clock_mhz, queue_,
                                          static_cast<IciDeliveryIf&>(*this))),
      vpu_free_(static_cast<std::size_t>(topo.cores()), 0),
      fold_(cfg.fold_symmetric && cfg.tick_order == IciTickOrder::ByLink) {}

// A symmetric phase (docs/ici.md, "Symmetric collectives"): from an idle engine, collectives
// that repeat one tile of the torus run on `sub`, an engine of the tile wrapped into a torus.
// Every call that drives the engine (each start, each run up to a limit) is kept in `ops`, so
// that when a collective that does not repeat the tile joins, the phase runs again on every
// link from the idle state it began in, in the same order of calls, and goes on there.
struct IciEngine::Phase final : CompletionIf {
    struct Entry {
        Lowered collective;  // as started, on the whole torus
        Cycle at = 0;
        ReplyTo done;
        bool told = false;  // its caller has been told its end
        Cycle told_at = 0;
        std::vector<std::size_t> nested;  // entries its caller started when told, in order
    };
    struct Op {
        bool run = false;  // run up to `limit`, or start entry `entry`
        Tick limit = 0;
        std::size_t entry = 0;
    };

    explicit Phase(IciEngine& o) : owner(o) {}
    void complete(std::uint64_t tag, Cycle at) override {
        owner.phase_done(static_cast<std::size_t>(tag), at);
    }

    IciEngine& owner;
    TorusTile tile;
    std::unique_ptr<Topology> topo;               // the tile torus
    std::unique_ptr<IciEngine> sub;               // null once the phase runs on every link
    std::vector<std::size_t> links;               // full link -> the tile link in its place
    std::vector<IciFabric::LinkCounters> synced;  // per tile link: already added to the fabric
    std::uint64_t copies = 1;                     // full chips per tile chip
    Tick begin_now = 0;
    std::deque<Entry> entries;  // a deque: entries keep their place as more are added
    std::vector<Op> ops;
    std::vector<std::pair<std::size_t, Cycle>> ended;  // told by `sub`, not yet passed on
    std::optional<std::size_t> telling;                // entry whose caller is being told
    bool replay_pending = false;                       // once the caller told returns
    std::optional<TorusTile> replay_tile;              // where it runs again (none: every link)
    std::uint64_t generation = 0;                      // counts the runs again
};

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
    std::string name = schedule.name;
    start(LoweredCollective{std::move(name), {std::move(schedule)}, 0.0}, at, done);
}

void IciEngine::start_stream(const Lowered& owner, const Schedule& schedule, Cycle at,
                             std::uint32_t group) {
    const Tick when = std::max(now_, static_cast<Tick>(at) * kTicksPerCycle);
    if (schedule.cores.size() >= (1u << kPartBits)) throw std::invalid_argument("too many cores");
    std::size_t total = 0;
    for (const CoreSchedule& cs : schedule.cores) {
        if (cs.steps.size() >= (1u << kStepBits)) throw std::invalid_argument("too many steps");
        total += cs.steps.size();
    }
    std::uint32_t slot;
    if (!free_slots_.empty()) {
        slot = free_slots_.back();
        free_slots_.pop_back();
    } else {
        slot = static_cast<std::uint32_t>(active_.size());
        active_.emplace_back();
    }
    std::unique_ptr<Active> a;
    if (!spare_.empty()) {
        a = std::move(spare_.back());
        spare_.pop_back();
    } else {
        a = std::make_unique<Active>();
    }
    a->parts.assign(schedule.cores.size(), Part{});
    a->states.assign(total, StepState{});
    std::size_t first = 0;
    for (std::size_t i = 0; i < schedule.cores.size(); ++i) {
        const std::vector<Step>& steps = schedule.cores[i].steps;
        a->parts[i].first = first;
        for (std::size_t k = 0; k < steps.size(); ++k)
            a->states[first + k].reduce = steps[k].reduce;
        first += steps.size();
    }
    a->parts_left = schedule.cores.size();
    a->owner = owner;
    a->schedule = &schedule;
    a->group = group;
    active_[slot] = std::move(a);
    ++active_count_;
    queue_.push(when, kStart, slot);
}

// A retired stream's slot is free; its record, with its lists' storage, waits for reuse.
void IciEngine::retire(std::uint32_t coll) {
    std::unique_ptr<Active> a = std::move(active_[coll]);
    a->owner.reset();  // the lowering may go now
    a->schedule = nullptr;
    spare_.push_back(std::move(a));
    free_slots_.push_back(coll);
    --active_count_;
}

void IciEngine::start(LoweredCollective collective, Cycle at, ReplyTo done) {
    start(std::make_shared<const LoweredCollective>(std::move(collective)), at, done);
}

void IciEngine::start(Lowered collective, Cycle at, ReplyTo done) {
    if (phase_) {
        phase_start(std::move(collective), at, done);
        return;
    }
    // A symmetric phase starts from an idle engine, where no state but the links' figures
    // and arbiters outlives the collectives that ended.
    if (fold_ && queue_.empty() && active_count_ == 0 && !fabric_->has_timeline()) {
        if (const auto tile = symmetric_tile(*collective, topo_)) {
            if (begin_phase(*tile)) {
                phase_start(std::move(collective), at, done, true);
                return;
            }
        }
    }
    start_full(std::move(collective), at, done);
}

void IciEngine::start_full(Lowered collective, Cycle at, ReplyTo done) {
    // The setup (barrier, descriptors) runs before any stream sends.
    at += static_cast<Cycle>(std::llround(collective->setup_us * clock_mhz_));
    if (collective->streams.empty()) {  // one empty stream: ends at once
        static const Schedule kEmpty;
        start_stream(collective, kEmpty, at, new_group(1, done));
        return;
    }
    const std::uint32_t group = new_group(collective->streams.size(), done);
    for (const Schedule& s : collective->streams) start_stream(collective, s, at, group);
}

bool IciEngine::begin_phase(const TorusTile& tile) {
    auto ph = std::make_unique<Phase>(*this);
    ph->begin_now = now_;
    if (!make_sub(*ph, tile)) return false;
    phase_ = std::move(ph);
    return true;
}

// The engine of the tile torus, which starts from the fabric's idle state of the phase's
// beginning (the full fabric is not touched while a tile runs).
bool IciEngine::make_sub(Phase& ph, const TorusTile& tile) {
    auto topo = std::make_unique<Topology>(tile.x, tile.y, topo_.wraps(0), topo_.wraps(1),
                                           topo_.cores_per_chip());
    std::vector<std::size_t> links = tile_links(topo_, *topo);
    // The arbiters' round-robin pointers outlive a collective: every link must hold the
    // pointer of the others in its tile link's place, which the tile link then starts from.
    const std::size_t n_tile = topo->links().size();
    std::vector<std::optional<std::uint32_t>> rr(n_tile);
    for (std::size_t l = 0; l < links.size(); ++l) {
        auto& r = rr[links[l]];
        const std::uint32_t a = fabric_->arbiter(l);
        if (!r) {
            r = a;
        } else if (*r != a) {
            return false;
        }
    }
    auto sub = std::make_unique<IciEngine>(*topo, cfg_, clock_mhz_, cost_);
    sub->fold_ = false;
    sub->now_ = now_;
    for (std::size_t t = 0; t < n_tile; ++t) {
        if (rr[t]) sub->fabric_->set_arbiter(t, *rr[t]);
    }
    ph.tile = tile;
    ph.sub.reset();  // before the topology it refers to
    ph.topo = std::move(topo);
    ph.sub = std::move(sub);
    ph.links = std::move(links);
    ph.synced.assign(n_tile, IciFabric::LinkCounters{});
    ph.copies = static_cast<std::uint64_t>(topo_.chips() / ph.topo->chips());
    return true;
}

void IciEngine::phase_start(Lowered collective, Cycle at, ReplyTo done, bool repeats) {
    Phase& ph = *phase_;
    if (!ph.sub) {
        // The phase runs on every link already: nothing more to keep.
        start_full(std::move(collective), at, done);
        return;
    }
    const std::size_t i = ph.entries.size();
    ph.entries.push_back(Phase::Entry{std::move(collective), at, done, false, 0, {}});
    if (ph.telling) {
        ph.entries[*ph.telling].nested.push_back(i);
    } else {
        ph.ops.push_back(Phase::Op{false, 0, i});
    }
    const LoweredCollective& c = *ph.entries[i].collective;
    if (repeats || repeats_on_tile(c, topo_, ph.tile)) {
        start_entry(i);
        return;
    }
    // It does not repeat the tile: the phase runs again, with it, on the smallest tile both
    // repeat (their sides' least common multiple) or on every link. From inside a caller's
    // completion that waits until the tile's event is over.
    ph.replay_tile.reset();
    if (const auto own = symmetric_tile(c, topo_)) {
        const TorusTile both{std::lcm(ph.tile.x, own->x), std::lcm(ph.tile.y, own->y)};
        bool all = both.x < topo_.chips_x() || both.y < topo_.chips_y();
        for (std::size_t e = 0; all && e < ph.entries.size(); ++e) {
            const Phase::Entry& en = ph.entries[e];
            // An entry that ran on every link already was moved out; none has here.
            static const LoweredCollective kMovedOut;
            all = repeats_on_tile(en.collective ? *en.collective : kMovedOut, topo_, both);
        }
        if (all) ph.replay_tile = both;
    }
    if (ph.telling) {
        ph.replay_pending = true;
    } else {
        replay();
    }
}

void IciEngine::start_entry(std::size_t i) {
    Phase& ph = *phase_;
    Phase::Entry& e = ph.entries[i];
    if (ph.sub) {
        ++folded_;
        ph.sub->start(fold_onto_tile(*e.collective, topo_, *ph.topo), e.at, ReplyTo{&ph, i});
    } else {
        start_full(std::move(e.collective), e.at, ReplyTo{&ph, i});
    }
}

void IciEngine::phase_done(std::size_t i, Cycle at) {
    Phase& ph = *phase_;
    if (ph.sub) {
        // Passed on once the tile's event is over (run_to).
        ph.ended.emplace_back(i, at);
        return;
    }
    tell_entry(i, at);
}

void IciEngine::tell_entry(std::size_t i, Cycle at) {
    Phase& ph = *phase_;
    Phase::Entry& e = ph.entries[i];
    if (e.told) {
        // Run again on every link: its caller heard of its end already, at the same cycle
        // (the tile is exact); what the caller started then starts again here.
        if (at != e.told_at) {
            throw std::logic_error("IciEngine: a collective simulated on a tile ended at cycle " +
                                   std::to_string(e.told_at) + ", on every link at " +
                                   std::to_string(at));
        }
        for (std::size_t n : e.nested) start_entry(n);
        return;
    }
    e.told = true;
    e.told_at = at;
    const auto outer = ph.telling;
    ph.telling = i;
    if (e.done) e.done(at);
    ph.telling = outer;
}

// Adds what the tile links carried since the last call to every link in their place.
void IciEngine::sync_counters() {
    Phase& ph = *phase_;
    const IciFabric& tile = *ph.sub->fabric_;
    std::vector<IciFabric::LinkCounters> delta(ph.synced.size());
    for (std::size_t t = 0; t < ph.synced.size(); ++t) {
        const IciFabric::LinkCounters c = tile.link_counters(t);
        delta[t] = {c.bytes - ph.synced[t].bytes, c.trains - ph.synced[t].trains,
                    c.busy_ticks - ph.synced[t].busy_ticks};
        ph.synced[t] = c;
    }
    for (std::size_t l = 0; l < ph.links.size(); ++l)
        fabric_->add_link_counters(l, delta[ph.links[l]]);
}

void IciEngine::replay() {
    Phase& ph = *phase_;
    ph.replay_pending = false;
    ++replays_;
    const std::uint64_t generation = ++ph.generation;
    // Back to the state the phase began in: the figures the tile added are taken out again
    // (unsigned arithmetic wraps exactly) and the clock goes back.
    for (std::size_t l = 0; l < ph.links.size(); ++l) {
        const IciFabric::LinkCounters& c = ph.synced[ph.links[l]];
        fabric_->add_link_counters(l, {0 - c.bytes, 0 - c.trains, 0 - c.busy_ticks});
    }
    ph.synced.assign(ph.synced.size(), IciFabric::LinkCounters{});
    ph.ended.clear();
    now_ = ph.begin_now;
    const std::optional<TorusTile> tile = ph.replay_tile;
    if (!tile || !make_sub(ph, *tile)) ph.sub.reset();
    // The calls the phase has had, in order; kept while a tile runs (it may run again).
    const std::vector<Phase::Op> ops = ph.ops;
    if (!ph.sub) ph.ops.clear();
    for (const Phase::Op& op : ops) {
        if (!op.run) {
            start_entry(op.entry);
        } else if (ph.sub) {
            run_tile_to(op.limit);
        } else {
            run_full_to(op.limit);
        }
        if (ph.generation != generation) return;  // it ran again from inside: that is done
    }
}

// Runs the tile's events up to `limit`, telling callers of the collectives that end as the
// tile's events end.
void IciEngine::run_tile_to(Tick limit) {
    Phase& ph = *phase_;
    const std::uint64_t generation = ph.generation;
    for (;;) {
        IciEngine& sub = *ph.sub;
        if (sub.queue_.empty() || sub.queue_.top().when > limit) return;
        sub.dispatch(sub.queue_.pop());
        now_ = sub.now_;
        if (ph.ended.empty()) continue;
        // The fabric's figures are brought up to date before the callers hear (they may read
        // them).
        sync_counters();
        const auto ended = std::move(ph.ended);
        ph.ended.clear();
        for (const auto& [i, at] : ended) {
            tell_entry(i, at);
            if (ph.replay_pending) replay();  // runs again up to `limit` (the last call)
            if (ph.generation != generation) return;
        }
    }
}

// The tile is idle: its links' figures and arbiters go to every link in their place, its
// cores' reductions to every core.
void IciEngine::end_phase() {
    Phase& ph = *phase_;
    sync_counters();
    const IciEngine& sub = *ph.sub;
    for (std::size_t l = 0; l < ph.links.size(); ++l)
        fabric_->set_arbiter(l, sub.fabric_->arbiter(ph.links[l]));
    reduced_bytes_ += sub.reduced_bytes_ * ph.copies;
    for (int c = 0; c < topo_.cores(); ++c) {
        vpu_free_[static_cast<std::size_t>(c)] =
            sub.vpu_free_[static_cast<std::size_t>(tile_core(topo_, *ph.topo, c))];
    }
    now_ = sub.now_;
    phase_.reset();
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
        Active& a = *active_[e.a];
        Part& p = a.parts[e.b];
        const auto step = static_cast<std::size_t>(e.c >> 40);
        StepState& ss = a.state(p, step);
        ss.arrived += e.c & ((std::uint64_t{1} << 40) - 1);
        --ss.pending;
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
    StepState& ss = a.state(p, step);
    if (ss.reduce) {
        // The core's vector unit reduces each train as it lands, one after another; data
        // for a later step may be reduced early (its local operand is already there).
        const int core = a.schedule->cores[part].core;
        Tick& free = vpu_free_[static_cast<std::size_t>(core)];
        free = std::max(free, when) +
               static_cast<Tick>(std::ceil(cost_.cycles(bytes, a.schedule->element_bytes) *
                                           static_cast<double>(kTicksPerCycle)));
        ++ss.pending;
        reduced_bytes_ += bytes;
        queue_.push(free, kReduced, coll, part, (static_cast<std::uint64_t>(step) << 40) | bytes);
        return;
    }
    ss.arrived += bytes;
    if (step == p.step) advance(coll, part);
}

// Moves a participant through every step whose data is complete, issuing each step's sends.
void IciEngine::advance(std::uint32_t coll, std::uint32_t part) {
    Active& a = *active_[coll];
    if (!a.parts.empty()) {
        Part& p = a.parts[part];
        const CoreSchedule& cs = a.schedule->cores[part];
        while (p.step < cs.steps.size()) {
            const Step& st = cs.steps[p.step];
            if (p.issued == p.step) {
                // A step's sends go out when it begins: its blocks are final by then.
                ++p.issued;
                const int src_chip = topo_.chip_of_core(cs.core);
                for (const Transfer& t : st.sends) {
                    const int dst_core = a.schedule->cores[static_cast<std::size_t>(t.dst)].core;
                    fabric_->send(src_chip, topo_.chip_of_core(dst_core), t.bytes, now_,
                                  make_tag(coll, static_cast<std::uint32_t>(t.dst),
                                           static_cast<std::uint32_t>(t.dst_step)),
                                  t.prefer_sign);
                }
            }
            const StepState& ss = a.state(p, p.step);
            if (ss.pending != 0 || ss.arrived < st.recv_bytes) return;
            ++p.step;
        }
        if (--a.parts_left > 0) return;
    }
    const std::uint32_t group = a.group;
    retire(coll);
    Group& g = groups_[group];
    if (--g.left > 0) return;
    const ReplyTo done = g.done;
    free_groups_.push_back(group);
    if (done) done(ticks_to_cycles(now_));
}

void IciEngine::run_until(Cycle c) { run_to(static_cast<Tick>(c) * kTicksPerCycle); }

Cycle IciEngine::run() {
    run_to(std::numeric_limits<Tick>::max());
    check_progress();
    return ticks_to_cycles(now_);
}

void IciEngine::run_full_to(Tick limit) {
    while (!queue_.empty() && queue_.top().when <= limit) dispatch(queue_.pop());
}

void IciEngine::run_to(Tick limit) {
    if (phase_ && phase_->sub) {
        phase_->ops.push_back(Phase::Op{true, limit, 0});
        run_tile_to(limit);
        const Phase& ph = *phase_;
        if (ph.sub && ph.sub->queue_.empty() && ph.sub->active_count_ == 0) end_phase();
    } else {
        run_full_to(limit);
    }
    if (phase_ && !phase_->sub && queue_.empty() && active_count_ == 0) phase_.reset();
    fabric_->set_elapsed(now_);
}

bool IciEngine::idle() const {
    return phase_ && phase_->sub ? phase_->sub->queue_.empty() : queue_.empty();
}

std::size_t IciEngine::in_flight() const {
    return phase_ && phase_->sub ? phase_->sub->active_count_ : active_count_;
}

// Nothing left to do while a collective waits means a schedule expects bytes nobody sends
// (a lowering bug) or the fabric deadlocked: say so instead of hanging the caller.
void IciEngine::check_progress() const {
    if (phase_ && phase_->sub) {
        phase_->sub->check_progress();
        return;
    }
    if (queue_.empty() && active_count_ > 0) {
        throw std::logic_error("IciEngine: " + std::to_string(active_count_) +
                               " collective(s) can no longer make progress");
    }
}

std::optional<Cycle> IciEngine::next_event_cycle() const {
    const IciEventQueue& q = phase_ && phase_->sub ? phase_->sub->queue_ : queue_;
    if (q.empty()) return std::nullopt;
    return ticks_to_cycles(q.top().when);
}

}  // namespace tpusim
