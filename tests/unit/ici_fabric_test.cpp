// ICI fabric: packet latency from the link parameters, serialisation, credits and contention.
// Expected times are derived here from the config, in ticks of 1/1024 core cycle.
#include "tpusim/arch/ici/ici_fabric.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "tpusim/config/ici_config.h"

using namespace tpusim;

namespace {

constexpr double kMhz = 940.0;

// A fabric on its own event queue that records when each tag's last byte arrived.
struct Rig final : IciDeliveryIf {
    Rig(const Topology& t, const IciConfig& c) : fabric(t, c, kMhz, queue, *this) {}
    void deliver(std::uint64_t tag, Bytes b, Tick when) override {
        got[tag] += b;
        last[tag] = when;
    }
    void run() {
        while (!queue.empty()) fabric.handle(queue.pop());
    }
    IciEventQueue queue;
    IciFabric fabric;
    std::map<std::uint64_t, Bytes> got;
    std::map<std::uint64_t, Tick> last;
};

Tick ser(const IciConfig& c, Bytes b) {
    const double bytes_per_cycle = c.link_bandwidth_gbps * 1e3 / kMhz;  // GB/s / MHz
    return static_cast<Tick>(std::ceil(static_cast<double>(b) * 1024 / bytes_per_cycle));
}
Tick lat(const IciConfig& c) {
    return static_cast<Tick>(std::llround(c.link_latency_ns * kMhz / 1e3 * 1024));
}
Tick router(const IciConfig& c) { return static_cast<Tick>(c.router_latency_cycles) * 1024; }

}  // namespace

TEST_CASE("a single packet's latency follows from the link parameters", "[ici][fabric]") {
    IciConfig c;  // v3 defaults: 82 GB/s, 500 ns, 512 B packets, 8-cycle routers
    const Topology t(4, 1, false, 1);
    Rig rig(t, c);
    rig.fabric.send(0, 1, c.packet_bytes, 0, 1);
    rig.run();
    Rig far(t, c);
    far.fabric.send(0, 3, c.packet_bytes, 0, 2);
    far.run();
    // One hop: serialise the packet, cross the link, cross the receiving router.
    const Tick hop = ser(c, 512) + lat(c) + router(c);
    REQUIRE(rig.last[1] == hop);
    // Three hops, store-and-forward of a single packet at each router.
    REQUIRE(far.last[2] == 3 * hop);
    // About 500 ns + 6 ns + 8.5 ns at 940 MHz.
    REQUIRE(ticks_to_cycles(rig.last[1]) == 484);
    // On chip the router turns the data around.
    Rig local(t, c);
    local.fabric.send(2, 2, 4096, 0, 7);
    local.run();
    REQUIRE(local.last[7] == router(c));
}

TEST_CASE("a long message streams at the link bandwidth", "[ici][fabric]") {
    IciConfig c;
    const Topology t(2, 1, false, 1);
    Rig rig(t, c);
    const Bytes bytes = 4 * kMiB;
    rig.fabric.send(0, 1, bytes, 0, 1);
    rig.run();
    REQUIRE(rig.got[1] == bytes);
    // Trains leave back to back (the buffer covers the credit round trip), so the tail
    // arrives after the whole message's serialisation plus one link and router latency; each
    // train's serialisation rounds up by under a tick.
    const Tick trains = bytes / static_cast<Bytes>(c.chunk_bytes);
    const Tick expect = ser(c, bytes) + lat(c) + router(c);
    REQUIRE(rig.last[1] >= expect);
    REQUIRE(rig.last[1] <= expect + trains);
    REQUIRE(rig.fabric.link_bytes(0) == bytes);
}

TEST_CASE("two flows contend for one link and share it round robin", "[ici][fabric]") {
    IciConfig c;
    const Topology t(3, 1, false, 1);  // 0 - 1 - 2, no wrap
    const Bytes bytes = 2 * kMiB;
    Rig alone(t, c);
    alone.fabric.send(0, 2, bytes, 0, 1);
    alone.run();
    Rig both(t, c);
    both.fabric.send(0, 2, bytes, 0, 1);  // over 0->1 and 1->2
    both.fabric.send(1, 2, bytes, 0, 2);  // over 1->2 only
    both.run();
    // Link 1->2 must carry both messages: at least 2 x serialisation plus one hop latency.
    const std::size_t l12 = static_cast<std::size_t>(t.link_from(1, 0, 1));
    REQUIRE(both.fabric.link_bytes(l12) == 2 * bytes);
    const Tick floor = ser(c, 2 * bytes) + lat(c) + router(c);
    const Tick finish = std::max(both.last[1], both.last[2]);
    REQUIRE(finish >= floor);
    // ... and the arbiter keeps it busy: within two trains of that bound.
    REQUIRE(finish <= floor + 2 * ser(c, static_cast<Bytes>(c.chunk_bytes)) + lat(c) + router(c));
    // Round robin: the two flows finish within a couple of trains of each other, and the
    // contended flow finishes much later than it would alone.
    const Tick gap =
        both.last[1] > both.last[2] ? both.last[1] - both.last[2] : both.last[2] - both.last[1];
    REQUIRE(gap <= 2 * ser(c, static_cast<Bytes>(c.chunk_bytes)) + lat(c) + router(c));
    REQUIRE(both.last[1] > alone.last[1] + ser(c, bytes) / 2);
}

