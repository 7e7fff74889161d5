#pragma once
// Event-driven ICI network in plain C++: directed links with serialisation at the link
// bandwidth (core clock), latency and credit-based flow control; one router per chip that
// arbitrates each output link round robin between its inputs (incoming links, two virtual
// channels each, and the messages being injected on the chip). Contention is simulated.
//
// Granularity: a message moves as trains of packets of up to ici.chunk_bytes. A train is
// forwarded cut-through: its head can leave a router once its first packet has arrived, its
// tail no earlier than one packet after the tail arrived. It reserves its credits at once and
// frees them when its tail leaves the receiver, so the buffer is scaled to give trains the
// window packets would have (docs/ici.md).
//
// Time is kept in ticks of 1/1024 core cycle so that serialisation of a 512 B packet at
// 87.2 B/cycle does not lose bandwidth to rounding; callers see cycles.
#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "tpusim/common/types.h"
#include "tpusim/config/ici_config.h"
#include "tpusim/config/topology.h"
#include "tpusim/stats/stats.h"

namespace tpusim {

class Timeline;

using Tick = std::uint64_t;
inline constexpr Tick kTicksPerCycle = 1024;
inline Cycle ticks_to_cycles(Tick t) { return (t + kTicksPerCycle - 1) / kTicksPerCycle; }

// The event queue shared by the fabric and the collective engine that drives it. Events of
// one tick leave by rank, then in the order they came (seq); every event has rank 0 unless
// ici.tick_order = by_link, where an event one chip puts on another's link gets the rank of
// that link's direction (IciFabric, docs/ici.md "Symmetric collectives").
struct IciEvent {
    Tick when = 0;
    std::uint64_t seq = 0;
    std::uint8_t kind = 0;
    std::uint8_t rank = 0;  // beside kind: the event stays 40 bytes
    std::uint32_t a = 0, b = 0;
    std::uint64_t c = 0;
    bool operator>(const IciEvent& o) const {
        if (when != o.when) return when > o.when;
        return rank != o.rank ? rank > o.rank : seq > o.seq;
    }
};

// Events leave in (when, rank, seq) order, and seq grows with every push, so the events of
// one tick and rank leave in the order they came: exactly the order of a heap of (when, rank,
// seq). The queue is a radix heap on the key tick x 16 + rank (the tie-break by seq is the
// FIFO order within a bucket): an event goes to the bucket of the highest bit in which its key
// differs from the last key that left, so a push is an append; when bucket 0 (the last key)
// is empty, the lowest non-empty bucket is spread over the buckets below it around its
// smallest key. Appends and that spreading keep equal keys in the order they came, and read
// and write the buckets' vectors in sequence, where a heap or a hash table of keys would
// touch memory at random: on a pod, most of the fabric's events have a key of their own.
// Keys only grow (the fabric's events are pushed at or after the current tick), except a
// chip's own event at the current tick with a rank below the event being handled (rank 0
// under ranks 1 .. 8); those go to a small heap of their own, which leaves first: its keys
// are below every key in the buckets.
class IciEventQueue {
 public:
    static constexpr std::uint8_t kRanks = 9;  // ranks 0 .. 8 (IciFabric)
    void push(Tick when, std::uint8_t kind, std::uint32_t a = 0, std::uint32_t b = 0,
              std::uint64_t c = 0, std::uint8_t rank = 0) {
        const IciEvent e{when, seq_++, kind, rank, a, b, c};
        const std::uint64_t k = key(e);
        ++size_;
        if (k < last_) {
            push_early(e);
            return;
        }
        const unsigned i = bucket_of(k);
        buckets_[i].push_back(e);
        if (i) nonempty_ |= std::uint64_t{1} << (i - 1);
    }
    bool empty() const { return size_ == 0; }
    std::size_t size() const { return size_; }
    // Contract for top() and pop(): not empty().
    const IciEvent& top() const {
        settle();
        return early_.empty() ? buckets_[0][head_] : early_.front();
    }
    IciEvent pop() {
        settle();
        --size_;
        if (!early_.empty()) return pop_early();
        std::vector<IciEvent>& b = buckets_[0];
        const IciEvent e = b[head_++];
        if (head_ == b.size()) {
            b.clear();
            head_ = 0;
        }
        return e;
    }

 private:
    static constexpr int kRankBits = 4;  // 16 > kRanks; ticks stay below 2^60
    static std::uint64_t key(const IciEvent& e) { return (e.when << kRankBits) | e.rank; }
    // 0 for the last key; else 1 + the highest bit in which k differs from it (1 .. 64).
    unsigned bucket_of(std::uint64_t k) const {
        return k == last_ ? 0u : 64u - static_cast<unsigned>(__builtin_clzll(k ^ last_));
    }
    void settle() const;  // bucket 0 holds the next event unless the early heap does
    void push_early(const IciEvent& e);
    IciEvent pop_early();

    // The queue's order is fixed by what was pushed; top() may spread a bucket to find it.
    mutable std::vector<IciEvent> buckets_[65];
    mutable std::size_t head_ = 0;        // the next event of bucket 0
    mutable std::uint64_t last_ = 0;      // the key of bucket 0
    mutable std::uint64_t nonempty_ = 0;  // bit i - 1: bucket i holds events (i >= 1)
    std::vector<IciEvent> early_;         // a min-heap of keys below last_
    std::uint64_t seq_ = 0;
    std::size_t size_ = 0;
};

// The fabric's client (the collective engine): told when a train's tail has reached the
// destination chip (after its router), with the tag its message was sent with.
class IciDeliveryIf {
 public:
    virtual ~IciDeliveryIf() = default;
    virtual void deliver(std::uint64_t tag, Bytes bytes, Tick when) = 0;
};

class IciFabric {
 public:
    // Event kinds below this value belong to the fabric.
    static constexpr std::uint8_t kFabricEventKinds = 8;

