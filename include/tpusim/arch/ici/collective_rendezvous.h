#pragma once
// The cores' side of the ICI, the unit every core issues its collective instructions to (its
// ici_out port is bound to core_in, UnitIf; never full): a collective starts when every core
// of its replica group has reached it; send / recv pair up first-in first-out per (source,
// destination). Under SPMD symmetry (include/tpusim/sim/symmetry.h) only
// the unit's cores are simulated (chip 0's, or a block of chips'): a group collective starts
// when the unit cores its cores run as have arrived (the others, running the same program as
// their images, arrive at the same cycle), and runs on the whole fabric with every core of
// its group; over replica groups, the collective of every group whose cores run as those unit
// cores starts then, and each must end when the others do (groups_apart).
// The collectives that become ready in one delta cycle start on the network at its end, in one
// order whichever core process ran first: by op, then by the group's place in the op's list
// (a send: by its source core). The order of one chip's same-tick events matters to the
// network (docs/ici.md), and the scheduler's order of the cores' processes is neither a
// property of the hardware nor the same from a run to its symmetric run.
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
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
    // SPMD symmetry: only the unit's cores are simulated; image[c] is the unit core whose
    // timeline core c shares (itself for a unit core). Not called: every core is simulated.
    void simulate_only(std::vector<std::int64_t> image) { image_ = std::move(image); }
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
    // A collective ready to start, held until the end of its delta cycle.
    struct Ready {
        std::uint64_t instance = 0;  // the op
        std::int64_t index = 0;      // its group's place in the op's list; a send: its source
        CollectiveSpec spec;
        Started started;
    };
    // Starts the ready collectives in the update phase, after every process of the delta
    // cycle has run (a primitive channel's update()).
    struct Flush : sc_core::sc_prim_channel {
        CollectiveRendezvous* owner = nullptr;
        void update() override;
    };
    void ended_in_batch(const Started& st, Cycle t);
    // CompletionIf: the network's reply for the collective started with `tag`.
    void complete(std::uint64_t tag, Cycle at) override;
    // Under SPMD symmetry, what a group collective's arrivals need of its group (the vector
    // group_of returns, `instr`'s or its replica groups'): the unit cores its cores run as
    // (images, sorted, unique), the first of them (the leader: pending_'s key) and, over
    // replica groups, every group whose first core runs as one of them (the groups started
    // together), in the op's order. Keyed by the group's address, which `pin` keeps alive and
    // unchanged (a CollectiveInstr is immutable), so an entry always describes its key.
    struct GroupMemo {
        std::shared_ptr<const CollectiveInstr> pin;
        std::int64_t leader = 0;
        std::vector<std::int64_t> images;
        std::vector<const std::vector<std::int64_t>*> run;
    };
    static constexpr std::size_t kMemoEntries = 1024;
    const GroupMemo& memo(const std::shared_ptr<const CollectiveInstr>& instr,
                          const std::vector<std::int64_t>& group);
    void arrive(const std::shared_ptr<const CollectiveInstr>& instr, std::uint32_t op,
                std::int64_t core, const Arrival& a);
    static void tell(const Arrival& a, Cycle end);
    // Queues `s` for start_ready (instance, index: its place in the order of starts).
    void start(const CollectiveSpec& s, Started started, std::uint64_t instance,
               std::int64_t index);
    void start_ready();
    IciNetwork& ici_;
    std::vector<std::int64_t> image_;  // simulate_only; empty: every core simulated
    std::map<std::pair<std::uint64_t, std::int64_t>, Pending> pending_;
    std::unordered_map<const std::vector<std::int64_t>*, GroupMemo> memo_;
    std::map<std::pair<std::int64_t, std::int64_t>, std::deque<Cycle>> sends_done_;
    std::map<std::pair<std::int64_t, std::int64_t>, std::deque<Arrival>> recvs_waiting_;
    std::unordered_map<std::uint64_t, Started> started_;
    std::vector<Batch> batches_;
    std::string broken_;  // how the first op whose groups ended apart did
    std::uint32_t broken_op_ = 0;
    std::uint64_t next_tag_ = 0;
    std::vector<Ready> ready_;
    Flush flush_;
    sc_core::sc_event never_;  // never notified: the rendezvous is never full
};

}  // namespace tpusim
