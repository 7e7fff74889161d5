#pragma once
// The DMA engines of one TensorCore (DmaConfig::engines of them in one module), the unit its
// core issues DMA instructions to through core_in (UnitIf): the core may have
// dma.engines x dma.descriptors_per_engine descriptors in flight. Each engine
// runs its descriptors in FIFO order, each after dma.setup_latency_cycles of decode; engines
// run concurrently. A descriptor is cut into chunks (split_descriptor, dma.chunk_bytes); an
// engine keeps up to max_outstanding_chunks chunks in flight, each one HBM transaction over
// TLM (hbm_out) plus a transfer through the core's VMEM DMA port (vmem_out): store and
// forward, a chunk passes the port after (into VMEM) or before (out of it) its HBM transfer.
//
// Two ways to time the same mechanism, chosen by the HBM behind hbm_out (sim.hbm_model):
//  - blocking (burst HBM): one SystemC thread per engine and per in-flight chunk; the HBM's
//    b_transport waits until the chunk's bursts are done.
//  - annotated (calibrated HBM, loosely timed): the engine plans a descriptor's chunks when
//    it is enqueued, calling b_transport with the chunk's start as annotated delay; the
//    target answers with the completion as annotated delay and does not wait. One SystemC
//    event per descriptor (its completion), as the run's wall time needs.
#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <queue>
#include <systemc>
#include <tlm>
#include <vector>

#include "tpusim/arch/completion.h"
#include "tpusim/arch/core/unit_if.h"
#include "tpusim/arch/event_queue.h"
#include "tpusim/arch/memory/cycle_ticks.h"
#include "tpusim/arch/memory/dma_chunker.h"
#include "tpusim/arch/memory/dma_workers.h"
#include "tpusim/arch/memory/vmem_module.h"
#include "tpusim/config/memory_config.h"
#include "tpusim/stats/stats.h"

namespace tpusim {

struct HbmAccessExtension;  // hbm_module.h

class DmaEngine : public sc_core::sc_module, public UnitIf {
 public:
    tlm_utils::simple_initiator_socket<DmaEngine> hbm_out;
    sc_core::sc_port<VmemIf> vmem_out{"vmem_out"};  // the core's Vmem.dma_in
    sc_core::sc_export<UnitIf> core_in{"core_in"};  // the core's dma_out binds here

    // How the HBM behind hbm_out answers (see above).
    enum class HbmTiming : std::uint8_t { Blocking, Annotated };

    // `core`: this core's index on its chip (locality of HBM addresses); `hbm_capacity_bytes`:
    // the chip's HBM, for the range check at enqueue.
    SC_HAS_PROCESS(DmaEngine);
    DmaEngine(sc_core::sc_module_name name, const DmaConfig& dma, int core,
              Bytes hbm_capacity_bytes, HbmTiming timing = HbmTiming::Blocking);

    // Non-blocking, callable from any SC_THREAD: queues `d` on the engine with the least
    // queued work; `done` (if not null) is notified and `reply` (if set) told the core cycle
    // at which its last byte has landed. Throws InputError when the descriptor reaches
    // outside the VMEM or the HBM, or is malformed.
    void enqueue(const DmaDescriptor& d, sc_core::sc_event* done, ReplyTo reply = {});
    // Same, on a given engine (FIFO order with that engine's other descriptors).
    void enqueue_on(std::size_t engine, const DmaDescriptor& d, sc_core::sc_event* done,
                    ReplyTo reply = {});

    // UnitIf: the core's DMA instruction (its descriptor, HBM address relative to the
    // issuer's hbm_base), enqueued as enqueue() does.
    bool full(const Instr& in) const override;
    const sc_core::sc_event& freed(const Instr&) const override { return slot_free_; }
    void issue(const Instr& in, const UnitRequest& req) override;
    std::string track_name() const override { return "DMA"; }

    std::size_t engines() const { return engines_.size(); }
    StatGroup& stats() { return stats_; }

