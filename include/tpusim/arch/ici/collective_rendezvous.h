#pragma once
// The cores' side of the ICI: a collective starts when every core of its replica group has
// reached it; send / recv pair up first-in first-out per (source, destination). Every core's
// ici_out port is bound to core_in. Under SPMD symmetry (include/tpusim/sim/symmetry.h) only
// cores 0 .. n-1 are simulated: a group collective starts when its simulated cores have
// arrived (the others, running the same program, arrive at the same cycle), and runs on the
// whole fabric with every core of its group.
#include <cstdint>
#include <deque>
#include <map>
#include <systemc>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tpusim/arch/core/core_ports.h"
#include "tpusim/arch/ici/ici_network.h"

namespace tpusim {

class CollectiveRendezvous : public sc_core::sc_module, public CollectiveIf, private CompletionIf {
 public:
    sc_core::sc_export<CollectiveIf> core_in{"core_in"};

    CollectiveRendezvous(sc_core::sc_module_name name, IciNetwork& ici);
    void arrive(const CollectiveInstr& c, std::int64_t core, ReplyTo reply) override;
    // Only cores below `cores` are simulated (0: all of them).
    void simulate_only(std::int64_t cores) { simulated_ = cores; }

 private:
    struct Pending {
        std::size_t arrived = 0;
        std::vector<ReplyTo> done;
    };
    // A collective started on the network: who is told when it ends. A send also completes
    // the recv it pairs with (sends_done_, recvs_waiting_).
    struct Started {
        std::vector<ReplyTo> replies;
        bool is_send = false;
        std::pair<std::int64_t, std::int64_t> key;  // a send's (source, destination)
    };
    // CompletionIf: the network's reply for the collective started with `tag`.
    void complete(std::uint64_t tag, Cycle at) override;
    void start(const CollectiveSpec& s, Started started);
    IciNetwork& ici_;
    std::int64_t simulated_ = 0;
    std::map<std::pair<std::uint64_t, std::int64_t>, Pending> pending_;
    std::map<std::pair<std::int64_t, std::int64_t>, std::deque<Cycle>> sends_done_;
    std::map<std::pair<std::int64_t, std::int64_t>, std::deque<ReplyTo>> recvs_waiting_;
    std::unordered_map<std::uint64_t, Started> started_;
    std::uint64_t next_tag_ = 0;
};

}  // namespace tpusim
