// SystemC wrapper of the MXU. Tile fidelity schedules a pass in closed form as soon as its LHS
// is streamed and notifies the stage events at the computed cycles. PE fidelity runs one thread
// that steps the PE array: cycle t is simulated at SystemC time t + 1, after every process has
// had its say at time t, so operands pushed at cycle t are seen by cycle t's controller in both
// fidelities alike (the controller ignores operands whose availability is later than t).
#include "tpusim/arch/mxu/mxu.h"

#include <algorithm>
#include <stdexcept>

#include "tpusim/common/sim_time.h"

namespace tpusim {

MxuFidelity parse_mxu_fidelity(const std::string& name) {
    if (name == "tile") return MxuFidelity::tile;
    if (name == "pe") return MxuFidelity::pe;
    throw std::invalid_argument("expected fidelity \"tile\" or \"pe\", got \"" + name + "\"");
}

const char* to_string(MxuFidelity f) { return kMxuFidelityNames[static_cast<std::size_t>(f)]; }

SC_HAS_PROCESS(Mxu);

Mxu::Mxu(sc_core::sc_module_name name, const MxuConfig& cfg, MxuFidelity fidelity)
    : sc_module(name),
      fidelity_(fidelity),
      pipe_(cfg),
      tile_(cfg),
      weights_q_("weights_q"),
      lhs_q_("lhs_q"),
      results_q_("results_q"),
      block_(make_mxu_block_timer(cfg, fidelity)) {
    if (fidelity_ == MxuFidelity::pe) {
        pe_ = std::make_unique<MxuPeArray>(cfg);
        SC_THREAD(pe_thread);
    }
}

void Mxu::notify_at(sc_core::sc_event_queue& q, Cycle at) {
    const Cycle now = now_cycles();
    q.notify(at > now ? cycles(at - now) : sc_core::SC_ZERO_TIME);
}

Mxu::PassId Mxu::push_weights(const MxuPass& pass, const float* weights, std::int64_t ldw) {
    PassRecord r;
    r.pass = pass;
    r.weights_avail = now_cycles();
    if (pe_) {
        pe_->submit(pass, r.weights_avail, MxuPeArray::kNever, {weights, ldw});
        work_.notify(sc_core::SC_ZERO_TIME);
    } else if (pass.m < 1 || pass.k < 1 || pass.n < 1 ||
               pass.k > static_cast<std::int64_t>(pipe_.rows) ||
               pass.n > static_cast<std::int64_t>(pipe_.cols)) {
        throw std::invalid_argument("MxuPass: need 1 <= k <= rows, 1 <= n <= cols, m >= 1");
    }
    passes_.push_back(r);
    if (!pe_) announce_weight_loads();
    return passes_.size() - 1;
}

// Tile fidelity: a pass's weight load is fixed once every earlier pass is scheduled, possibly
// before its own LHS arrives; announce it then, as the PE array would start it.
void Mxu::announce_weight_loads() {
    while (weights_announced_ < passes_.size() && weights_announced_ <= next_stream_) {
        const PassRecord& r = passes_[weights_announced_];
        const Cycle start = weights_announced_ < next_stream_
                                ? r.timing.weights_start
                                : tile_.next_weights_start(r.weights_avail);
        notify_at(weights_q_, start + pipe_.load_cycles);
        ++weights_announced_;
    }
}

void Mxu::stream_lhs(PassId id, const float* lhs, std::int64_t ldl, float* out, std::int64_t ldo,
                     bool accumulate) {
    if (id != next_stream_ || id >= passes_.size()) {
        throw std::logic_error("Mxu::stream_lhs: passes must be streamed in push order");
    }
    ++next_stream_;
    PassRecord& r = passes_[id];
    r.streamed = true;
    const Cycle now = now_cycles();
    if (pe_) {
        pe_->provide_lhs(id, now, lhs, ldl, out, ldo, accumulate);
        work_.notify(sc_core::SC_ZERO_TIME);
        return;
    }
    r.timing = tile_.schedule(r.pass, r.weights_avail, now);
    announce_weight_loads();
    notify_at(lhs_q_, r.timing.lhs_end);
    notify_at(results_q_, r.timing.results_end);
}

bool Mxu::done(PassId id) const {
    if (pe_) return id < pe_->passes_completed();
    return id < next_stream_ && now_cycles() >= passes_[id].timing.results_end;
}

void Mxu::wait_done(PassId id) {
    while (!done(id)) wait(results_q_.default_event());
}

MxuPassTiming Mxu::timing(PassId id) const { return pe_ ? pe_->timing(id) : passes_.at(id).timing; }

void Mxu::after_pe_step() {
    // The step just simulated cycle now - 1; stage events fire at the cycle they describe.
    while (loads_seen_ < pe_->passes_submitted() &&
           pe_->weights_start(loads_seen_) != MxuPeArray::kNever) {
        notify_at(weights_q_, pe_->weights_start(loads_seen_) + pipe_.load_cycles);
        ++loads_seen_;
    }
    while (streams_seen_ < pe_->passes_submitted() &&
           pe_->lhs_start(streams_seen_) != MxuPeArray::kNever) {
        notify_at(lhs_q_, pe_->lhs_start(streams_seen_) +
                              static_cast<Cycle>(passes_[streams_seen_].pass.m));
        ++streams_seen_;
    }
    while (done_seen_ < pe_->passes_completed()) {
        notify_at(results_q_, pe_->timing(done_seen_).results_end);
        ++done_seen_;
    }
    if (trace_dim_ > 0) {
        trace_cycle_ = pe_->now() - 1;
        for (std::int64_t r = 0; r < trace_dim_; ++r) {
            for (std::int64_t c = 0; c < trace_dim_; ++c) {
                const auto i = static_cast<std::size_t>(r * trace_dim_ + c);
                trace_lhs_[i] = pe_->lhs_at(r, c);
                trace_psum_[i] = pe_->psum_at(r, c);
            }
        }
    }
}

void Mxu::pe_thread() {
    for (;;) {
        if (pe_->quiescent()) {
            wait(work_);
            pe_->skip_to(now_cycles());
            continue;
        }
        const Cycle now = now_cycles();
        if (pe_->now() + 1 > now) wait(cycles(pe_->now() + 1 - now));
        pe_->step();
        after_pe_step();
    }
}

void Mxu::trace(sc_core::sc_trace_file* tf, std::int64_t dim) {
    if (!pe_ || tf == nullptr) return;
    trace_dim_ = std::min({dim, pe_->rows(), pe_->cols()});
    trace_lhs_.assign(static_cast<std::size_t>(trace_dim_ * trace_dim_), 0.0f);
    trace_psum_.assign(trace_lhs_.size(), 0.0f);
    const std::string base = name();
    sc_core::sc_trace(tf, trace_cycle_, base + ".cycle");
    for (std::int64_t r = 0; r < trace_dim_; ++r) {
        for (std::int64_t c = 0; c < trace_dim_; ++c) {
            const auto i = static_cast<std::size_t>(r * trace_dim_ + c);
            const std::string pe = base + ".pe_" + std::to_string(r) + "_" + std::to_string(c);
            sc_core::sc_trace(tf, trace_lhs_[i], pe + ".lhs");
            sc_core::sc_trace(tf, trace_psum_[i], pe + ".psum");
        }
    }
}

}  // namespace tpusim
