#include "tpusim/arch/ici/collective_rendezvous.h"

#include <algorithm>

#include "tpusim/arch/core/core_stats.h"
#include "tpusim/common/sim_time.h"
#include "tpusim/program/collectives.h"

namespace tpusim {

CollectiveRendezvous::CollectiveRendezvous(sc_core::sc_module_name name, IciNetwork& ici)
    : sc_module(name), ici_(ici) {
    core_in.bind(*this);
}

void CollectiveRendezvous::issue(const Instr& in, const UnitRequest& req) {
    arrive(*in.coll, req.issuer.core, Arrival{req, now_cycles()});
}

void CollectiveRendezvous::tell(const Arrival& a, Cycle end) {
    if (CoreStats* s = a.req.issuer.stats) s->ici_busy_cycles += end - a.at;
    a.req.reply(UnitDone{a.at, end, end - a.at});
}

void CollectiveRendezvous::arrive(const CollectiveInstr& c, std::int64_t core, const Arrival& a) {
    if (c.role == CollectiveInstr::Role::Send) {
        CollectiveSpec s;
        s.kind = CollectiveKind::SendRecv;
        s.bytes = c.bytes;
        s.element_bytes = static_cast<Bytes>(c.element_bytes);
        s.group = {static_cast<int>(core), static_cast<int>(c.peer)};
        s.pairs = {{static_cast<int>(core), static_cast<int>(c.peer)}};
        start(s, Started{{a}, true, std::make_pair(core, c.peer)});
        return;
    }
    if (c.role == CollectiveInstr::Role::Recv) {
        const auto key = std::make_pair(c.peer, core);
        auto& sent = sends_done_[key];
        if (!sent.empty()) {
            sent.pop_front();
            tell(a, now_cycles());
        } else {
            recvs_waiting_[key].push_back(a);
        }
        return;
    }
    // Group collectives: one start per replica group, when its last core arrives.
    const std::int64_t leader = c.group.empty() ? 0 : c.group.front();
    Pending& p = pending_[{c.instance, leader}];
    ++p.arrived;
    p.done.push_back(a);
    const auto expected = simulated_ > 0 ? static_cast<std::size_t>(std::count_if(
                                               c.group.begin(), c.group.end(),
                                               [this](std::int64_t g) { return g < simulated_; }))
                                         : c.group.size();
    if (p.arrived < expected) return;
    CollectiveSpec s;
    s.kind = c.kind;
    s.bytes = c.bytes;
    s.element_bytes = static_cast<Bytes>(c.element_bytes);
    for (std::int64_t g : c.group) s.group.push_back(static_cast<int>(g));
    for (const auto& [a, b] : c.pairs)
        s.pairs.emplace_back(static_cast<int>(a), static_cast<int>(b));
    auto replies = std::move(p.done);
    pending_.erase({c.instance, leader});
    start(s, Started{std::move(replies), false, {}});
}

void CollectiveRendezvous::start(const CollectiveSpec& s, Started started) {
    const std::uint64_t tag = next_tag_++;
    started_.emplace(tag, std::move(started));
    ici_.start(s, ReplyTo{this, tag});
}

void CollectiveRendezvous::complete(std::uint64_t tag, Cycle t) {
    const auto it = started_.find(tag);
    const Started st = std::move(it->second);
    started_.erase(it);
    for (const Arrival& a : st.replies) tell(a, t);
    if (!st.is_send) return;
    auto& waiting = recvs_waiting_[st.key];
    if (waiting.empty()) {
        sends_done_[st.key].push_back(t);
    } else {
        const Arrival a = waiting.front();
        waiting.pop_front();
        tell(a, t);
    }
}

}  // namespace tpusim
