#include "tpusim/arch/ici/ici_fabric.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "tpusim/stats/timeline.h"

namespace tpusim {

struct IciFabric::LinkState {
    explicit LinkState(const std::string& name) : stats(name, "one direction of an ICI link") {}
    std::deque<Train> in_q[2];  // the receiver's input buffer, per virtual channel
    Tick busy_until = 0;
    std::uint32_t credits[2] = {0, 0};
    std::uint32_t rr = 0;  // round-robin pointer of this output's arbiter
    std::uint64_t bytes = 0;
    std::uint64_t busy_ticks = 0;
    std::uint64_t trains = 0;
    StatGroup stats;
    std::uint32_t track = 0;
    bool span_open = false;
    Tick span_start = 0, span_end = 0;
};

IciFabric::IciFabric(const Topology& topo, const IciConfig& cfg, double clock_mhz,
                     IciEventQueue& queue, IciDeliveryIf& client)
    : topo_(topo),
      queue_(queue),
      client_(client),
      bytes_per_cycle_(cfg.link_bandwidth_gbps * cfg.link_efficiency * 1e3 / clock_mhz),
      latency_(static_cast<Tick>(std::llround(cfg.link_latency_ns * clock_mhz / 1e3 *
                                              static_cast<double>(kTicksPerCycle)))),
      router_(static_cast<Tick>(cfg.router_latency_cycles) * kTicksPerCycle),
      packet_bytes_(static_cast<Bytes>(cfg.packet_bytes)),
      train_bytes_(std::max<Bytes>(static_cast<Bytes>(cfg.chunk_bytes), packet_bytes_)),
      by_link_(cfg.tick_order == IciTickOrder::ByLink) {
    // A train reserves all its credits when it is granted and frees them when its tail has
    // left the receiver, one train serialisation later than its packets would on average.
    // The receiver's buffer is scaled by the ratio of the two holding times (the credit round
    // trip of a packet, and of a train), so that trains see the window packets would see.
    // A buffer smaller than one train is raised to one train (docs/ici.md).
    const Tick pkt = serialise_ticks(packet_bytes_);
    const double rtt = static_cast<double>(pkt + 2 * latency_ + router_);
    const double scale = (rtt + static_cast<double>(serialise_ticks(train_bytes_) - pkt)) / rtt;
    const auto train_packets = static_cast<std::uint32_t>(train_bytes_ / packet_bytes_);
    credit_capacity_ =
        static_cast<std::uint32_t>(std::ceil(static_cast<double>(cfg.credits_per_link) * scale));
    credit_capacity_ = std::max(credit_capacity_, train_packets);
    routers_.resize(static_cast<std::size_t>(topo.chips()));
    const auto& links = topo.links();
    for (std::size_t i = 0; i < links.size(); ++i) {
        auto l = std::make_unique<LinkState>(links[i].name);
        l->credits[0] = l->credits[1] = credit_capacity_;
        l->stats.counter("bytes", l->bytes, "B", "bytes sent over this link direction");
        l->stats.counter("trains", l->trains, "trains", "packet trains sent (simulation unit)");
        LinkState* raw = l.get();
        l->stats.formula(
            "busy_cycles", [raw] { return static_cast<double>(raw->busy_ticks) / kTicksPerCycle; },
            "cycles", "cycles the link was serialising data");
        l->stats.formula(
            "busy_fraction",
            [raw, this] {
                return elapsed_
                           ? static_cast<double>(raw->busy_ticks) / static_cast<double>(elapsed_)
                           : 0.0;
            },
            "fraction", "busy cycles / elapsed cycles");
        stats_.add_child(l->stats);
        links_.push_back(std::move(l));
        auto& in = routers_[static_cast<std::size_t>(links[i].dst_chip)].in_links;
        in_index_.push_back(static_cast<std::uint32_t>(in.size()));
        in.push_back(static_cast<std::uint32_t>(i));
    }
    for (const Router& r : routers_) {
        if (r.in_links.size() > 32) throw std::logic_error("IciFabric: over 32 links into a chip");
    }
}

IciFabric::~IciFabric() = default;

Tick IciFabric::serialise_ticks(Bytes bytes) const {
    return static_cast<Tick>(
        std::ceil(static_cast<double>(bytes) * kTicksPerCycle / bytes_per_cycle_));
}

// ici.tick_order = by_link: an event a chip puts on another chip (a train arriving at the
// link's receiver, a credit returning to its sender) is ranked by the link's direction, so
// that the events of one tick reach every chip in an order that does not depend on where the
// chip sits in the torus (docs/ici.md, "Symmetric collectives"). Events a chip puts on itself
// keep rank 0 and the order they came in.
std::uint8_t IciFabric::rank(std::uint32_t link, Kind kind) const {
    if (!by_link_) return 0;
    const Topology::Link& l = topo_.links()[link];
    const int dir = l.dim * 2 + (l.sign < 0 ? 1 : 0);
    return static_cast<std::uint8_t>((kind == kArrive ? 1 : 5) + dir);
}

std::uint32_t IciFabric::credits_for(Bytes bytes) const {
    return static_cast<std::uint32_t>(ceil_div(bytes, packet_bytes_));
}

Bytes IciFabric::link_bytes(std::size_t link) const { return links_[link]->bytes; }
Tick IciFabric::link_busy_ticks(std::size_t link) const { return links_[link]->busy_ticks; }

IciFabric::LinkCounters IciFabric::link_counters(std::size_t link) const {
    const LinkState& l = *links_[link];
    return LinkCounters{l.bytes, l.trains, l.busy_ticks};
}

void IciFabric::add_link_counters(std::size_t link, const LinkCounters& c) {
    LinkState& l = *links_[link];
    l.bytes += c.bytes;
    l.trains += c.trains;
    l.busy_ticks += c.busy_ticks;
}

std::uint32_t IciFabric::arbiter(std::size_t link) const { return links_[link]->rr; }
void IciFabric::set_arbiter(std::size_t link, std::uint32_t rr) { links_[link]->rr = rr; }

std::uint32_t IciFabric::alloc_message() {
    if (!free_messages_.empty()) {
        const std::uint32_t id = free_messages_.back();
        free_messages_.pop_back();
        return id;
    }
    messages_.emplace_back();
    return static_cast<std::uint32_t>(messages_.size() - 1);
}

void IciFabric::free_message(std::uint32_t id) {
    messages_[id].route.clear();
    free_messages_.push_back(id);
}

void IciFabric::send(int src_chip, int dst_chip, Bytes bytes, Tick when, std::uint64_t tag,
                     int prefer_sign) {
    if (bytes == 0) return;
    if (src_chip == dst_chip) {
        // On-chip: the router turns it around; the reduction cost model charges the HBM
        // traffic, so no bandwidth is modelled here.
        const std::uint32_t id = alloc_message();
        messages_[id].tag = tag;
        queue_.push(when + router_, kDeliver, id, 1, bytes);
        return;
    }
    const std::uint32_t id = alloc_message();
    Message& m = messages_[id];
    topo_.route_into(src_chip, dst_chip, prefer_sign, m.route);  // a freed message's storage
    m.to_inject = bytes;
    m.in_flight = bytes;
    m.tag = tag;
    m.src_chip = src_chip;
    queue_.push(when, kInject, id);
}

void IciFabric::handle(const IciEvent& e) {
    const Tick now = e.when;
    switch (e.kind) {
        case kInject: {
            const Message& m = messages_[e.a];
            routers_[static_cast<std::size_t>(m.src_chip)].injecting.push_back(e.a);
            try_output(m.route.front().link, now);
            break;
        }
        case kArrive: {
            const Train t = parked_[e.c];
            free_parked_.push_back(static_cast<std::uint32_t>(e.c));
            auto& q = links_[e.a]->in_q[e.b];
            q.push_back(t);
            if (q.size() == 1) {
                receiver(e.a).occupied |= input_bit(e.a, static_cast<int>(e.b));
                service_input(e.a, static_cast<int>(e.b), now);
            }
            break;
        }
        case kLinkFree:
            try_output(e.a, now);
            break;
        case kCredit:
            links_[e.a]->credits[e.b] += static_cast<std::uint32_t>(e.c);
            try_output(e.a, now);
            break;
        case kDeliver: {
            const std::uint64_t tag = messages_[e.a].tag;
            if (e.b) free_message(e.a);  // b: the train that completes the message
            client_.deliver(tag, e.c, now);
            break;
        }
        default:
            throw std::logic_error("IciFabric: unknown event kind");
    }
}

void IciFabric::set_hop(Train& t, std::uint16_t hop) const {
    const std::vector<Topology::Hop>& route = messages_[t.msg].route;
    t.hop = hop;
    if (hop < route.size()) {
        t.link = route[hop].link;
        t.vc = route[hop].vc;
    } else {
        t.link = kEject;
        t.vc = 0;
    }
}

void IciFabric::service_input(std::uint32_t link, int vc, Tick now) {
    auto& q = links_[link]->in_q[vc];
    while (!q.empty()) {
        const Train t = q.front();
        if (t.link != kEject) {
            try_output(t.link, now);
            return;
        }
        Message& m = messages_[t.msg];
        // Ejection never blocks: the train is written to the destination's memory and its
        // buffer space frees once its tail has arrived. A train that waited behind the head
        // of its buffer (head-of-line blocking: a train passing through ahead of it waited for
        // its next link) leaves now, not when its tail arrived: nothing happens in the past.
        const Tick out = std::max(t.tail_ready, now);
        q.pop_front();
        if (q.empty()) receiver(link).occupied &= ~input_bit(link, vc);
        queue_.push(out + latency_, kCredit, link, static_cast<std::uint32_t>(vc),
                    credits_for(t.bytes), rank(link, kCredit));
        m.in_flight -= t.bytes;
        queue_.push(out, kDeliver, t.msg, m.in_flight == 0 ? 1u : 0u, t.bytes);
    }
}

void IciFabric::try_output(std::uint32_t link, Tick now) {
    LinkState& out = *links_[link];
    if (out.busy_until > now) return;  // a kLinkFree event will come back
    Router& r = routers_[static_cast<std::size_t>(topo_.links()[link].src_chip)];
    const std::size_t n_link_inputs = r.in_links.size() * 2;
    const std::size_t n = n_link_inputs + r.injecting.size();
    for (std::size_t k = 0; k < n; ++k) {
        const std::size_t i = (out.rr + k) % n;
        Train t;
        int from_link = -1, from_vc = 0;
        if (i < n_link_inputs) {
            if (!(r.occupied >> i & 1u)) continue;
            from_link = static_cast<int>(r.in_links[i / 2]);
            from_vc = static_cast<int>(i % 2);
            t = links_[static_cast<std::size_t>(from_link)]->in_q[from_vc].front();
        } else {
            const std::uint32_t id = r.injecting[i - n_link_inputs];
            const Message& m = messages_[id];
            if (m.route.front().link != link) continue;
            t.msg = id;
            t.bytes = static_cast<std::uint32_t>(std::min(train_bytes_, m.to_inject));
            t.tail_ready = 0;
            set_hop(t, 0);
        }
        if (t.link != link) continue;
        if (out.credits[t.vc] < credits_for(t.bytes)) continue;
        out.rr = static_cast<std::uint32_t>((i + 1) % n);
        if (from_link < 0) {
            Message& mm = messages_[t.msg];
            mm.to_inject -= t.bytes;
            if (mm.to_inject == 0) {
                r.injecting.erase(r.injecting.begin() +
                                  static_cast<std::ptrdiff_t>(i - n_link_inputs));
            }
        }
        grant(link, t, from_link, from_vc, now);
        return;
    }
}

void IciFabric::grant(std::uint32_t link, Train t, int from_link, int from_vc, Tick now) {
    LinkState& out = *links_[link];
    const std::uint8_t vc = t.vc;
    const Tick ser = serialise_ticks(t.bytes);
    const Tick first = serialise_ticks(std::min<Bytes>(t.bytes, packet_bytes_));
    // Cut-through: the tail cannot leave before it has arrived and been serialised again.
    const Tick end = std::max(now + ser, t.tail_ready + first);
    out.busy_until = end;
    out.bytes += t.bytes;
    ++out.trains;
    record_busy(link, now, end);
    const std::uint32_t need = credits_for(t.bytes);
    out.credits[vc] -= need;
    Train next = t;
    set_hop(next, static_cast<std::uint16_t>(t.hop + 1));
    next.tail_ready = end + latency_ + router_;
    std::uint32_t slot;
    if (!free_parked_.empty()) {
        slot = free_parked_.back();
        free_parked_.pop_back();
        parked_[slot] = next;
    } else {
        slot = static_cast<std::uint32_t>(parked_.size());
        parked_.push_back(next);
    }
    queue_.push(now + first + latency_ + router_, kArrive, link, vc, slot, rank(link, kArrive));
    queue_.push(end, kLinkFree, link);
    if (from_link >= 0) {
        // The train's space in the upstream buffer frees as its tail leaves; the credit
        // travels back over the reverse direction of the link.
        const auto up = static_cast<std::uint32_t>(from_link);
        auto& q = links_[up]->in_q[from_vc];
        q.pop_front();
        if (q.empty()) receiver(up).occupied &= ~input_bit(up, from_vc);
        queue_.push(end + latency_, kCredit, up, static_cast<std::uint32_t>(from_vc), need,
                    rank(up, kCredit));
        service_input(up, from_vc, now);
    }
}

void IciFabric::record_busy(std::uint32_t link, Tick start, Tick end) {
    LinkState& l = *links_[link];
    l.busy_ticks += end - start;
    if (!timeline_) return;
    if (l.span_open && start <= l.span_end + kTicksPerCycle) {
        l.span_end = std::max(l.span_end, end);
        return;
    }
    if (l.span_open) {
        timeline_->span(l.track, "busy", l.span_start / kTicksPerCycle,
                        ticks_to_cycles(l.span_end));
    }
    l.span_open = true;
    l.span_start = start;
    l.span_end = end;
}

void IciFabric::attach_timeline(Timeline* timeline) {
    timeline_ = timeline;
    if (!timeline_) return;
    const auto& links = topo_.links();
    for (std::size_t i = 0; i < links.size(); ++i) {
        const auto& l = links[i];
        links_[i]->track = timeline_->track(
            "ici chip " + std::to_string(l.src_chip),
            std::string("link ") + (l.sign > 0 ? "+" : "-") + (l.dim == 0 ? "x" : "y"));
    }
}

void IciFabric::flush_timeline() {
    if (!timeline_) return;
    for (auto& l : links_) {
        if (!l->span_open) continue;
        timeline_->span(l->track, "busy", l->span_start / kTicksPerCycle,
                        ticks_to_cycles(l->span_end));
        l->span_open = false;
    }
}

}  // namespace tpusim
