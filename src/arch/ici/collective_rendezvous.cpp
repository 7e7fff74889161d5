#include "tpusim/arch/ici/collective_rendezvous.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <unordered_map>

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
    arrive(in.coll, in.op, req.issuer.core, Arrival{req, now_cycles()});
}

void CollectiveRendezvous::tell(const Arrival& a, Cycle end) {
    if (CoreStats* s = a.req.issuer.stats) s->ici_busy_cycles += end - a.at;
    a.req.reply(UnitDone{a.at, end, end - a.at});
}

const CollectiveRendezvous::GroupMemo& CollectiveRendezvous::memo(
    const std::shared_ptr<const CollectiveInstr>& instr, const std::vector<std::int64_t>& group) {
    if (const auto it = memo_.find(&group); it != memo_.end()) return it->second;
    // Bounds what the memo pins (each entry holds its instruction and the images).
    if (memo_.size() >= kMemoEntries) memo_.clear();
    GroupMemo m;
    m.pin = instr;
    for (std::int64_t g : group) m.images.push_back(image_[static_cast<std::size_t>(g)]);
    std::sort(m.images.begin(), m.images.end());
    m.images.erase(std::unique(m.images.begin(), m.images.end()), m.images.end());
    m.leader = m.images.empty() ? 0 : m.images.front();
    const CollectiveInstr& c = *instr;
    if (c.groups && c.groups->groups.size() >= 2) {
        for (const auto& g : c.groups->groups) {
            if (!g.empty() && std::binary_search(m.images.begin(), m.images.end(),
                                                 image_[static_cast<std::size_t>(g.front())]))
                m.run.push_back(&g);
        }
    }
    return memo_.emplace(&group, std::move(m)).first->second;
}

void CollectiveRendezvous::arrive(const std::shared_ptr<const CollectiveInstr>& instr,
                                  std::uint32_t op, std::int64_t core, const Arrival& a) {
    const CollectiveInstr& c = *instr;
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
    // Under symmetry the group's images, its leader and the groups it starts come from the
    // memo: computed at the group's first arrival, not at every core's (a sort of up to every
    // core's image, for each of the unit's cores).
    const std::vector<std::int64_t>& group = c.group_of(core);
    std::int64_t leader = group.empty() ? 0 : group.front();
    std::size_t expected = group.size();
    const GroupMemo* m = nullptr;
    if (!image_.empty()) {
        m = &memo(instr, group);
        leader = m->leader;
        expected = m->images.size();
    }
    Pending& p = pending_[{c.instance, leader}];
    ++p.arrived;
    if (p.done.empty()) p.done.reserve(expected);
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
    const std::vector<const std::vector<std::int64_t>*>& run = m->run;
    const std::size_t batch = batches_.size();
    batches_.push_back(Batch{op, run.size()});
    // The replies by the first core of their group, in arrival order.
    std::unordered_map<std::int64_t, std::vector<Arrival>> by_group;
    for (Arrival& r : replies) by_group[c.group_of(r.req.issuer.core).front()].push_back(r);
    for (const std::vector<std::int64_t>* g : run) {
        const auto it = by_group.find(g->front());
        std::vector<Arrival> own;
        if (it != by_group.end()) own = std::move(it->second);
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