    // Contract: `topo`, `queue` and `client` outlive the fabric.
    IciFabric(const Topology& topo, const IciConfig& cfg, double clock_mhz, IciEventQueue& queue,
              IciDeliveryIf& client);
    ~IciFabric();

    // Moves `bytes` from src_chip to dst_chip, injected at `when` (>= the current tick); the
    // destination sees deliveries tagged `tag` whose bytes sum to `bytes`. src == dst crosses
    // only the router and arrives as one delivery.
    void send(int src_chip, int dst_chip, Bytes bytes, Tick when, std::uint64_t tag,
              int prefer_sign = 1);
    void handle(const IciEvent& e);

    // Link model figures in ticks, derived from the config (also used by tests and bounds).
    Tick serialise_ticks(Bytes bytes) const;
    Tick latency_ticks() const { return latency_; }
    Tick router_ticks() const { return router_; }
    Bytes train_bytes() const { return train_bytes_; }
    Bytes packet_bytes() const { return packet_bytes_; }
    std::uint32_t credit_capacity() const { return credit_capacity_; }
    double link_bytes_per_cycle() const { return bytes_per_cycle_; }

    const Topology& topology() const { return topo_; }
    // Per-link statistics: bytes and busy time, one child group per directed link.
    const StatGroup& stats() const { return stats_; }
    Bytes link_bytes(std::size_t link) const;
    Tick link_busy_ticks(std::size_t link) const;
    // Records one track per link ("ici chip N", "link +x") with its busy intervals.
    void attach_timeline(Timeline* timeline);
    // Writes pending timeline spans; call once the simulation is over.
    void flush_timeline();
    // Elapsed time used by the busy-fraction formulas.
    void set_elapsed(Tick t) { elapsed_ = t; }
    bool has_timeline() const { return timeline_ != nullptr; }

    // What a link has carried, for IciEngine's symmetric collectives (docs/ici.md): a link of
    // the tile torus is simulated and its figures are added to every link it stands for.
    struct LinkCounters {
        Bytes bytes = 0;
        std::uint64_t trains = 0;
        Tick busy_ticks = 0;
    };
    LinkCounters link_counters(std::size_t link) const;
    void add_link_counters(std::size_t link, const LinkCounters& c);
    // The round-robin pointer of the link's output arbiter (the input it tries first).
    std::uint32_t arbiter(std::size_t link) const;
    void set_arbiter(std::size_t link, std::uint32_t rr);

 private:
    static constexpr std::uint32_t kEject = ~std::uint32_t{0};
    struct Train {
        std::uint32_t msg = 0;
        std::uint32_t bytes = 0;
        std::uint16_t hop = 0;        // index of the next hop in the message's route
        std::uint8_t vc = 0;          // that hop's virtual channel
        std::uint32_t link = kEject;  // that hop's link; kEject: the train is at its destination
        Tick tail_ready = 0;          // when the tail is in the current router
    };
    struct Message {
        std::vector<Topology::Hop> route;
        Bytes to_inject = 0;  // not yet granted onto the first link
        Bytes in_flight = 0;  // not yet ejected at the destination
        std::uint64_t tag = 0;
        int src_chip = 0;
    };
    struct LinkState;
    struct Router {
        std::vector<std::uint32_t> in_links;
        std::vector<std::uint32_t> injecting;  // message ids with bytes left to inject
        // Bit 2 k + vc: the input buffer of in_links[k], virtual channel vc, holds a train
        // (the arbiter skips empty buffers without reading them).
        std::uint64_t occupied = 0;
    };
    enum Kind : std::uint8_t { kInject = 0, kArrive, kLinkFree, kCredit, kDeliver };

    std::uint32_t credits_for(Bytes bytes) const;
    // The train's next hop (link and virtual channel) from its message's route.
    void set_hop(Train& t, std::uint16_t hop) const;
    // The input-buffer bit of (link, vc) in its receiving router's `occupied`.
    std::uint64_t input_bit(std::uint32_t link, int vc) const {
        return std::uint64_t{1} << (2 * in_index_[link] + static_cast<unsigned>(vc));
    }
    Router& receiver(std::uint32_t link) {
        return routers_[static_cast<std::size_t>(topo_.links()[link].dst_chip)];
    }
    std::uint8_t rank(std::uint32_t link, Kind kind) const;
    void try_output(std::uint32_t link, Tick now);
    void service_input(std::uint32_t link, int vc, Tick now);
    void grant(std::uint32_t link, Train t, int from_link, int from_vc, Tick now);
    std::uint32_t alloc_message();
    void free_message(std::uint32_t id);
    void record_busy(std::uint32_t link, Tick start, Tick end);

    const Topology& topo_;
    IciEventQueue& queue_;
    IciDeliveryIf& client_;
    double bytes_per_cycle_;
    Tick latency_, router_;
    Bytes packet_bytes_, train_bytes_;
    std::uint32_t credit_capacity_;
    bool by_link_ = false;  // ici.tick_order = by_link: events between chips ranked by link
    std::vector<std::unique_ptr<LinkState>> links_;
    std::vector<Router> routers_;
    std::vector<std::uint32_t> in_index_;  // per link: its place in its receiver's in_links
    std::vector<Message> messages_;
    std::vector<std::uint32_t> free_messages_;
    std::vector<Train> parked_;  // trains in flight on a link, by event payload index
    std::vector<std::uint32_t> free_parked_;
    StatGroup stats_{"ici", "inter-chip interconnect, one group per directed link"};
    Tick elapsed_ = 0;
    Timeline* timeline_ = nullptr;
};

}  // namespace tpusim