TEST_CASE("credits throttle a link whose buffer does not cover the round trip", "[ici][fabric]") {
    IciConfig c;
    c.chunk_bytes = c.packet_bytes;  // packet by packet
    c.credits_per_link = 16;
    const Topology t(2, 1, false, 1);
    Rig rig(t, c);
    const Bytes bytes = 1 * kMiB;
    rig.fabric.send(0, 1, bytes, 0, 1);
    rig.run();
    // A packet's credit comes back one round trip after it was granted: serialisation, link,
    // router (the tail is ejected), then the link again. 16 packets per round trip.
    const Tick rtt = ser(c, 512) + lat(c) + router(c) + lat(c);
    const double packets = static_cast<double>(bytes / 512);
    const double expect = packets / 16.0 * static_cast<double>(rtt);
    REQUIRE(static_cast<double>(rig.last[1]) == Approx(expect).epsilon(0.02));
    // Far slower than the wire would allow.
    REQUIRE(rig.last[1] > 5 * ser(c, bytes));
}

TEST_CASE("packet trains give the packet-level timing", "[ici][fabric]") {
    // Two flows converge on one link of a 4 x 1 torus while a third crosses the wrap link.
    const Topology t(4, 1, true, 1);
    auto run = [&](std::int64_t chunk, std::int64_t credits) {
        IciConfig c;
        c.chunk_bytes = chunk;
        c.credits_per_link = credits;
        Rig rig(t, c);
        rig.fabric.send(0, 2, 1 * kMiB, 0, 1);
        rig.fabric.send(1, 2, 1 * kMiB, 0, 2);
        rig.fabric.send(3, 1, 512 * kKiB, 1000 * 1024, 3);
        rig.run();
        return rig.last;
    };
    SECTION("buffer covering the round trip (the shipped configs): within one train") {
        // 256 credits x 512 B = 128 KiB > 2 x 500 ns x 82 GB/s. Trains interleave on the
        // contended link in 64 KiB turns instead of 512 B ones, so one flow's end may move by
        // up to one train's serialisation; the last end stays within 0.5%.
        const std::int64_t train = 65536;
        const auto fine = run(512, 256);
        const auto coarse = run(train, 256);
        Tick fine_end = 0, coarse_end = 0;
        for (std::uint64_t tag = 1; tag <= 3; ++tag) {
            INFO("tag " << tag);
            const Tick a = fine.at(tag), b = coarse.at(tag);
            REQUIRE((a > b ? a - b : b - a) <= ser(IciConfig{}, train));
            fine_end = std::max(fine_end, a);
            coarse_end = std::max(coarse_end, b);
        }
        REQUIRE(static_cast<double>(coarse_end) ==
                Approx(static_cast<double>(fine_end)).epsilon(0.005));
    }
    SECTION("credit-limited links: trains of 1/32 of the buffer within 5%") {
        // 128 credits (64 KiB) throttle the link; the window is counted in whole trains, so
        // trains must be small against the buffer (docs/ici.md gives the table).
        const auto fine = run(512, 128);
        const auto coarse = run(2048, 128);
        for (std::uint64_t tag = 1; tag <= 3; ++tag) {
            INFO("tag " << tag);
            REQUIRE(static_cast<double>(coarse.at(tag)) ==
                    Approx(static_cast<double>(fine.at(tag))).epsilon(0.05));
        }
    }
}

TEST_CASE("a train behind a blocked head of its buffer is ejected when the head has left",
          "[ici][fabric]") {
    // 0 - 1 - 2 without wrap-around, trains of up to 1 MiB. A 1 MiB message from chip 1 to
    // chip 2 holds link 1->2 for one long train, so a small message passing through chip 1
    // towards 2 waits at the head of chip 1's buffer of link 0->1; the packet for chip 1 itself
    // behind it can only leave that buffer (one FIFO per link and virtual channel) after it,
    // however early its tail arrived.
    IciConfig c;
    c.chunk_bytes = static_cast<std::int64_t>(kMiB);
    const Topology t(3, 1, false, 1);
    struct Ordered final : IciDeliveryIf {
        Ordered(const Topology& topo, const IciConfig& cfg)
            : fabric(topo, cfg, kMhz, queue, *this) {}
        void deliver(std::uint64_t tag, Bytes, Tick when) override {
            last[tag] = when;
            REQUIRE(when >= now);  // nothing is delivered in the past
        }
        void run() {
            while (!queue.empty()) {
                const IciEvent e = queue.pop();
                REQUIRE(e.when >= now);  // time never runs back
                now = e.when;
                fabric.handle(e);
            }
        }
        IciEventQueue queue;
        IciFabric fabric;
        std::map<std::uint64_t, Tick> last;
        Tick now = 0;
    };
    const Bytes small = 4096;
    Ordered alone(t, c), rig(t, c);
    rig.fabric.send(1, 2, kMiB, 0, 1);  // holds link 1->2
    for (Ordered* r : {&alone, &rig}) {
        r->fabric.send(0, 2, small, 0, 2);           // through chip 1
        r->fabric.send(0, 1, c.packet_bytes, 0, 3);  // for chip 1, behind it
        r->run();
    }
    // The through message waited at chip 1 for the long train (else nothing is tested), long
    // after the packet behind it had arrived there ...
    REQUIRE(rig.last[2] >= alone.last[2] + ser(c, kMiB) / 2);
    const Tick hop = ser(c, small) + lat(c) + router(c);
    REQUIRE(alone.last[3] < rig.last[2] - hop);
    // ... and that packet left the buffer when the through message was granted link 1->2
    // (its arrival at chip 2 less one hop: its tail had long arrived, so its serialisation
    // decides).
    REQUIRE(rig.last[3] == rig.last[2] - hop);
}
