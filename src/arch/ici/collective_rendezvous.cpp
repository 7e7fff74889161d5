#include "tpusim/arch/ici/collective_rendezvous.h"

#include <algorithm>
#include <string>
#include <tuple>

#include "tpusim/arch/core/core_stats.h"
#include "tpusim/common/sim_time.h"
#include "tpusim/program/collectives.h"

namespace tpusim {

CollectiveRendezvous::CollectiveRendezvous(sc_core::sc_module_name name, IciNetwork& ici)
    : sc_module(name), ici_(ici) {
    core_in.bind(*this);
    flush_.owner = this;
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
        start(s, Started{{a}, true, std::make_pair(core, c.peer)}, c.instance, core);
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
    // Group collectives: one start per replica group, when its last core arrives. Under SPMD
    // symmetry only the unit's cores run: a group starts when the unit cores whose timelines
    // its cores share (their images) have arrived, keyed by the first of them.
    const std::vector<std::int64_t>& group = c.group_of(core);
    std::int64_t leader = group.empty() ? 0 : group.front();
    std::size_t expected = group.size();
    std::vector<std::int64_t> images;
    if (!image_.empty()) {
        for (std::int64_t g : group) images.push_back(image_[static_cast<std::size_t>(g)]);
        std::sort(images.begin(), images.end());
        images.erase(std::unique(images.begin(), images.end()), images.end());
        leader = images.empty() ? 0 : images.front();
        expected = images.size();
    }
    Pending& p = pending_[{c.instance, leader}];
    ++p.arrived;
    p.done.push_back(a);
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
    // The group's place in the op's list orders the starts of one delta cycle.
    const auto index_of = [&](const std::vector<std::int64_t>& g) -> std::int64_t {
        if (!c.groups) return 0;
        const auto& all = c.groups->groups;
        return &g >= all.data() && &g < all.data() + all.size() ? &g - all.data() : 0;
    };
    if (image_.empty() || !c.groups || c.groups->groups.size() < 2) {
        start(spec(group), Started{std::move(replies), false, {}}, c.instance, index_of(group));
        return;
    }
    // SPMD symmetry over replica groups (plan_symmetry: the groups whose cores run as the same
    // unit cores are translates of one another): the cores of those groups run the same
    // program as the unit's and reach the collective at this cycle too, so each such group's
    // collective starts now on the whole fabric; each unit core is told when its own group's
    // ends. Each must end when the others do (groups_apart).
    std::vector<const std::vector<std::int64_t>*> run;
    for (const auto& g : c.groups->groups) {
        if (!g.empty() && std::binary_search(images.begin(), images.end(),
                                             image_[static_cast<std::size_t>(g.front())]))
            run.push_back(&g);
    }
    const std::size_t batch = batches_.size();
    batches_.push_back(Batch{op, run.size()});
    for (const std::vector<std::int64_t>* g : run) {
        std::vector<Arrival> own;
        for (Arrival& r : replies)
            if (c.group_of(r.req.issuer.core).front() == g->front()) own.push_back(r);
        start(spec(*g),
              Started{std::move(own), false, {}, static_cast<std::int64_t>(batch), g->front()},
              c.instance, index_of(*g));
    }
}

void CollectiveRendezvous::start(const CollectiveSpec& s, Started started, std::uint64_t instance,
                                 std::int64_t index) {
    ready_.push_back(Ready{instance, index, s, std::move(started)});
    flush_.request_update();
}

void CollectiveRendezvous::Flush::update() { owner->start_ready(); }

void CollectiveRendezvous::start_ready() {
    // Every collective that became ready in this delta cycle, whichever core process ran
    // first: by op, then by the group's place in the op's list (a send: its source core).
    std::stable_sort(ready_.begin(), ready_.end(), [](const Ready& x, const Ready& y) {
        return std::tie(x.instance, x.index) < std::tie(y.instance, y.index);
    });
    std::vector<Ready> ready = std::move(ready_);
    ready_.clear();
    for (Ready& r : ready) {
        const std::uint64_t tag = next_tag_++;
        started_.emplace(tag, std::move(r.started));
        ici_.start(r.spec, ReplyTo{this, tag});
    }
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
