// SystemC wrapper of the MXU: a queue of matmul blocks and the thread that times them with the
// fidelity's block timer (mxu_block.h). A traced PE-fidelity Mxu also steps a waveform mirror:
// cycle t is simulated at SystemC time t + 1, after every process has had its say at time t.
// sc_spawn (the waveform thread, only when traced) needs the dynamic-process API.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "tpusim/arch/mxu/mxu.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "tpusim/arch/core/core_stats.h"
#include "tpusim/common/sim_time.h"

namespace tpusim {

MxuFidelity parse_mxu_fidelity(const std::string& name) {
    if (name == "tile") return MxuFidelity::Tile;
    if (name == "pe") return MxuFidelity::Pe;
    throw std::invalid_argument("expected fidelity \"tile\" or \"pe\", got \"" + name + "\"");
}

const char* to_string(MxuFidelity f) { return kMxuFidelityNames[static_cast<std::size_t>(f)]; }

Mxu::Mxu(sc_core::sc_module_name name, const MxuConfig& cfg, MxuFidelity fidelity,
         std::int64_t queue_depth, std::size_t index)
    : sc_module(name),
      cfg_(cfg),
      fidelity_(fidelity),
      depth_(static_cast<std::size_t>(queue_depth)),
      index_(index),
      block_(make_mxu_block_timer(cfg, fidelity)) {
    core_in.bind(*this);
    SC_THREAD(run);
}

bool Mxu::full(const Instr&) const { return queue_.size() >= depth_; }

std::string Mxu::track_name() const { return fmt::format("MXU {}", index_); }

void Mxu::issue(const Instr& in, const UnitRequest& req) {
    queue_.push_back(Block{in.mm(), next_ops_, req});
    next_ops_ = {};
    pushed_.notify(sc_core::SC_ZERO_TIME);
}

void Mxu::run() {
    for (;;) {
        while (queue_.empty()) wait(pushed_);
        const Block& b = queue_.front();
        const Cycle now = now_cycles();
        MxuBlockTiming t;
        {
            // Weight tiles of the block in K-major order; each streams the block's m LHS rows.
            // In a member, reused from block to block, so that nothing on the heap is held by
            // this thread's stack across the wait below: a simulation stopped there (a cycle
            // budget) never unwinds it.
            std::vector<MxuTile>& tiles = tiles_;
            mxu_gemm_tiles(cfg_, b.mm.m, b.mm.k, b.mm.n, tiles);
            t = block_->run(tiles, now, b.ops);
            if (wave_) {
                MxuBlockOperands shown = b.ops;
                shown.c = nullptr;  // the block timer writes the results
                for (const MxuTile& tile : tiles) {
                    wave_->submit(tile.pass, now, now, tile_operands(tile, shown));
                }
                wave_work_.notify(sc_core::SC_ZERO_TIME);
            }
        }
        if (CoreStats* s = b.req.issuer.stats) {
            s->mxu_busy_cycles += t.busy_cycles;
            s->mxu_useful_macs += t.useful_macs;
            s->mxu_array_macs += t.array_macs;
            s->mxu_passes += t.passes;
        }
        b.req.reply(UnitDone{t.first_weights_start, t.results_end, t.busy_cycles});
        // The queue slot frees when the block's LHS has streamed: the array then takes the
        // next block, whose weights the model preloads behind this one.
        if (t.lhs_end > now) wait(cycles(t.lhs_end - now));
        queue_.pop_front();
        popped_.notify(sc_core::SC_ZERO_TIME);
    }
}

void Mxu::wave_thread() {
    for (;;) {
        if (wave_->quiescent()) {
            wait(wave_work_);
            wave_->skip_to(now_cycles());
            continue;
        }
        const Cycle now = now_cycles();
        if (wave_->now() + 1 > now) wait(cycles(wave_->now() + 1 - now));
        wave_->step();
        sample_wave();
    }
}

void Mxu::sample_wave() {
    // The step just simulated cycle now - 1.
    trace_cycle_ = wave_->now() - 1;
    for (std::int64_t r = 0; r < trace_dim_; ++r) {
        for (std::int64_t c = 0; c < trace_dim_; ++c) {
            const auto i = static_cast<std::size_t>(r * trace_dim_ + c);
            trace_lhs_[i] = wave_->lhs_at(r, c);
            trace_psum_[i] = wave_->psum_at(r, c);
        }
    }
}

void Mxu::trace(sc_core::sc_trace_file* tf, std::int64_t dim) {
    if (fidelity_ != MxuFidelity::Pe || tf == nullptr || wave_) return;
    wave_ = std::make_unique<MxuPeArray>(cfg_);
    trace_dim_ = std::min({dim, wave_->rows(), wave_->cols()});
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
    sc_core::sc_spawn([this] { wave_thread(); }, "wave");
}

}  // namespace tpusim
