// sc_spawn (one MXU lane thread per configured MXU) needs the dynamic-process API.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "tpusim/arch/core/tensor_core.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "arch/core/sequencer.h"
#include "arch/vpu/vpu_module.h"
#include "tpusim/arch/vpu/vector_cost.h"
#include "tpusim/common/sim_time.h"

namespace tpusim {

using sc_core::sc_event;

class TensorCore::IssueTarget : public IssueIf {
 public:
    explicit IssueTarget(TensorCore& core) : core_(core) {}
    bool completed(std::uint32_t idx) const override { return core_.done_[idx] != 0; }
    const sc_event& progress_event() const override { return core_.progress_; }
    bool unit_full(const Instr& in) const override { return core_.lane_full(in.unit, in); }
    const sc_event& unit_freed(const Instr& in) const override {
        switch (in.unit) {
            case Unit::Mxu:
                return core_.mxu_lanes_[static_cast<std::size_t>(in.mm().mxu)]->popped;
            case Unit::Vpu:
                return core_.vpu_lane_.popped;
            default:
                return core_.dma_slot_free_;
        }
    }
    void issue(std::uint32_t idx, Cycle stall) override { core_.issue(idx, stall); }

 private:
    TensorCore& core_;
};

TensorCore::TensorCore(sc_core::sc_module_name name, std::int64_t id, const TensorCoreConfigs& cfg,
                       Timeline* timeline)
    : sc_module(name),
      id_(id),
      cfg_(cfg),
      timeline_(timeline),
      mxus_("mxu"),
      stats_(fmt::format("core{}", id)) {
    // Construction order is process order: the DMA engines' threads first, the sequencer's
    // after the units', so that processes woken in one delta cycle run in the same order as
    // before the restructuring (tests/golden).
    done_in.bind(*this);
    vmem_ = std::make_unique<Vmem>("vmem", cfg_.vmem, cfg_.dma);
    // The chip binds the engines' hbm_out socket to its HBM.
    dma_ = std::make_unique<DmaEngine>("dma", cfg_.dma, static_cast<int>(id % cfg_.cores_per_chip),
                                       cfg_.hbm_capacity_bytes, cfg_.hbm_timing);
    dma_->vmem_out.bind(vmem_->dma_in);
    dma_out.bind(dma_->core_in);
    stats_.group.add_child(dma_->stats());
    stats_.group.add_child(vmem_->stats());
    mxus_.init(static_cast<std::size_t>(cfg_.core.mxus), [this](const char* nm, std::size_t) {
        return new Mxu(nm, cfg_.mxu, cfg_.mxu_fidelity);
    });
    for (std::size_t x = 0; x < mxus_.size(); ++x) mxu_lanes_.push_back(std::make_unique<Lane>());
    vpu_ = std::make_unique<Vpu>("vpu", cfg_.vpu, cfg_.vmem);
    issue_target_ = std::make_unique<IssueTarget>(*this);
    sequencer_ = std::make_unique<Sequencer>("sequencer", cfg_.sequencer);
    sequencer_->core_out.bind(*issue_target_);
    for (std::size_t x = 0; x < mxus_.size(); ++x) {
        sc_core::sc_spawn([this, x] { mxu_lane(x); }, fmt::format("mxu_lane{}", x).c_str());
    }
    SC_THREAD(vpu_lane);
    SC_METHOD(on_completion);
    sensitive << completion_q_;
    dont_initialize();
    // Timeline tracks, one per unit, by name.
    if (timeline_) {
        const std::string proc = fmt::format("core {}", id);
        dma_track_ = add_track(proc, "DMA");
        for (std::size_t x = 0; x < mxus_.size(); ++x) {
            mxu_tracks_.push_back(add_track(proc, fmt::format("MXU {}", x)));
        }
        vpu_track_ = add_track(proc, "VPU");
        ici_track_ = add_track(proc, "ICI");
        host_track_ = add_track(proc, "host");
    }
}

TensorCore::~TensorCore() = default;

std::size_t TensorCore::add_track(const std::string& process, const std::string& thread) {
    open_spans_.push_back(OpenSpan{timeline_->track(process, thread)});
    return open_spans_.size() - 1;
}

void TensorCore::load(const CoreProgram& program, const std::vector<OpInfo>& ops) {
    program_ = &program;
    ops_ = &ops;
    sequencer_->load(program);
    const std::size_t op_count = ops.size();
    done_.assign(program.instrs.size(), 0);
    first_pending_ = 0;
    reader_ = program.instrs.add_reader();
    remaining_ = program.instrs.size();
    stats_.ops.assign(op_count, OpTiming{});
    finished_ = remaining_ == 0;
}

bool TensorCore::lane_full(Unit u, const Instr& in) const {
    const auto depth = static_cast<std::size_t>(cfg_.sequencer.unit_queue_depth);
    switch (u) {
        case Unit::Mxu:
            return mxu_lanes_[static_cast<std::size_t>(in.mm().mxu)]->queue.size() >= depth;
        case Unit::Vpu:
            return vpu_lane_.queue.size() >= depth;
        case Unit::Dma:
            return dma_in_flight_ >= cfg_.dma.engines * cfg_.dma.descriptors_per_engine;
        default:
            return false;
    }
}

void TensorCore::issue(std::uint32_t idx, Cycle stall) {
    const Instr& in = program_->instrs[idx];
    const Cycle now = now_cycles();
    stats_.issue_stall_cycles += stall;
    OpTiming& op = stats_.ops[in.op];
    op.start = std::min(op.start, now);
    ++op.instructions;
    ++stats_.instructions;
    switch (in.unit) {
        case Unit::Mxu: {
            Lane& lane = *mxu_lanes_[static_cast<std::size_t>(in.mm().mxu)];
            lane.queue.push_back(idx);
            lane.pushed.notify(sc_core::SC_ZERO_TIME);
            break;
        }
        case Unit::Vpu:
            vpu_lane_.queue.push_back(idx);
            vpu_lane_.pushed.notify(sc_core::SC_ZERO_TIME);
            break;
        case Unit::Dma: {
            if (dma_in_flight_++ == 0) dma_busy_since_ = now;
            ++stats_.dma_descriptors;
            (in.dma().to_vmem() ? stats_.dma_bytes_read : stats_.dma_bytes_written) +=
                in.dma().bytes();
            // The shared stream's addresses are relative to this core's HBM share.
            DmaDescriptor d = in.dma();
            d.hbm_addr += program_->hbm_base;
            dma_out->transfer(d, reply_to(idx, now));
            break;
        }
        case Unit::Ici:
            ici_out->arrive(*in.coll, id_, reply_to(idx, now));
            break;
        case Unit::Host:
            host_out->transfer(in.host(), reply_to(idx, now));
            break;
    }
}

ReplyTo TensorCore::reply_to(std::uint32_t idx, Cycle now) {
    issued_at_.emplace(idx, now);
    return ReplyTo{done_in.operator->(), idx};
}

void TensorCore::complete(std::uint64_t tag, Cycle t) {
    const auto idx = static_cast<std::uint32_t>(tag);
    const auto it = issued_at_.find(idx);
    const Cycle now = it->second;
    issued_at_.erase(it);
    const Unit unit = program_->instrs[idx].unit;
    const std::uint32_t op = program_->instrs[idx].op;
    switch (unit) {
        case Unit::Dma:
            if (--dma_in_flight_ == 0) stats_.dma_busy_cycles += t - dma_busy_since_;
            dma_slot_free_.notify(sc_core::SC_ZERO_TIME);
            complete_at(idx, t, Unit::Dma, t - now);
            span(dma_track_, op, now, t);
            break;
        case Unit::Ici:
            stats_.ici_busy_cycles += t - now;
            complete_at(idx, t, Unit::Ici, t - now);
            span(ici_track_, op, now, t);
            break;
        case Unit::Host:
            stats_.host_busy_cycles += t - now;
            complete_at(idx, t, Unit::Host, t - now);
            span(host_track_, op, now, t);
            break;
        default:
            throw std::logic_error("completion of an instruction the core ran itself");
    }
}

void TensorCore::mxu_lane(std::size_t x) {
    Lane& lane = *mxu_lanes_[x];
    Mxu& mxu = mxus_[x];
    while (true) {
        while (lane.queue.empty()) wait(lane.pushed);
        const std::uint32_t idx = lane.queue.front();
        const MatmulInstr& mm = program_->instrs[idx].mm();
        const Cycle now = now_cycles();
        // Weight tiles of the block in K-major order; each streams the block's m LHS rows.
        const MxuBlockTiming t = mxu.run_block(mxu_gemm_tiles(cfg_.mxu, mm.m, mm.k, mm.n), now);
        stats_.mxu_busy_cycles += t.busy_cycles;
        stats_.mxu_useful_macs += t.useful_macs;
        stats_.mxu_array_macs += t.array_macs;
        stats_.mxu_passes += t.passes;
        complete_at(idx, t.results_end, Unit::Mxu, t.busy_cycles);
        if (timeline_) {
            span(mxu_tracks_[x], program_->instrs[idx].op, t.first_weights_start, t.results_end);
        }
        // The queue slot frees when the block's LHS has streamed: the array then takes the
        // next block, whose weights the model preloads behind this one.
        if (t.lhs_end > now) wait(cycles(t.lhs_end - now));
        lane.queue.pop_front();
        lane.popped.notify(sc_core::SC_ZERO_TIME);
    }
}

void TensorCore::vpu_lane() {
    while (true) {
        while (vpu_lane_.queue.empty()) wait(vpu_lane_.pushed);
        const std::uint32_t idx = vpu_lane_.queue.front();
        const VectorInstr& v = program_->instrs[idx].vec();
        const VectorOpCost& cost = vpu_->op_cost(
            VectorOpDesc{v.op, v.saved_mask, v.rows, v.cols, v.in_bytes, v.out_bytes});
        const Cycle now = now_cycles();
        stats_.vpu_busy_cycles += cost.cycles;
        stats_.vpu_instructions += cost.instructions;
        span(vpu_track_, program_->instrs[idx].op, now, now + cost.cycles);
        wait(cycles(cost.cycles));
        complete_at(idx, now + cost.cycles, Unit::Vpu, cost.cycles);
        vpu_lane_.queue.pop_front();
        vpu_lane_.popped.notify(sc_core::SC_ZERO_TIME);
    }
}

void TensorCore::complete_at(std::uint32_t idx, Cycle t, Unit unit, Cycle busy) {
    OpTiming& op = stats_.ops[program_->instrs[idx].op];
    op.busy[static_cast<std::size_t>(unit)] += busy;
    const Cycle now = now_cycles();
    if (t <= now) {
        pending_.push({now, idx});
        completion_q_.notify(sc_core::SC_ZERO_TIME);
    } else {
        pending_.push({t, idx});
        completion_q_.notify(cycles(t - now));
    }
}

void TensorCore::on_completion() {
    const Cycle now = now_cycles();
    bool any = false;
    while (!pending_.empty() && pending_.top().t <= now) {
        const std::uint32_t idx = pending_.top().idx;
        pending_.pop();
        if (done_[idx]) continue;
        done_[idx] = 1;
        any = true;
        OpTiming& op = stats_.ops[program_->instrs[idx].op];
        op.end = std::max(op.end, now);
        end_cycle_ = std::max(end_cycle_, now);
        if (--remaining_ == 0) finished_ = true;
    }
    if (any) {
        const std::size_t before = first_pending_;
        while (first_pending_ < done_.size() && done_[first_pending_]) ++first_pending_;
        if (first_pending_ != before) program_->instrs.release(reader_, first_pending_);
    }
    if (any) progress_.notify(sc_core::SC_ZERO_TIME);
}

void TensorCore::span(std::size_t lane, std::uint32_t op, Cycle start, Cycle end) {
    if (!timeline_ || !timeline_->enabled()) return;
    // Consecutive instructions of one op on one unit merge into one span.
    OpenSpan& s = open_spans_[lane];
    if (s.op == op && start <= s.end) {
        s.start = std::min(s.start, start);  // DMA spans arrive at completion, out of order
        s.end = std::max(s.end, end);
        return;
    }
    if (s.op != ~0u) timeline_->span(s.track, (*ops_)[s.op].id, s.start, s.end);
    s.op = op;
    s.start = start;
    s.end = end;
}

void TensorCore::flush_timeline() {
    if (!timeline_) return;
    for (OpenSpan& s : open_spans_) {
        if (s.op != ~0u) timeline_->span(s.track, (*ops_)[s.op].id, s.start, s.end);
        s.op = ~0u;
    }
}

}  // namespace tpusim
