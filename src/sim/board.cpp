#include "board.h"

#include <fmt/format.h>

#include "tpusim/common/sim_time.h"

namespace tpusim {

ChipMemory::ChipMemory(sc_core::sc_module_name name, const HbmConfig& hbm, double core_clock_mhz,
                       std::int64_t cores_per_chip, bool burst_level)
    : sc_module(name) {
    if (burst_level) {
        burst_ = std::make_unique<HbmSystem>(hbm, core_clock_mhz,
                                             static_cast<std::uint32_t>(cores_per_chip));
        SC_THREAD(run);
    } else {
        calibrated_ = std::make_unique<HbmCalibratedModel>(hbm, core_clock_mhz, cores_per_chip);
        SC_METHOD(deliver);
        sensitive << due_q_;
        dont_initialize();
    }
}

const StatGroup& ChipMemory::stats() const {
    return burst_ ? burst_->stats() : calibrated_->stats();
}

double ChipMemory::bytes_read() const { return stats().lookup("bytes_read"); }
double ChipMemory::bytes_written() const { return stats().lookup("bytes_written"); }

void ChipMemory::transfer(int core_on_chip, const DmaInstr& d, std::function<void(Cycle)> done) {
    const Cycle now = now_cycles();
    const std::uint64_t tag = next_tag_++;
    waiting_.emplace(tag, std::move(done));
    if (calibrated_) {
        const Cycle t = calibrated_->transfer(d.hbm_addr, d.bytes(), !d.to_vmem, core_on_chip, now);
        due_.push({t, tag});
        due_q_.notify(cycles(t - now));
        return;
    }
    burst_->advance_to(now);
    HbmRequest r;
    r.addr = d.hbm_addr;
    r.bytes = d.row_bytes;
    r.rows = d.rows;
    r.stride = d.hbm_stride;
    r.is_write = !d.to_vmem;
    r.requester = core_on_chip;
    r.tag = tag;
    burst_->submit(r, now);
    wake_.notify(sc_core::SC_ZERO_TIME);
}

void ChipMemory::deliver() {
    const Cycle now = now_cycles();
    while (!due_.empty() && due_.top().t <= now) {
        const std::uint64_t tag = due_.top().tag;
        due_.pop();
        auto it = waiting_.find(tag);
        auto cb = std::move(it->second);
        waiting_.erase(it);
        cb(now);
    }
}

void ChipMemory::run() {
    while (true) {
        const Cycle now = now_cycles();
        burst_->advance_to(now);
        for (const HbmCompletion& c : burst_->take_completions()) {
            auto it = waiting_.find(c.tag);
            if (it == waiting_.end()) continue;
            auto cb = std::move(it->second);
            waiting_.erase(it);
            cb(std::max(c.cycle, now));
        }
        const Cycle next = burst_->next_event_cycle();
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
                                                   cfg.chip.clock_mhz, per_chip,
                                                   cfg.sim.hbm_model == "burst");
        chip.host = std::make_unique<HostLink>(cfg.host, cfg.chip.clock_mhz, static_cast<int>(c));
        chip.stats->add_child(chip.memory->stats());
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
        r.hbm_bytes_read += static_cast<Bytes>(chip.memory->bytes_read());
        r.hbm_bytes_written += static_cast<Bytes>(chip.memory->bytes_written());
    }
}

nlohmann::json Board::stats_json() const { return stats_.to_json(); }

}  // namespace tpusim
