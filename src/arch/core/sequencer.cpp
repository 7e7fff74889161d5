#include "arch/core/sequencer.h"

#include <algorithm>
#include <iterator>

#include "tpusim/arch/core/core_stats.h"
#include "tpusim/common/sim_time.h"

namespace tpusim {

namespace {

// Instructions of one slot class a bundle holds.
std::int64_t slots_per_bundle(const SequencerConfig& cfg, Unit u) {
    switch (u) {
        case Unit::Dma:
            return cfg.dma_slots;
        case Unit::Mxu:
            return cfg.matrix_slots;
        case Unit::Vpu:
            return cfg.vector_slots;
        case Unit::Ici:
        case Unit::Host:
            return 1;
    }
    return 1;
}

}  // namespace

Sequencer::Sequencer(sc_core::sc_module_name name, const SequencerConfig& cfg)
    : sc_module(name), cfg_(cfg) {
    SC_THREAD(run);
}

void Sequencer::run() {
    if (program_) issue_program();
    wait(never_);
}

void Sequencer::issue_program() {
    const auto& instrs = program_->instrs;
    std::int64_t used[kUnitCount] = {};  // slots taken in the current bundle, by unit
    Cycle bundle_cycle = ~Cycle{0};
    for (std::uint32_t i = 0; i < instrs.size(); ++i) {
        const Instr& in = instrs[i];
        const Cycle before = now_cycles();
        bool waited = false;
        for (std::uint32_t w : in.waits) {
            while (!core_out->completed(w)) {
                wait(core_out->progress_event());
                waited = true;
            }
        }
        if (waited && cfg_.sync_latency_cycles > 0) {
            wait(cycles(static_cast<Cycle>(cfg_.sync_latency_cycles)));
        }
        while (core_out->unit_full(in)) wait(core_out->unit_freed(in));
        // One bundle per cycle: a slot class holds `slots` instructions per bundle.
        Cycle now = now_cycles();
        const auto sc = static_cast<std::size_t>(in.unit);
        if (now == bundle_cycle && used[sc] >= slots_per_bundle(cfg_, in.unit)) {
            wait(cycles(1));
            now = now_cycles();
        }
        if (now != bundle_cycle) {
            bundle_cycle = now;
            std::fill(std::begin(used), std::end(used), 0);
        }
        ++used[sc];
        core_out->issue(i, now - before);
    }
}

}  // namespace tpusim
