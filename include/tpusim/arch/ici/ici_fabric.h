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
#include <queue>
#include <unordered_map>
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
// one tick and rank leave in the order they came. The queue keeps one FIFO bucket per
// distinct (tick, rank), keyed tick x 16 + rank, and a heap of the keys: a symmetric
// collective puts the same event on many chips at the same tick (thousands on a pod), and
// those cost O(1) each instead of a heap operation on thousands of events. The order is
// exactly that of a heap of (when, rank, seq).
class IciEventQueue {
 public:
    static constexpr std::uint8_t kRanks = 9;  // ranks 0 .. 8 (IciFabric)
    void push(Tick when, std::uint8_t kind, std::uint32_t a = 0, std::uint32_t b = 0,
              std::uint64_t c = 0, std::uint8_t rank = 0) {
        bucket((when << kRankBits) | rank)
            .events.push_back(IciEvent{when, seq_++, kind, rank, a, b, c});
        ++size_;
    }
    bool empty() const { return size_ == 0; }
    std::size_t size() const { return size_; }
    // Contract for top() and pop(): not empty().
    const IciEvent& top() const {
        const Bucket& f = front();
        return f.events[f.head];
    }
    IciEvent pop() {
        Bucket& f = front();
        IciEvent e = f.events[f.head++];
        --size_;
        if (f.head == f.events.size()) retire_front();
        return e;
    }

 private:
    static constexpr int kRankBits = 4;  // 16 > kRanks; ticks stay below 2^60
    struct Bucket {
        std::vector<IciEvent> events;
        std::size_t head = 0;  // the next event to leave
    };
    Bucket& bucket(std::uint64_t key);
    Bucket& front() const { return *front_; }
    void retire_front();

    // The live buckets by key: an open-addressing table (linear probing, a power-of-two size,
    // Fibonacci hashing of the key) of indices into pool_, whose buckets never move and keep
    // their events' storage for reuse; keys_ orders the keys with their bucket's index.
    static constexpr std::uint32_t kNoBucket = ~std::uint32_t{0};
    struct Slot {
        std::uint64_t key = 0;
        std::uint32_t bucket = kNoBucket;
    };
    std::size_t home(std::uint64_t key) const {
        return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
    }
    std::size_t find_slot(std::uint64_t key) const;  // the slot holding key (it is live)
    void erase_slot(std::size_t i);
    void grow();
    using Keyed = std::pair<std::uint64_t, std::uint32_t>;                      // key, bucket index
    std::priority_queue<Keyed, std::vector<Keyed>, std::greater<Keyed>> keys_;  // one per bucket
    std::vector<Slot> table_;
    unsigned shift_ = 64;
    std::size_t live_ = 0;
    std::deque<Bucket> pool_;          // deque: a Bucket does not move
    std::vector<std::uint32_t> free_;  // retired buckets of pool_
    Bucket* front_ = nullptr;          // the bucket of keys_.top()
    Bucket* last_ = nullptr;           // the bucket pushed to last, and its key
    std::uint64_t last_key_ = 0;
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
    struct Train {
        std::uint32_t msg = 0;
        std::uint32_t bytes = 0;
        std::uint32_t hop = 0;  // index of the next hop in the message's route
        Tick tail_ready = 0;    // when the tail is in the current router
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
    };
    enum Kind : std::uint8_t { kInject = 0, kArrive, kLinkFree, kCredit, kDeliver };

    std::uint32_t credits_for(Bytes bytes) const;
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
    std::vector<Message> messages_;
    std::vector<std::uint32_t> free_messages_;
    std::vector<Train> parked_;  // trains in flight on a link, by event payload index
    std::vector<std::uint32_t> free_parked_;
    StatGroup stats_{"ici", "inter-chip interconnect, one group per directed link"};
    Tick elapsed_ = 0;
    Timeline* timeline_ = nullptr;
};

}  // namespace tpusim
