#pragma once
// Inter-chip interconnect (ICI) links and routers. Sources and uncertainty: docs/ici.md.
#include <array>
#include <cstdint>
#include <string>

#include "tpusim/config/visitor.h"

namespace tpusim {

// ring: XLA's bidirectional ring over every participant (the -8 boards); torus2d: reduce-scatter
// and all-gather along each torus dimension in turn (pod slices; docs/ici.md).
enum class AllReduceAlgorithm { Ring, Torus2d };
inline constexpr std::array<const char*, 2> kAllReduceAlgorithmNames = {"ring", "torus2d"};

// How a collective cuts a buffer into n blocks (shards, ring blocks, pieces, the halves of a
// bidirectional ring): padded, as XLA shards a dimension (HloSharding::TileShape: every shard
// holds ceil(elements / n) elements, the last ones padded), so every block is the same size;
// exact, to the byte, the first blocks a byte longer where n does not divide the buffer (the
// rule before issue #37's SSD v3-2048 work; blocks then depend on a core's place in a ring).
enum class ShardSplit { Padded, Exact };
inline constexpr std::array<const char*, 2> kShardSplitNames = {"padded", "exact"};

// The order in which the ICI model handles the events of one tick (docs/ici.md, "Symmetric
// collectives"): fifo, the order they were made in; by_link, an event one chip makes for
// another (a train arriving, a credit returning) ranked by its link's direction first.
enum class IciTickOrder { Fifo, ByLink };
inline constexpr std::array<const char*, 2> kIciTickOrderNames = {"fifo", "by_link"};

// Why the ICI packet and chunk sizes are powers of two: a chunk (a train of packets on a
// link) holds a whole number of packets (IciFabric divides one by the other).
inline constexpr const char* kWholePackets = "a chunk holds a whole number of packets";

struct IciConfig {
    std::int64_t links_per_chip = 4;
    // GB/s per direction: ~656 Gbit/s per v3 link [NORn] = 82 GB/s; [SB] quotes ~100 GB/s
    // one-way. The spread is the main uncertainty of every ICI figure (docs/ici.md).
    double link_bandwidth_gbps = 82.0;
    double link_latency_ns = 500.0;  // wire + SerDes, one hop; not published (docs/ici.md)
    std::int64_t packet_bytes = 512;
    // Receive buffer per link input and virtual channel, in packets. Not published; 256 x 512 B
    // covers the credit round trip (2 x 500 ns x 82 GB/s = 82 KB) so a link can stream at its
    // bandwidth. Fewer credits throttle a link to credits x packet / round trip.
    std::int64_t credits_per_link = 256;
    std::int64_t router_latency_cycles = 8;
    // Simulation granularity: a transfer moves as trains of packets of up to chunk_bytes; a
    // train is forwarded cut-through and reserves its credits at once. Equal to packet_bytes,
    // every packet is simulated. docs/ici.md shows the error of coarse trains.
    std::int64_t chunk_bytes = 65536;
    // Fraction of the link rate that carries payload (packet headers, CRC, flow control,
    // encoding; not published). 1 = the raw rate; the board files set the value calibrated on
    // validation/measured/allreduce_TPUv3_calibration.csv (docs/config.md, calibrated keys).
    double link_efficiency = 1.0;
    // Fixed device-side cost of starting a collective (all-reduce, reduce-scatter, all-gather,
    // all-to-all): the participating cores agree that every buffer is ready and the schedule's
    // DMA descriptors are written. Point-to-point transfers do not pay it. Calibrated with
    // link_efficiency (board files).
    double collective_setup_us = 0.0;
    // torus2d on pod slices; the -8 board files select XLA's ring (docs/ici.md).
    AllReduceAlgorithm all_reduce_algorithm = AllReduceAlgorithm::Torus2d;
    // torus2d: pieces per dimension order, run as concurrent streams so that one piece's
    // on-chip reduction overlaps another's link transfers (docs/ici.md).
    std::int64_t all_reduce_pieces = 4;
    // Block sizes of every collective's split (above; docs/ici.md, "Block sizes").
    ShardSplit shard_split = ShardSplit::Padded;
    // Simulation shortcut, not hardware: a collective that repeats a tile of the torus (every
    // core the schedule of its translates, every transfer on chip or one hop) is simulated on
    // the tile, with identical cycles and figures (docs/ici.md, "Symmetric collectives").
    // false simulates every link and core.
    bool fold_symmetric = true;
    // Same-tick event order (above). Only by_link makes the model's chips on a torus behave
    // alike under translation, which fold_symmetric needs to be exact: with fifo, events
    // reaching a chip from two neighbours in the same tick are handled in the order those
    // neighbours were visited, which depends on where the wrap-around link is.
    IciTickOrder tick_order = IciTickOrder::ByLink;

    void visit(ConfigVisitor& v) {
        v.value("links_per_chip", links_per_chip, Limits::range(0, 16), "links",
                "off-chip ICI links per chip");
        v.value("link_bandwidth_gbps", link_bandwidth_gbps, Limits::range(0.01, 10000), "GB/s",
                "bandwidth of one link in one direction");
        v.value("link_latency_ns", link_latency_ns, Limits::range(0, 1e6), "ns",
                "latency of one link traversal");
        v.value("packet_bytes", packet_bytes, Limits::pow2_max(1 << 20, kWholePackets), "B",
                "ICI packet size");
        v.value("credits_per_link", credits_per_link, Limits::range(1, 1 << 16), "packets",
                "receive buffer per link input and virtual channel (credit-based flow control)");
        v.value("router_latency_cycles", router_latency_cycles, Limits::range(0, 1e6), "cycles",
                "router traversal, core clock");
        v.value("chunk_bytes", chunk_bytes, Limits::pow2_max(1 << 26, kWholePackets), "B",
                "simulation granularity: largest train of packets scheduled as one transfer");
        v.value("link_efficiency", link_efficiency, Limits::range(0.01, 1.0), "fraction",
                "payload fraction of the link rate (headers, CRC, flow control)");
        v.value("collective_setup_us", collective_setup_us, Limits::range(0, 1e6), "us",
                "fixed cost of starting a collective on the cores (barrier, descriptors)");
        v.choice("all_reduce_algorithm", all_reduce_algorithm, kAllReduceAlgorithmNames,
                 "all-reduce algorithm");
        v.value("all_reduce_pieces", all_reduce_pieces, Limits::range(1, 64), "pieces",
                "torus2d: buffer pieces per dimension order, pipelined as concurrent streams");
        v.choice("shard_split", shard_split, kShardSplitNames,
                 "how a collective cuts a buffer into blocks: padded, equal blocks of whole "
                 "elements as XLA shards (the buffer padded); exact, to the byte");
        v.value("fold_symmetric", fold_symmetric,
                "simulate a collective that repeats a tile of the torus on the tile alone "
                "(exact; needs tick_order = by_link); false: every link");
        v.choice("tick_order", tick_order, kIciTickOrderNames,
                 "order of the ICI events of one tick: fifo, or by_link (events between chips "
                 "ranked by link direction; translation-symmetric)");
    }
};

}  // namespace tpusim
