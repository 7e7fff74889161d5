#include "board.h"

#include <fmt/format.h>

#include "tpusim/common/sim_time.h"
#include "tpusim/program/collectives.h"

namespace tpusim {

CalibratedHbm::CalibratedHbm(sc_core::sc_module_name name, const HbmConfig& hbm,
                             double core_clock_mhz, std::int64_t cores_per_chip)
    : sc_module(name), model_(hbm, core_clock_mhz, cores_per_chip) {
    SC_METHOD(deliver);
    sensitive << due_q_;
    dont_initialize();
}

void CalibratedHbm::transfer(int core_on_chip, const DmaInstr& d, std::function<void(Cycle)> done) {
    const Cycle now = now_cycles();
    const std::uint64_t tag = next_tag_++;
    waiting_.emplace(tag, std::move(done));
    const Cycle t = model_.transfer(d.hbm_addr, d.bytes(), !d.to_vmem, core_on_chip, now);
    due_.push({t, tag});
    due_q_.notify(cycles(t - now));
}

void CalibratedHbm::deliver() {
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

void CollectiveRendezvous::arrive(const CollectiveInstr& c, std::int64_t core,
                                  std::function<void(Cycle)> done) {
    if (c.kind == "send") {
        CollectiveSpec s;
        s.kind = CollectiveKind::kSendRecv;
        s.bytes = c.bytes;
        s.element_bytes = static_cast<Bytes>(c.element_bytes);
        s.group = {static_cast<int>(core), static_cast<int>(c.peer)};
        s.pairs = {{static_cast<int>(core), static_cast<int>(c.peer)}};
        const auto key = std::make_pair(core, c.peer);
        ici_.start(s, [this, key, done](Cycle t) {
            done(t);
            auto& waiting = recvs_waiting_[key];
            if (waiting.empty()) {
                sends_done_[key].push_back(t);
            } else {
                auto cb = std::move(waiting.front());
                waiting.pop_front();
                cb(t);
            }
        });
        return;
    }
    if (c.kind == "recv") {
        const auto key = std::make_pair(c.peer, core);
        auto& sent = sends_done_[key];
        if (!sent.empty()) {
            sent.pop_front();
            done(now_cycles());
        } else {
            recvs_waiting_[key].push_back(std::move(done));
        }
        return;
    }
    // Group collectives: one start per replica group, when its last core arrives.
    const std::int64_t leader = c.group.empty() ? 0 : c.group.front();
    Pending& p = pending_[{c.instance, leader}];
    ++p.arrived;
    p.done.push_back(std::move(done));
    if (p.arrived < c.group.size()) return;
    CollectiveSpec s;
    s.kind = parse_collective_kind(c.kind);
    s.bytes = c.bytes;
    s.element_bytes = static_cast<Bytes>(c.element_bytes);
    for (std::int64_t g : c.group) s.group.push_back(static_cast<int>(g));
    for (const auto& [a, b] : c.pairs)
        s.pairs.emplace_back(static_cast<int>(a), static_cast<int>(b));
    auto callbacks = std::move(p.done);
    pending_.erase({c.instance, leader});
    ici_.start(s, [callbacks](Cycle t) {
        for (const auto& cb : callbacks) cb(t);
    });
}

const StatGroup& Chip::hbm_stats() const {
    return hbm ? hbm->system().stats() : calibrated->stats();
}

Board::Board(sc_core::sc_module_name name, const TpuConfig& cfg, Timeline* timeline)
    : sc_module(name),
      cfg_(cfg),
      topology_(cfg.board, cfg.chip),
      reduction_cost_(cfg.vpu, cfg.hbm, cfg.chip),
      timeline_(timeline) {
    ici_ = std::make_unique<IciNetwork>("ici", topology_, cfg.ici, cfg.chip.clock_mhz,
                                        reduction_cost_);
    rendezvous_ = std::make_unique<CollectiveRendezvous>(*ici_);
    if (timeline_ && timeline_->enabled()) ici_->engine().fabric().attach_timeline(timeline_);
    stats_.add_child(ici_->engine().fabric().stats());
    const std::int64_t per_chip = cfg.chip.cores_per_chip;
    const bool burst = cfg.sim.hbm_model == "burst";
    for (std::int64_t c = 0; c < cfg.chips(); ++c) {
        Chip chip;
        chip.stats = std::make_unique<StatGroup>(fmt::format("chip{}", c), "one TPU chip");
        if (burst) {
            chip.hbm = std::make_unique<HbmModule>(fmt::format("chip{}_hbm", c).c_str(), cfg.hbm,
                                                   cfg.chip.clock_mhz,
                                                   static_cast<std::uint32_t>(per_chip));
        } else {
            chip.calibrated = std::make_unique<CalibratedHbm>(
                fmt::format("chip{}_hbm", c).c_str(), cfg.hbm, cfg.chip.clock_mhz, per_chip);
        }
        chip.host = std::make_unique<HostLink>(cfg.host, cfg.chip.clock_mhz, static_cast<int>(c));
        chip.stats->add_child(chip.hbm_stats());
        chip.stats->add_child(chip.host->stats());
        stats_.add_child(*chip.stats);
        chips_.push_back(std::move(chip));
    }
    const TensorCoreConfigs tc{cfg.core, cfg.sequencer, cfg.mxu,
                               cfg.vpu,  cfg.vmem,      parse_mxu_fidelity(cfg.sim.mxu_fidelity)};
    for (std::int64_t c = 0; c < cfg.cores(); ++c) {
        Chip& chip = chips_[static_cast<std::size_t>(c / per_chip)];
        if (burst) {
            dma_.push_back(std::make_unique<DmaEngine>(
                fmt::format("core{}_dma", c).c_str(), cfg.dma, cfg.vmem,
                static_cast<int>(c % per_chip), cfg.hbm.capacity_bytes()));
            dma_.back()->hbm_out(chip.hbm->target_in);
        }
        cores_.push_back(std::make_unique<TensorCore>(fmt::format("core{}", c).c_str(), c, tc,
                                                      ports_for(c), timeline));
        chip.stats->add_child(cores_.back()->stats().group);
        if (burst) chip.stats->add_child(dma_.back()->stats());
    }
}

CorePorts Board::ports_for(std::int64_t c) {
    const std::int64_t per_chip = cfg_.chip.cores_per_chip;
    Chip& chip = chips_[static_cast<std::size_t>(c / per_chip)];
    const int local = static_cast<int>(c % per_chip);
    CorePorts ports;
    if (chip.hbm) {
        DmaEngine* dma = dma_[static_cast<std::size_t>(c)].get();
        ports.dma = [dma](const DmaInstr& d, std::function<void(Cycle)> done) {
            DmaDescriptor desc;
            desc.dir = d.to_vmem ? DmaDescriptor::Dir::HbmToVmem : DmaDescriptor::Dir::VmemToHbm;
            desc.hbm_addr = d.hbm_addr;
            desc.vmem_addr = d.vmem_addr;
            desc.rows = d.rows;
            desc.row_bytes = d.row_bytes;
            desc.hbm_stride = d.hbm_stride;
            desc.vmem_stride = d.vmem_stride;
            dma->enqueue(desc, nullptr, std::move(done));
        };
    } else {
        CalibratedHbm* mem = chip.calibrated.get();
        ports.dma = [mem, local](const DmaInstr& d, std::function<void(Cycle)> done) {
            mem->transfer(local, d, std::move(done));
        };
    }
    HostLink* host = chip.host.get();
    ports.host = [host](const HostInstr& h, std::int64_t, std::function<void(Cycle)> done) {
        done(host->transfer(h.bytes, h.to_device, now_cycles()));
    };
    CollectiveRendezvous* rv = rendezvous_.get();
    ports.collective = [rv](const CollectiveInstr& ci, std::int64_t core,
                            std::function<void(Cycle)> done) {
        rv->arrive(ci, core, std::move(done));
    };
    ports.dma_in_flight = cfg_.dma.engines * 4;
    return ports;
}

Board::~Board() = default;

void Board::collect(RunResult& r) {
    for (const Chip& chip : chips_) {
        r.hbm_bytes_read += static_cast<Bytes>(chip.hbm_stats().lookup("bytes_read"));
        r.hbm_bytes_written += static_cast<Bytes>(chip.hbm_stats().lookup("bytes_written"));
    }
    IciFabric& fabric = ici_->engine().fabric();
    fabric.set_elapsed(static_cast<Tick>(r.cycles) * kTicksPerCycle);
    for (std::size_t l = 0; l < topology_.links().size(); ++l) r.ici_bytes += fabric.link_bytes(l);
    if (timeline_ && timeline_->enabled()) fabric.flush_timeline();
}

nlohmann::json Board::stats_json() const { return stats_.to_json(); }

}  // namespace tpusim
