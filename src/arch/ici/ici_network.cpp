#include "tpusim/arch/ici/ici_network.h"

#include <iterator>

#include "tpusim/common/sim_time.h"

namespace tpusim {

IciNetwork::IciNetwork(sc_core::sc_module_name name, const Topology& topo, const IciConfig& cfg,
                       double clock_mhz, const ReductionCostModel& cost)
    : sc_core::sc_module(name), engine_(topo, cfg, clock_mhz, cost), lowerings_(topo, cfg) {
    SC_HAS_PROCESS(IciNetwork);
    SC_THREAD(loop);
}

namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
    return (h ^ v) * 0x100000001b3ULL;  // FNV-1a style
}

std::uint64_t spec_hash(const CollectiveSpec& s) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    h = mix(h, static_cast<std::uint64_t>(s.kind));
    h = mix(h, s.bytes);
    h = mix(h, s.element_bytes);
    h = mix(h, s.algorithm ? static_cast<std::uint64_t>(*s.algorithm) + 1 : 0);
    h = mix(h, static_cast<std::uint64_t>(s.pieces));
    h = mix(h, s.group.size());
    for (int c : s.group) h = mix(h, static_cast<std::uint64_t>(c));
    h = mix(h, s.pairs.size());
    for (const auto& [a, b] : s.pairs) {
        h = mix(h, static_cast<std::uint64_t>(a));
        h = mix(h, static_cast<std::uint64_t>(b));
    }
    return h;
}

bool same_spec(const CollectiveSpec& a, const CollectiveSpec& b) {
    return a.kind == b.kind && a.bytes == b.bytes && a.element_bytes == b.element_bytes &&
           a.algorithm == b.algorithm && a.pieces == b.pieces && a.group == b.group &&
           a.pairs == b.pairs;
}

}  // namespace

LoweringCache::LoweringCache(const Topology& topo, const IciConfig& cfg, std::size_t budget_steps)
    : topo_(topo), cfg_(cfg), budget_(budget_steps) {}

std::shared_ptr<const LoweredCollective> LoweringCache::lowered(const CollectiveSpec& spec) {
    const std::uint64_t h = spec_hash(spec);
    const auto [lo, hi] = index_.equal_range(h);
    for (auto it = lo; it != hi; ++it) {
        if (same_spec(it->second->spec, spec)) {
            kept_.splice(kept_.begin(), kept_, it->second);  // most recently used
            ++hits_;
            return kept_.front().lowered;
        }
    }
    auto low = std::make_shared<const LoweredCollective>(lower_collective(spec, topo_, cfg_));
    std::size_t steps = 0;
    for (const Schedule& s : low->streams)
        for (const CoreSchedule& c : s.cores) steps += c.steps.size();
    // One larger than the whole budget is not kept; else the least recently used go until it
    // fits.
    if (steps > budget_) return low;
    while (steps_ + steps > budget_) {
        const auto last = std::prev(kept_.end());
        const auto [a, b] = index_.equal_range(last->hash);
        for (auto it = a; it != b; ++it) {
            if (it->second == last) {
                index_.erase(it);
                break;
            }
        }
        steps_ -= last->steps;
        kept_.erase(last);
    }
    kept_.push_front(Kept{spec, h, low, steps});
    index_.emplace(h, kept_.begin());
    steps_ += steps;
    return low;
}

void IciNetwork::start(const CollectiveSpec& spec, ReplyTo done) {
    engine_.start(lowerings_.lowered(spec), now_cycles(), done);
    wake_.notify(sc_core::SC_ZERO_TIME);
}

namespace {
// The calling thread's side of run(): wakes it when the collective has ended.
struct Waiter final : CompletionIf {
    Cycle at = 0;
    sc_core::sc_event finished;
    void complete(std::uint64_t /*tag*/, Cycle c) override {
        at = c;
        finished.notify(sc_core::SC_ZERO_TIME);
    }
};
}  // namespace

Cycle IciNetwork::run(const CollectiveSpec& spec) {
    Waiter w;
    start(spec, ReplyTo{&w, 0});
    sc_core::wait(w.finished);
    return w.at;
}

// Sleeps until the engine's next event (or new work), then runs the engine up to now.
void IciNetwork::loop() {
    for (;;) {
        engine_.run_until(now_cycles());
        const auto next = engine_.next_event_cycle();
        if (next) {
            sc_core::wait(cycles(*next - now_cycles()), wake_);
        } else {
            engine_.check_progress();
            sc_core::wait(wake_);
        }
    }
}

}  // namespace tpusim
