#include "tpusim/arch/ici/collective_rendezvous.h"

#include <algorithm>
#include <string>

#include "tpusim/arch/core/core_stats.h"
#include "tpusim/common/sim_time.h"
#include "tpusim/program/collectives.h"

namespace tpusim {

CollectiveRendezvous::CollectiveRendezvous(sc_core::sc_module_name name, IciNetwork& ici)
    : sc_module(name), ici_(ici) {
    core_in.bind(*this);
}

void CollectiveRendezvous::issue(const Instr& in, const UnitRequest& req) {
    arrive(*in.coll, in.op, req.issuer.core, Arrival{req, now_cycles()});
}

void CollectiveRendezvous::tell(const Arrival& a, Cycle end) {
    if (CoreStats* s = a.req.issuer.stats) s->ici_busy_cycles += end - a.at;
    a.req.reply(UnitDone{a.at, end, end - a.at});
}

void CollectiveRendezvous::arrive(const CollectiveInstr& c, std::uint32_t op, std::int64_t core,
                                  const Arrival& a) {
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
    const std::vector<std::int64_t>& group = c.group_of(core);
    const std::int64_t leader = group.empty() ? 0 : group.front();
    Pending& p = pending_[{c.instance, leader}];
    ++p.arrived;
    p.done.push_back(a);
    const auto expected =
        simulated_ > 0
            ? static_cast<std::size_t>(std::count_if(
                  group.begin(), group.end(), [this](std::int64_t g) { return g < simulated_; }))
            : group.size();
    if (p.arrived < expected) return;
    auto spec = [&](const std::vector<std::int64_t>& cores) {
        CollectiveSpec s;
        s.kind = c.kind;
        s.bytes = c.bytes;
        s.element_bytes = static_cast<Bytes>(c.element_bytes);
        for (std::int64_t g : cores) s.group.push_back(static_cast<int>(g));
        for (const auto& [from, to] : c.pairs)
            s.pairs.emplace_back(static_cast<int>(from), static_cast<int>(to));
        return s;
    };
    auto replies = std::move(p.done);
    pending_.erase({c.instance, leader});
    if (simulated_ == 0 || !c.groups || c.groups->groups.size() < 2) {
        start(spec(group), Started{std::move(replies), false, {}});
        return;
    }
    // SPMD symmetry over replica groups (plan_symmetry: the groups are translates of one
    // another, of whole chips): the cores of every other group run the same program and reach
    // the collective at this cycle too, so each group's collective starts now, in the order
    // the op lists them, on the whole fabric. Each must end when the others do (groups_apart).
    const std::size_t batch = batches_.size();
    batches_.push_back(Batch{op, c.groups->groups.size()});
    for (const auto& g : c.groups->groups) {
        const bool own = !g.empty() && g.front() == leader;
        start(spec(g), Started{own ? std::move(replies) : std::vector<Arrival>{},
                               false,
                               {},
                               static_cast<std::int64_t>(batch),
                               g.empty() ? -1 : g.front()});
    }
}

void CollectiveRendezvous::start(const CollectiveSpec& s, Started started) {
    const std::uint64_t tag = next_tag_++;
    started_.emplace(tag, std::move(started));
    ici_.start(s, ReplyTo{this, tag});
}

void CollectiveRendezvous::ended_in_batch(const Started& st, Cycle t) {
    Batch& b = batches_[static_cast<std::size_t>(st.batch)];
    if (b.known && b.end != t && broken_.empty()) {
        broken_op_ = b.op;
        broken_ = "ended at cycle " + std::to_string(t) + " in the replica group of core " +
                  std::to_string(st.leader) + " and at cycle " + std::to_string(b.end) +
                  " in another";
    }
    b.known = true;
    b.end = t;
    --b.left;
}

std::string CollectiveRendezvous::groups_apart(std::uint32_t& op) const {
    if (!broken_.empty()) {
        op = broken_op_;
        return broken_;
    }
    for (const Batch& b : batches_) {
        // Still running after the cycle its other groups ended at: it ends later.
        if (b.left > 0 && b.known && now_cycles() > b.end) {
            op = b.op;
            return "had not ended in " + std::to_string(b.left) + " replica group(s) by cycle " +
                   std::to_string(now_cycles()) + ", but had at cycle " + std::to_string(b.end) +
                   " in the others";
        }
    }
    return "";
}

void CollectiveRendezvous::complete(std::uint64_t tag, Cycle t) {
    const auto it = started_.find(tag);
    const Started st = std::move(it->second);
    started_.erase(it);
    if (st.batch >= 0) ended_in_batch(st, t);
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
