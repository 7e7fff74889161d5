#pragma once
// The cores' side of the ICI, the unit every core issues its collective instructions to (its
// ici_out port is bound to core_in, UnitIf; never full): a collective starts when every core
// of its replica group has reached it; send / recv pair up first-in first-out per (source,
// destination). Under SPMD symmetry (include/tpusim/sim/symmetry.h) only
// cores 0 .. n-1 are simulated: a group collective starts when its simulated cores have
// arrived (the others, running the same program, arrive at the same cycle), and runs on the
// whole fabric with every core of its group; over replica groups, every group's collective
// starts then, and each must end when the others do (groups_apart).
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <systemc>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tpusim/arch/completion.h"
#include "tpusim/arch/core/unit_if.h"
#include "tpusim/arch/ici/ici_network.h"

namespace tpusim {

class CollectiveRendezvous : public sc_core::sc_module, public UnitIf, private CompletionIf {
 public:
    sc_core::sc_export<UnitIf> core_in{"core_in"};

    CollectiveRendezvous(sc_core::sc_module_name name, IciNetwork& ici);
    // UnitIf: a collective or send / recv step of core req.issuer.core.
    bool full(const Instr&) const override { return false; }
    const sc_core::sc_event& freed(const Instr&) const override { return never_; }
    void issue(const Instr& in, const UnitRequest& req) override;
    std::string track_name() const override { return "ICI"; }
    // Only cores below `cores` are simulated (0: all of them).
    void simulate_only(std::int64_t cores) { simulated_ = cores; }
    // Under SPMD symmetry over replica groups (every group's collective started together):
    // empty while every group's collective has ended at the same cycle as the others of its
    // op, or is still running before that cycle; else which did not (the simulated chip then
    // does not stand for the others' chips), with `op` set to the op's index.
    std::string groups_apart(std::uint32_t& op) const;

 private:
    // One core's collective instruction, waiting for its end.
    struct Arrival {
        UnitRequest req;
        Cycle at = 0;
    };
    struct Pending {
        std::size_t arrived = 0;
        std::vector<Arrival> done;
    };
    // A collective started on the network: who is told when it ends. A send also completes
    // the recv it pairs with (sends_done_, recvs_waiting_).
    struct Started {
        std::vector<Arrival> replies;
        bool is_send = false;
        std::pair<std::int64_t, std::int64_t> key;  // a send's (source, destination)
        std::int64_t batch = -1;   // one of the replica groups started together (batches_)
        std::int64_t leader = -1;  // the group's first core
    };
    // The collectives of every replica group of one op, started together under SPMD symmetry:
    // all must end at one cycle.
    struct Batch {
        std::uint32_t op = 0;  // the program's op
        std::size_t left = 0;  // groups not ended yet
        bool known = false;    // `end` holds the first group's end
        Cycle end = 0;
    };
    void ended_in_batch(const Started& st, Cycle t);
    // CompletionIf: the network's reply for the collective started with `tag`.
    void complete(std::uint64_t tag, Cycle at) override;
    void arrive(const CollectiveInstr& c, std::uint32_t op, std::int64_t core, const Arrival& a);
    static void tell(const Arrival& a, Cycle end);
    void start(const CollectiveSpec& s, Started started);
    IciNetwork& ici_;
    std::int64_t simulated_ = 0;
    std::map<std::pair<std::uint64_t, std::int64_t>, Pending> pending_;
    std::map<std::pair<std::int64_t, std::int64_t>, std::deque<Cycle>> sends_done_;
    std::map<std::pair<std::int64_t, std::int64_t>, std::deque<Arrival>> recvs_waiting_;
    std::unordered_map<std::uint64_t, Started> started_;
    std::vector<Batch> batches_;
    std::string broken_;  // how the first op whose groups ended apart did
    std::uint32_t broken_op_ = 0;
    std::uint64_t next_tag_ = 0;
    sc_core::sc_event never_;  // never notified: the rendezvous is never full
};

}  // namespace tpusim
