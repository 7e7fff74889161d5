#include "board.h"

#include <fmt/format.h>

#include "tpusim/common/sim_time.h"

namespace tpusim {

ChipMemory::ChipMemory(sc_core::sc_module_name name, const HbmConfig& hbm, double core_clock_mhz,
                       std::int64_t cores_per_chip)
    : sc_module(name), hbm_(hbm, core_clock_mhz, static_cast<std::uint32_t>(cores_per_chip)) {
    SC_THREAD(run);
}

void ChipMemory::transfer(int core_on_chip, const DmaInstr& d, std::function<void(Cycle)> done) {
    const Cycle now = now_cycles();
    hbm_.advance_to(now);
    HbmRequest r;
    r.addr = d.hbm_addr;
    r.bytes = d.row_bytes;
    r.rows = d.rows;
    r.stride = d.hbm_stride;
    r.is_write = !d.to_vmem;
    r.requester = core_on_chip;
    r.tag = next_tag_++;
    waiting_.emplace(r.tag, std::move(done));
    hbm_.submit(r, now);
    wake_.notify(sc_core::SC_ZERO_TIME);
}

void ChipMemory::run() {
    while (true) {
        const Cycle now = now_cycles();
        hbm_.advance_to(now);
        for (const HbmCompletion& c : hbm_.take_completions()) {
            auto it = waiting_.find(c.tag);
            if (it == waiting_.end()) continue;
            auto cb = std::move(it->second);
            waiting_.erase(it);
            cb(std::max(c.cycle, now));
        }
        const Cycle next = hbm_.next_event_cycle();
        if (next == kNever) {
            wait(wake_);
        } else {
            wait(cycles(next > now ? next - now : 1), wake_);
        }
    }
}

Board::Board(sc_core::sc_module_name name, const TpuConfig& cfg, Timeline* timeline)
    : sc_module(name), cfg_(cfg) {
    const std::int64_t per_chip = cfg.chip.cores_per_chip;
    for (std::int64_t c = 0; c < cfg.chips(); ++c) {
        Chip chip;
        chip.stats = std::make_unique<StatGroup>(fmt::format("chip{}", c), "one TPU chip");
        chip.memory = std::make_unique<ChipMemory>(fmt::format("chip{}_hbm", c).c_str(), cfg.hbm,
                                                   cfg.chip.clock_mhz, per_chip);
        chip.host = std::make_unique<HostLink>(cfg.host, cfg.chip.clock_mhz, static_cast<int>(c));
        chip.stats->add_child(chip.memory->hbm().stats());
        chip.stats->add_child(chip.host->stats());
        stats_.add_child(*chip.stats);
        chips_.push_back(std::move(chip));
    }
    const TensorCoreConfigs tc{cfg.core, cfg.sequencer, cfg.mxu, cfg.vpu, cfg.vmem};
    for (std::int64_t c = 0; c < cfg.cores(); ++c) {
        Chip& chip = chips_[static_cast<std::size_t>(c / per_chip)];
        const int local = static_cast<int>(c % per_chip);
        CorePorts ports;
        ChipMemory* mem = chip.memory.get();
        HostLink* host = chip.host.get();
        ports.dma = [mem, local](const DmaInstr& d, std::function<void(Cycle)> done) {
            mem->transfer(local, d, std::move(done));
        };
        ports.host = [host](const HostInstr& h, std::int64_t, std::function<void(Cycle)> done) {
            done(host->transfer(h.bytes, h.to_device, now_cycles()));
        };
        ports.collective = [](const CollectiveInstr& ci, std::int64_t, std::function<void(Cycle)>) {
            throw std::logic_error("collective " + ci.kind + " needs the ICI model");
        };
        ports.dma_in_flight = cfg.dma.engines * 4;
        cores_.push_back(std::make_unique<TensorCore>(fmt::format("core{}", c).c_str(), c, tc,
                                                      std::move(ports), timeline));
        chip.stats->add_child(cores_.back()->stats().group);
    }
}

Board::~Board() = default;

void Board::collect(RunResult& r) const {
    for (const Chip& chip : chips_) {
        const StatGroup& s = const_cast<ChipMemory&>(*chip.memory).hbm().stats();
        r.hbm_bytes_read += static_cast<Bytes>(s.lookup("bytes_read"));
        r.hbm_bytes_written += static_cast<Bytes>(s.lookup("bytes_written"));
    }
}

nlohmann::json Board::stats_json() const { return stats_.to_json(); }

}  // namespace tpusim
