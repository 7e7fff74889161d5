// sc_spawn (one thread per engine and per in-flight chunk) needs SystemC's dynamic processes.
#define SC_INCLUDE_DYNAMIC_PROCESSES

#include "tpusim/arch/memory/dma_engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <stdexcept>

#include "tpusim/arch/core/core_stats.h"
#include "tpusim/arch/memory/hbm_module.h"
#include "tpusim/common/error.h"
#include "tpusim/common/sim_time.h"

namespace tpusim {

DmaEngine::DmaEngine(sc_core::sc_module_name name, const DmaConfig& dma, int core,
                     Bytes hbm_capacity_bytes, HbmTiming timing)
    : sc_module(name),
      hbm_out("hbm_out"),
      cfg_(dma),
      timing_(timing),
      core_(core),
      hbm_capacity_(hbm_capacity_bytes),
      stats_(std::string(basename()), "DMA engines of one TensorCore") {
    core_in.bind(*this);
    for (std::int64_t e = 0; e < dma.engines; ++e) {
        engines_.push_back(std::make_unique<Engine>());
        queued_.push_back(0);
        if (timing_ == HbmTiming::Annotated) continue;  // planned, not run by threads
        const auto idx = static_cast<std::size_t>(e);
        sc_core::sc_spawn([this, idx] { engine_thread(idx); },
                          sc_core::sc_gen_unique_name("engine"));
        for (std::int64_t w = 0; w < dma.max_outstanding_chunks; ++w) {
            sc_core::sc_spawn([this, idx] { worker_thread(idx); },
                              sc_core::sc_gen_unique_name("worker"));
        }
    }
    if (timing_ == HbmTiming::Annotated) {
        SC_METHOD(deliver);
        sensitive << due_q_.event();
        dont_initialize();
    }
    stats_.counter("descriptors", descriptors_, "descriptors", "descriptors completed");
    stats_.counter("chunks", chunks_, "chunks", "HBM transactions issued");
    stats_.counter("bytes_to_vmem", bytes_to_vmem_, "B", "bytes moved HBM -> VMEM");
    stats_.counter("bytes_to_hbm", bytes_to_hbm_, "B", "bytes moved VMEM -> HBM");
    stats_.counter("busy_cycles", busy_cycles_, "cycles",
                   "cycles an engine had a descriptor running, summed over engines");
    stats_.counter("hbm_errors", hbm_errors_, "chunks",
                   "chunks the HBM refused (each one ends the run with an error: 0 in a report)");
}

std::size_t DmaEngine::least_loaded() const {
    std::size_t best = 0;
    for (std::size_t e = 1; e < engines_.size(); ++e) {
        if (queued_[e] < queued_[best]) best = e;
    }
    return best;
}

void DmaEngine::enqueue(const DmaDescriptor& d, sc_core::sc_event* done, ReplyTo reply) {
    enqueue_job(least_loaded(), Job{d, done, reply});
}

void DmaEngine::enqueue_on(std::size_t engine, const DmaDescriptor& d, sc_core::sc_event* done,
                           ReplyTo reply) {
    enqueue_job(engine, Job{d, done, reply});
}

bool DmaEngine::full(const Instr&) const {
    return in_flight_ >= cfg_.engines * cfg_.descriptors_per_engine;
}

void DmaEngine::issue(const Instr& in, const UnitRequest& req) {
    const Cycle now = now_cycles();
    if (in_flight_++ == 0) busy_since_ = now;
    if (CoreStats* s = req.issuer.stats) {
        ++s->dma_descriptors;
        (in.dma().to_vmem() ? s->dma_bytes_read : s->dma_bytes_written) += in.dma().bytes();
    }
    // A shared stream's addresses are relative to the issuing core's HBM share.
    DmaDescriptor d = in.dma();
    d.hbm_addr += req.issuer.hbm_base;
    enqueue_job(least_loaded(), Job{d, nullptr, ReplyTo{}, req, now});
}

void DmaEngine::finish(const Job& job, Cycle end) {
    if (job.done) job.done->notify(sc_core::SC_ZERO_TIME);
    if (job.reply) job.reply(end);
    if (!job.unit.reply) return;
    CoreStats* s = job.unit.issuer.stats;
    if (--in_flight_ == 0 && s) s->dma_busy_cycles += end - busy_since_;
    slot_free_.notify(sc_core::SC_ZERO_TIME);
    job.unit.reply(UnitDone{job.issued, end, end - job.issued});
}

void DmaEngine::enqueue_job(std::size_t engine, Job job) {
    const DmaDescriptor& d = job.d;
    // Built only for an error message: enqueue runs once per descriptor.
    const auto what = [&d] {
        return fmt::format("DMA descriptor ({} rows of {} B)", d.rows, d.row_bytes);
    };
    if (d.rows < 1 || d.row_bytes == 0 ||
        (d.rows > 1 && (d.hbm_stride < d.row_bytes || d.vmem_stride < d.row_bytes))) {
        throw InputError("", "dma",
                         what() + ": expected rows >= 1, row_bytes >= 1 and strides >= row_bytes");
    }
    const Bytes vmem_capacity = vmem_out->capacity_bytes();
    if (d.vmem_extent() > vmem_capacity) {
        throw InputError("", "dma",
                         fmt::format("{} reaches VMEM byte {:#x}, core has {} MiB", what(),
                                     d.vmem_extent(), vmem_capacity / kMiB));
    }
    // Past the chip's HBM: refused whatever the HBM model (the program layer keeps every
    // descriptor inside its buffer and its core's share, so this is a caller's bug, never a
    // chunk to count and go on with).
    if (d.hbm_extent() > hbm_capacity_) {
        throw InputError("", "dma",
                         fmt::format("{} reaches HBM byte {:#x}, chip has {} GiB", what(),
                                     d.hbm_extent(), hbm_capacity_ / kGiB));
    }
    Engine& e = *engines_.at(engine);
    queued_[engine] += d.bytes();
    if (timing_ == HbmTiming::Annotated) {
        const Cycle now = ticks_.now();
        const Cycle end = plan(engine, job);
        due_.push(Due{end, next_seq_++, engine, std::move(job)});
        due_q_.notify(ticks_.time(end - now));
        return;
    }
    e.jobs.push_back(std::move(job));
    e.job_ready.notify(sc_core::SC_ZERO_TIME);
}

// The engine's FIFO, setup and workers of engine_thread / worker_thread, planned at once: the
// descriptor starts when the engine's previous one has ended, its chunks leave after the
// setup, and each of the max_outstanding_chunks workers takes the next chunk when its last
// one has landed.
Cycle DmaEngine::plan(std::size_t idx, const Job& job) {
    Engine& e = *engines_[idx];
    const Cycle now = ticks_.now();
    const Cycle start = std::max(now, e.free_at);
    const Cycle first = start + static_cast<Cycle>(cfg_.setup_latency_cycles);
    DmaChunker chunks(job.d, static_cast<Bytes>(cfg_.chunk_bytes));
    workers_.reset(static_cast<std::size_t>(cfg_.max_outstanding_chunks), first);
    // One payload for the descriptor's chunks: what they share is set once (the target
    // keeps nothing of it).
    const bool to_vmem = job.d.to_vmem();
    HbmAccessExtension ext;
    prepare(payload_, ext, to_vmem);
    struct Unset {  // the payload must not outlive `ext` holding it (it would free it)
        tlm::tlm_generic_payload& p;
        HbmAccessExtension* e;
        ~Unset() { p.clear_extension(e); }
    } unset{payload_, &ext};
    Cycle end = first;
    DmaDescriptor c;
    while (chunks.next(c)) {
        const Cycle landed = plan_chunk(c, to_vmem, ext, workers_.take(), now);
        workers_.put(landed);
        end = std::max(end, landed);
    }
    e.free_at = end;
    busy_cycles_ += end - start;
    return end;
}

Cycle DmaEngine::plan_chunk(const DmaDescriptor& c, bool to_vmem, HbmAccessExtension& ext,
                            Cycle issue, Cycle now) {
    ++chunks_;
    (to_vmem ? bytes_to_vmem_ : bytes_to_hbm_) += c.bytes();
    // As move_chunk: to the HBM, read out of VMEM first; from it, written into VMEM once the
    // whole chunk has arrived (store and forward).
    const Cycle hbm_start = to_vmem ? issue : vmem_out->reserve_dma_port(issue, c.bytes(), now);
    sc_core::sc_time delay = ticks_.time(hbm_start - now);
    transport(payload_, ext, c, delay);
    const Cycle hbm_end = now + ticks_.of(delay);
    return to_vmem ? vmem_out->reserve_dma_port(hbm_end, c.bytes(), now) : hbm_end;
}

void DmaEngine::deliver() {
    due_q_.fired();
    const Cycle now = ticks_.now();
    while (!due_.empty() && due_.top().t <= now) {
        const Due d = due_.top();
        due_.pop();
        queued_[d.engine] -= d.job.d.bytes();
        ++descriptors_;
        finish(d.job, now);
    }
}

void DmaEngine::engine_thread(std::size_t idx) {
    Engine& e = *engines_[idx];
    for (;;) {
        while (e.jobs.empty()) sc_core::wait(e.job_ready);
        Job job = std::move(e.jobs.front());
        e.jobs.pop_front();
        const Cycle start = now_cycles();
        // Descriptor decode before the first chunk leaves.
        sc_core::wait(cycles(static_cast<Cycle>(cfg_.setup_latency_cycles)));
        const auto chunks = split_descriptor(job.d, static_cast<Bytes>(cfg_.chunk_bytes));
        e.dir = job.d.dir;
        e.chunks_left = chunks.size();
        e.chunks.assign(chunks.begin(), chunks.end());
        e.chunk_ready.notify(sc_core::SC_ZERO_TIME);
        while (e.chunks_left > 0) sc_core::wait(e.chunk_done);
        const Cycle end = now_cycles();
        busy_cycles_ += end - start;
        queued_[idx] -= job.d.bytes();
        ++descriptors_;
        finish(job, end);
    }
}

void DmaEngine::worker_thread(std::size_t idx) {
    Engine& e = *engines_[idx];
    for (;;) {
        while (e.chunks.empty()) sc_core::wait(e.chunk_ready);
        const DmaDescriptor c = e.chunks.front();
        e.chunks.pop_front();
        move_chunk(c, e.dir);
        if (--e.chunks_left == 0) e.chunk_done.notify(sc_core::SC_ZERO_TIME);
    }
}

void DmaEngine::move_chunk(const DmaDescriptor& c, DmaDescriptor::Dir dir) {
    const bool to_vmem = dir == DmaDescriptor::Dir::HbmToVmem;
    ++chunks_;
    if (!to_vmem) {
        // Read the chunk out of VMEM before it leaves for the HBM.
        const Cycle end = vmem_out->reserve_dma_port(now_cycles(), c.bytes(), now_cycles());
        sc_core::wait(cycles(end - now_cycles()));
    }
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    hbm_transaction(c, to_vmem, delay);
    if (to_vmem) {
        const Cycle end = vmem_out->reserve_dma_port(now_cycles(), c.bytes(), now_cycles());
        sc_core::wait(cycles(end - now_cycles()));
    }
    (to_vmem ? bytes_to_vmem_ : bytes_to_hbm_) += c.bytes();
}

void DmaEngine::hbm_transaction(const DmaDescriptor& c, bool to_vmem, sc_core::sc_time& delay) {
    // Several workers may be inside b_transport at once, each with its payload.
    tlm::tlm_generic_payload p;
    HbmAccessExtension ext;
    prepare(p, ext, to_vmem);
    transport(p, ext, c, delay);
    p.clear_extension(&ext);
}

void DmaEngine::prepare(tlm::tlm_generic_payload& p, HbmAccessExtension& ext, bool to_vmem) const {
    ext.requester = core_;
    p.set_command(to_vmem ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
    p.set_data_ptr(nullptr);  // timing only
    p.set_extension(&ext);
}

void DmaEngine::transport(tlm::tlm_generic_payload& p, HbmAccessExtension& ext,
                          const DmaDescriptor& c, sc_core::sc_time& delay) {
    ext.rows = c.rows;
    ext.row_bytes = c.row_bytes;
    ext.stride = c.hbm_stride;
    p.set_address(c.hbm_addr);
    p.set_data_length(static_cast<unsigned>(std::min<Bytes>(c.bytes(), 0xffffffffu)));
    p.set_streaming_width(p.get_data_length());
    p.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    hbm_out->b_transport(p, delay);
    if (p.get_response_status() != tlm::TLM_OK_RESPONSE) {
        ++hbm_errors_;
        throw InputError("", fmt::format("dma of core {}", core_),
                         fmt::format("the HBM refused a chunk of {} B at byte {:#x} ({})",
                                     c.bytes(), c.hbm_addr, p.get_response_string()));
    }
}

}  // namespace tpusim
