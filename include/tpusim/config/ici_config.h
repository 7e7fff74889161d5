#pragma once
// Inter-chip interconnect (ICI) links and routers. Sources and uncertainty: docs/ici.md.
#include <cstdint>
#include <string>

#include "tpusim/config/visitor.h"

namespace tpusim {

struct IciConfig {
    std::int64_t links_per_chip = 4;
    double link_bandwidth_gbps = 82.0;  // GB/s per direction (~656 Gbit/s on v3 [NORn])
    double link_latency_ns = 500.0;     // wire + SerDes, one hop
    std::int64_t packet_bytes = 512;
    std::int64_t credits_per_link = 32;  // packets a receiver buffers per input port
    std::int64_t router_latency_cycles = 8;
    std::string all_reduce_algorithm = "torus2d";

    void visit(ConfigVisitor& v) {
        v.value("links_per_chip", links_per_chip, Limits::range(0, 16), "links",
                "off-chip ICI links per chip");
        v.value("link_bandwidth_gbps", link_bandwidth_gbps, Limits::positive(), "GB/s",
                "bandwidth of one link in one direction");
        v.value("link_latency_ns", link_latency_ns, Limits::non_negative(), "ns",
                "latency of one link traversal");
        v.value("packet_bytes", packet_bytes, Limits::pow2_max(1 << 20), "B", "ICI packet size");
        v.value("credits_per_link", credits_per_link, Limits::range(1, 1 << 16), "packets",
                "receive buffer per link input (credit-based flow control)");
        v.value("router_latency_cycles", router_latency_cycles, Limits::non_negative(), "cycles",
                "router traversal, core clock");
        v.value("all_reduce_algorithm", all_reduce_algorithm, {"ring", "torus2d"},
                "all-reduce algorithm");
    }
};

}  // namespace tpusim
