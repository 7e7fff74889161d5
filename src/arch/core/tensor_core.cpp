#include "tpusim/arch/core/tensor_core.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "arch/core/sequencer.h"
#include "arch/vpu/vpu_module.h"
#include "tpusim/common/sim_time.h"

namespace tpusim {

using sc_core::sc_event;

class TensorCore::IssueTarget : public IssueIf {
 public:
    explicit IssueTarget(TensorCore& core) : core_(core) {}
    bool completed(std::uint32_t idx) const override { return core_.done_[idx] != 0; }
    const sc_event& progress_event() const override { return core_.progress_; }
    bool unit_full(const Instr& in) const override { return core_.unit(in).full(in); }
    const sc_event& unit_freed(const Instr& in) const override { return core_.unit(in).freed(in); }
    void issue(std::uint32_t idx, Cycle stall) override { core_.issue(idx, stall); }

 private:
    TensorCore& core_;
};

namespace {

// "dma_out", "mxu_out", ...: the port of each Unit.
sc_core::sc_port<UnitIf, 0>* make_unit_port(const char*, std::size_t u) {
    std::string name = unit_name(static_cast<Unit>(u));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return new sc_core::sc_port<UnitIf, 0>((name + "_out").c_str());
}

}  // namespace

TensorCore::TensorCore(sc_core::sc_module_name name, std::int64_t id, const TensorCoreConfigs& cfg,
                       Timeline* timeline)
    : sc_module(name),
      unit_out("unit_out", kUnitCount, make_unit_port),
      id_(id),
      cfg_(cfg),
      timeline_(timeline),
      mxus_("mxu"),
      stats_(fmt::format("core{}", id)) {
    // Construction order is process order: the DMA engines' threads first, then the
    // sequencer's, then the MXUs' and the VPU's, so that processes woken in one delta cycle
    // run in the same order as when the core ran the units' queues itself (tests/golden).
    done_in.bind(*this);
    vmem_ = std::make_unique<Vmem>("vmem", cfg_.vmem, cfg_.dma);
    // The chip binds the engines' hbm_out socket to its HBM.
    dma_ = std::make_unique<DmaEngine>("dma", cfg_.dma, static_cast<int>(id % cfg_.cores_per_chip),
                                       cfg_.hbm_capacity_bytes, cfg_.hbm_timing);
    dma_->vmem_out.bind(vmem_->dma_in);
    stats_.group.add_child(dma_->stats());
    stats_.group.add_child(vmem_->stats());
    issue_target_ = std::make_unique<IssueTarget>(*this);
    sequencer_ = std::make_unique<Sequencer>("sequencer", cfg_.sequencer);
    sequencer_->core_out.bind(*issue_target_);
    const std::int64_t depth = cfg_.sequencer.unit_queue_depth;
    mxus_.init(static_cast<std::size_t>(cfg_.core.mxus),
               [this, depth](const char* nm, std::size_t x) {
                   return new Mxu(nm, cfg_.mxu, cfg_.mxu_fidelity, depth, x);
               });
    vpu_ = std::make_unique<Vpu>("vpu", cfg_.vpu, cfg_.vmem, depth);
    unit_port(Unit::Dma).bind(dma_->core_in);
    for (Mxu& mxu : mxus_) unit_port(Unit::Mxu).bind(mxu.core_in);
    unit_port(Unit::Vpu).bind(vpu_->core_in);
    SC_METHOD(on_completion);
    sensitive << completion_q_.event();
    dont_initialize();
}

TensorCore::~TensorCore() = default;

void TensorCore::end_of_elaboration() {
    for (std::size_t u = 0; u < kUnitCount; ++u) {
        for (int i = 0; i < unit_out[u].size(); ++i) units_[u].push_back(unit_out[u][i]);
    }
    // Timeline tracks, one per unit, in port order.
    if (!timeline_) return;
    const std::string proc = fmt::format("core {}", id_);
    for (std::size_t u = 0; u < kUnitCount; ++u) {
        first_track_[u] = open_spans_.size();
        for (UnitIf* unit : units_[u]) {
            open_spans_.push_back(OpenSpan{timeline_->track(proc, unit->track_name())});
        }
    }
}

void TensorCore::load(const CoreProgram& program, const std::vector<OpInfo>& ops) {
    program_ = &program;
    ops_ = &ops;
    issuer_ = Issuer{id_, program.hbm_base, &stats_};
    sequencer_->load(program);
    const std::size_t op_count = ops.size();
    done_.assign(program.instrs.size(), 0);
    first_pending_ = 0;
    reader_ = program.instrs.add_reader();
    remaining_ = program.instrs.size();
    stats_.ops.assign(op_count, OpTiming{});
    finished_ = remaining_ == 0;
}

void TensorCore::issue(std::uint32_t idx, Cycle stall) {
    const Instr& in = program_->instrs[idx];
    const Cycle now = now_cycles();
    if (next_issued_ < boundaries_.size() && idx == boundaries_[next_issued_]) {
        const bool clean = first_pending_ >= idx && (last_issue_ == ~Cycle{0} || last_issue_ < now);
        observer_->issued(id_, next_issued_++, clean);
    }
    last_issue_ = now;
    stats_.issue_stall_cycles += stall;
    OpTiming& op = stats_.ops[in.op];
    op.start = std::min(op.start, now);
    ++op.instructions;
    ++stats_.instructions;
    unit(in).issue(in, UnitRequest{UnitReply{done_in.operator->(), idx}, issuer_});
}

void TensorCore::done(std::uint64_t tag, const UnitDone& d) {
    const auto idx = static_cast<std::uint32_t>(tag);
    const Instr& in = program_->instrs[idx];
    const auto u = static_cast<std::size_t>(in.unit);
    stats_.ops[in.op].busy[u] += d.busy;
    const Cycle now = now_cycles();
    if (d.end <= now) {
        pending_.push({now, idx});
        completion_q_.notify(sc_core::SC_ZERO_TIME);
    } else {
        pending_.push({d.end, idx});
        completion_q_.notify(cycles(d.end - now));
    }
    span(first_track_[u] + unit_instance(in), in.op, d.start, d.end);
}

void TensorCore::on_completion() {
    completion_q_.fired();
    const Cycle now = now_cycles();
    bool any = false;
    while (!pending_.empty() && pending_.top().t <= now) {
        const std::uint32_t idx = pending_.top().idx;
        pending_.pop();
        if (done_[idx]) continue;
        done_[idx] = 1;
        any = true;
        if (observer_) {
            if (completed_at_ != now) completed_now_.clear();
            completed_at_ = now;
            completed_now_.push_back(idx);
        }
        OpTiming& op = stats_.ops[program_->instrs[idx].op];
        op.end = std::max(op.end, now);
        end_cycle_ = std::max(end_cycle_, now);
        if (--remaining_ == 0) finished_ = true;
    }
    if (any) {
        const std::size_t before = first_pending_;
        while (first_pending_ < done_.size() && done_[first_pending_]) ++first_pending_;
        if (first_pending_ != before) program_->instrs.release(reader_, first_pending_);
        while (next_reached_ < boundaries_.size() && first_pending_ >= boundaries_[next_reached_]) {
            // Whether the boundary's instruction waits on one that completed last (now).
            const auto& data = data_waits_[next_reached_];
            bool released = false;
            for (std::uint32_t w : completed_now_)
                released |= std::binary_search(data.begin(), data.end(), w);
            observer_->reached(id_, next_reached_++, released);
        }
    }
    if (any) progress_.notify(sc_core::SC_ZERO_TIME);
}

void TensorCore::span(std::size_t track, std::uint32_t op, Cycle start, Cycle end) {
    if (!timeline_ || !timeline_->enabled()) return;
    // Consecutive instructions of one op on one unit merge into one span.
    OpenSpan& s = open_spans_[track];
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
