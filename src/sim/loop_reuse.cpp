#include "loop_reuse.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "tpusim/common/sim_time.h"

namespace tpusim {

std::string LoopReuse::refusal(const Program& program, const std::vector<std::int64_t>& sim) {
    for (std::size_t li = 0; li < program.loops.size(); ++li) {
        const ProgramLoop& l = program.loops[li];
        if (l.lowered_trips >= l.trips) continue;
        if (l.lowered_trips < 4) return fmt::format("loop {}: fewer than 4 trips simulated", li);
        for (std::int64_t c : sim) {
            const CoreProgram& cp = program.cores[static_cast<std::size_t>(c)];
            if (li >= cp.loops.size() || cp.loops[li].per_trip == 0)
                return fmt::format("loop of op \"{}\" does not run on core {}",
                                   program.ops[l.first].id, c);
            if (cp.loops[li].first_alike == 0)
                return fmt::format("the loop of op \"{}\": {}", program.ops[l.first].id,
                                   cp.loops[li].not_reusable);
        }
    }
    if (program.refused_loop_reuse)
        throw std::logic_error("a lowering stopped at a loop no simulated core refuses");
    return "";
}

LoopReuse::LoopReuse(const Program& program, const std::vector<std::int64_t>& sim,
                     const StatGroup& board_stats, std::vector<TensorCore*> cores,
                     const IciFabric& fabric, std::size_t links)
    : program_(program),
      nsim_(static_cast<std::int64_t>(sim.size())),
      sim_(sim),
      counters_(board_stats.counters()),
      cores_(std::move(cores)),
      fabric_(fabric),
      links_(links) {
    const std::int64_t nsim = nsim_;
    for (std::size_t k = 0; k < sim_.size(); ++k) {
        const auto c = static_cast<std::size_t>(sim_[k]);
        if (position_.size() <= c) position_.resize(c + 1, -1);
        position_[c] = static_cast<std::int64_t>(k);
    }
    for (std::size_t li = 0; li < program.loops.size(); ++li) {
        const ProgramLoop& l = program.loops[li];
        if (l.lowered_trips >= l.trips) continue;
        for (std::int64_t t = 1; t < l.lowered_trips; ++t) {
            Boundary b;
            b.loop = li;
            b.trip = t;
            b.issue.assign(static_cast<std::size_t>(nsim), 0);
            b.issued.assign(static_cast<std::size_t>(nsim), false);
            b.clean.assign(static_cast<std::size_t>(nsim), false);
            b.released.assign(static_cast<std::size_t>(nsim), false);
            bounds_.push_back(std::move(b));
        }
    }
    for (std::int64_t c = 0; c < nsim; ++c) {
        const CoreProgram& cp =
            program.cores[static_cast<std::size_t>(sim_[static_cast<std::size_t>(c)])];
        std::vector<std::size_t> at;
        std::vector<std::vector<std::uint32_t>> data;
        for (const Boundary& b : bounds_) {
            at.push_back(cp.loops[b.loop].starts[static_cast<std::size_t>(b.trip)]);
            data.push_back(cp.loops[b.loop].data_waits[static_cast<std::size_t>(b.trip)]);
        }
        cores_[static_cast<std::size_t>(c)]->watch(std::move(at), std::move(data), this);
    }
}

void LoopReuse::reached(std::int64_t core, std::size_t k, bool released) {
    Boundary& b = bounds_[k];
    b.released[static_cast<std::size_t>(position_[static_cast<std::size_t>(core)])] = released;
    if (++b.reached < nsim_) return;
    // Every core has completed everything before the boundary: the board's counters and op
    // timings now are those of the trips before it.
    b.global = now_cycles();
    b.counters.reserve(counters_.size());
    for (const std::uint64_t* p : counters_) b.counters.push_back(*p);
    for (TensorCore* core : cores_) b.timing.push_back(core->stats().ops);
    for (std::size_t l = 0; l < links_; ++l) b.link_ticks.push_back(fabric_.link_busy_ticks(l));
}

void LoopReuse::issued(std::int64_t core, std::size_t k, bool clean) {
    Boundary& b = bounds_[k];
    if (b.reached < nsim_) b.dirty = true;  // a trip began before the board was idle
    const auto c = static_cast<std::size_t>(position_[static_cast<std::size_t>(core)]);
    b.issue[c] = now_cycles();
    b.issued[c] = true;
    b.clean[c] = clean;
}

std::int64_t LoopReuse::first_alike(std::size_t li) const {
    std::int64_t t = 0;
    for (std::int64_t c : sim_)
        t = std::max(t, program_.cores[static_cast<std::size_t>(c)].loops[li].first_alike);
    return t;
}

std::string LoopReuse::charge(std::vector<std::vector<OpTiming>>& timing,
                              std::vector<Cycle>& ends) {
    // Steady boundary of each loop: trips a and a + 1 both start on an idle board, every core
    // issuing its first instruction the same number of cycles after the board became idle.
    // Trip a + 1 then runs as trip a did, and so does every trip after it (each ends in the
    // state it started from), up to the last few, which are simulated (a + 2 < lowered).
    struct Step {
        const Boundary *a, *b;
        std::int64_t extra;
    };
    std::vector<Step> steps;
    for (std::size_t li = 0; li < program_.loops.size(); ++li) {
        const ProgramLoop& l = program_.loops[li];
        if (l.lowered_trips >= l.trips) continue;
        auto ok = [&](const Boundary& b) {
            if (b.reached < nsim_ || b.dirty) return false;
            for (std::size_t c = 0; c < static_cast<std::size_t>(nsim_); ++c)
                if (!b.issued[c] || !b.clean[c] || !b.released[c] || b.issue[c] < b.global)
                    return false;
            return true;
        };
        const Step* found = nullptr;
        Step s{};
        for (std::size_t k = 0; k + 1 < bounds_.size(); ++k) {
            const Boundary &a = bounds_[k], &b = bounds_[k + 1];
            if (a.loop != li || b.loop != li || b.trip + 1 >= l.lowered_trips) continue;
            // Trips before first_alike may lower otherwise; trip a - 1 is one of the alike
            // trips too, so whatever a unit keeps of the trip before (none of the models keeps
            // more than times, which an idle board has passed) is the same at a and a + 1.
            if (a.trip < std::max<std::int64_t>(first_alike(li), 2)) continue;
            if (!ok(a) || !ok(b)) continue;
            bool same = true;
            for (std::size_t c = 0; c < static_cast<std::size_t>(nsim_); ++c)
                if (a.issue[c] - a.global != b.issue[c] - b.global) same = false;
            if (!same) continue;
            s = Step{&a, &b, l.trips - l.lowered_trips};
            found = &s;
            break;
        }
        if (!found)
            return fmt::format("the trips of the loop of op \"{}\" did not repeat in {} trips",
                               program_.ops[l.first].id, l.lowered_trips);
        steps.push_back(s);
    }
    // Every time at or after the steady boundary's end moves by the trips left out.
    auto shift = [&](Cycle t) {
        Cycle out = t;
        for (const Step& s : steps)
            if (t >= s.b->global) out += static_cast<Cycle>(s.extra) * (s.b->global - s.a->global);
        return out;
    };
    for (std::size_t l = 0; l < links_; ++l) link_ticks_.push_back(fabric_.link_busy_ticks(l));
    for (const Step& s : steps) {
        const auto m = static_cast<std::uint64_t>(s.extra);
        for (std::size_t l = 0; l < link_ticks_.size(); ++l)
            link_ticks_[l] += m * (s.b->link_ticks[l] - s.a->link_ticks[l]);
        for (std::size_t j = 0; j < counters_.size(); ++j)
            *const_cast<std::uint64_t*>(counters_[j]) += m * (s.b->counters[j] - s.a->counters[j]);
        for (std::size_t c = 0; c < timing.size(); ++c) {
            for (std::size_t i = 0; i < timing[c].size(); ++i) {
                const OpTiming &ta = s.a->timing[c][i], &tb = s.b->timing[c][i];
                OpTiming& t = timing[c][i];
                for (std::size_t u = 0; u < kUnitCount; ++u)
                    t.busy[u] += m * (tb.busy[u] - ta.busy[u]);
                t.instructions += m * (tb.instructions - ta.instructions);
            }
        }
        simulated_ += program_.loops[s.a->loop].lowered_trips;
        charged_ += s.extra;
    }
    for (auto& core : timing) {
        for (OpTiming& t : core) {
            if (!t.ran()) continue;
            t.start = shift(t.start);
            t.end = shift(t.end);
        }
    }
    for (Cycle& e : ends) e = shift(e);
    return "";
}

void LoopReuse::ici_json(nlohmann::json& stats, const std::vector<Topology::Link>& links,
                         Tick elapsed) const {
    for (std::size_t l = 0; l < link_ticks_.size() && l < links.size(); ++l) {
        nlohmann::json& j = stats.at("ici").at(links[l].name);
        const Tick busy = link_ticks_[l];
        j["busy_cycles"] = static_cast<double>(busy) / kTicksPerCycle;
        j["busy_fraction"] =
            elapsed ? static_cast<double>(busy) / static_cast<double>(elapsed) : 0.0;
    }
}

}  // namespace tpusim