 private:
    struct Job {
        DmaDescriptor d;
        sc_core::sc_event* done;
        ReplyTo reply;
        UnitRequest unit = {};  // issued through core_in: told with UnitDone
        Cycle issued = 0;
    };
    struct Engine {
        std::deque<Job> jobs;
        sc_core::sc_event job_ready;
        // Chunks of the running descriptor, handed to the engine's workers.
        std::deque<DmaDescriptor> chunks;
        DmaDescriptor::Dir dir = DmaDescriptor::Dir::HbmToVmem;
        sc_core::sc_event chunk_ready, chunk_done;
        std::size_t chunks_left = 0;
        Cycle free_at = 0;  // annotated: when its last planned descriptor ends
    };
    // Annotated: a planned descriptor, delivered at its end.
    struct Due {
        Cycle t;
        std::uint64_t seq;  // enqueue order: equal cycles complete in it
        std::size_t engine;
        Job job;
        bool operator>(const Due& o) const { return t != o.t ? t > o.t : seq > o.seq; }
    };
    std::size_t least_loaded() const;
    void enqueue_job(std::size_t engine, Job job);  // checks the descriptor first
    void engine_thread(std::size_t e);
    void worker_thread(std::size_t e);
    void move_chunk(const DmaDescriptor& c, DmaDescriptor::Dir dir);
    // Annotated: plans `job` on engine `e` from now; returns its end cycle.
    Cycle plan(std::size_t e, const Job& job);
    // Annotated: one chunk issued at cycle `issue`, its HBM transaction in payload_ (with
    // `ext`, set on it); returns when its last byte has landed.
    Cycle plan_chunk(const DmaDescriptor& c, bool to_vmem, HbmAccessExtension& ext, Cycle issue,
                     Cycle now);
    // Blocking: the HBM transaction of one chunk; `delay` in: its start after now, out: its
    // end.
    void hbm_transaction(const DmaDescriptor& c, bool to_vmem, sc_core::sc_time& delay);
    // A payload's fields that every chunk of a descriptor shares (command, requester, `ext`
    // attached), set once; transport() sends one chunk on it.
    void prepare(tlm::tlm_generic_payload& p, HbmAccessExtension& ext, bool to_vmem) const;
    void transport(tlm::tlm_generic_payload& p, HbmAccessExtension& ext, const DmaDescriptor& c,
                   sc_core::sc_time& delay);
    void deliver();                          // annotated: completes the descriptors due now
    void finish(const Job& job, Cycle end);  // tells whoever waits for `job`

    DmaConfig cfg_;
    HbmTiming timing_;
    int core_;
    Bytes hbm_capacity_;
    std::vector<std::unique_ptr<Engine>> engines_;
    // Per engine: the bytes of its descriptors queued or running. Beside engines_, not in
    // Engine: least_loaded reads every engine's at every issue, in one cache line here.
    std::vector<Bytes> queued_;
    std::uint64_t descriptors_ = 0, chunks_ = 0, bytes_to_vmem_ = 0, bytes_to_hbm_ = 0;
    std::uint64_t busy_cycles_ = 0;  // summed over engines: cycles with a descriptor running
    std::uint64_t hbm_errors_ = 0;
    std::uint64_t next_seq_ = 0;
    // Descriptors issued through core_in and not completed; since when one has been.
    std::int64_t in_flight_ = 0;
    Cycle busy_since_ = 0;
    sc_core::sc_event slot_free_;
    std::priority_queue<Due, std::vector<Due>, std::greater<Due>> due_;
    // Annotated: plan()'s workers and the payload it sends, reused (the target keeps
    // neither), and its cycle <-> SystemC time conversions.
    DmaWorkers workers_;
    tlm::tlm_generic_payload payload_;
    CycleTicks ticks_;
    EventQueue due_q_;  // one firing per planned descriptor, at its end
    StatGroup stats_;
};

}  // namespace tpusim
