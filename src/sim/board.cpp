#include "board.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>

#include "tpusim/common/sim_time.h"

namespace tpusim {

namespace {

// The names of the stat groups of chip `index` and core `core`. A chip's host link names
// itself host_link<chip> (HostLink).
std::string chip_name(std::int64_t index) { return fmt::format("chip{}", index); }
std::string core_name(std::int64_t core) { return fmt::format("core{}", core); }
std::string host_link_name(std::int64_t index) { return fmt::format("host_link{}", index); }

}  // namespace

Chip::Chip(sc_core::sc_module_name name, std::int64_t index, const TpuConfig& cfg, UnitIf& ici,
           Timeline* timeline, const HbmCalibration* hbm_calibration)
    : sc_module(name), stats_(chip_name(index), "one TPU chip") {
    const std::int64_t per_chip = cfg.chip.cores_per_chip;
    const bool burst = cfg.sim.hbm_model == HbmModel::Burst;
    if (burst) {
        hbm_ = std::make_unique<BurstHbm>("hbm", cfg.hbm, cfg.chip.clock_mhz,
                                          static_cast<std::uint32_t>(per_chip));
    } else {
        calibrated_ = std::make_unique<CalibratedHbm>("hbm", cfg.hbm, cfg.chip.clock_mhz, per_chip,
                                                      *hbm_calibration);
    }
    host_ = std::make_unique<HostLinkModule>("host", cfg.host, cfg.chip.clock_mhz,
                                             static_cast<int>(index));
    stats_.add_child(hbm_stats());
    stats_.add_child(host_->link().stats());
    TensorCoreConfigs tc{cfg.core, cfg.sequencer, cfg.mxu, cfg.vpu, cfg.vmem, cfg.dma};
    tc.mxu_fidelity = cfg.sim.mxu_fidelity;
    tc.cores_per_chip = per_chip;
    tc.hbm_capacity_bytes = cfg.hbm.capacity_bytes();
    tc.hbm_timing = burst ? DmaEngine::HbmTiming::Blocking : DmaEngine::HbmTiming::Annotated;
    for (std::int64_t local = 0; local < per_chip; ++local) {
        const std::int64_t c = index * per_chip + local;
        cores_.push_back(std::make_unique<TensorCore>(core_name(c).c_str(), c, tc, timeline));
        TensorCore& core = *cores_.back();
        if (burst) {
            core.dma_engine().hbm_out(hbm_->target_in);
        } else {
            core.dma_engine().hbm_out(calibrated_->target_in);
        }
        core.unit_port(Unit::Ici).bind(ici);
        core.unit_port(Unit::Host).bind(host_->core_in);
        stats_.add_child(core.stats().group);
    }
}

Chip::~Chip() = default;

const StatGroup& Chip::hbm_stats() const {
    return hbm_ ? hbm_->system().stats() : calibrated_->stats();
}

const std::uint64_t& Chip::hbm_bytes_read() const {
    return hbm_ ? hbm_->system().bytes_read() : calibrated_->model().bytes_read();
}

const std::uint64_t& Chip::hbm_bytes_written() const {
    return hbm_ ? hbm_->system().bytes_written() : calibrated_->model().bytes_written();
}

std::unique_ptr<StatGroup> Chip::stats_as(std::int64_t index) const {
    std::map<const StatGroup*, std::string> names{{&host_->link().stats(), host_link_name(index)}};
    const auto per_chip = static_cast<std::int64_t>(cores_.size());
    for (std::int64_t local = 0; local < per_chip; ++local) {
        names[&cores_[static_cast<std::size_t>(local)]->stats().group] =
            core_name(index * per_chip + local);
    }
    return std::make_unique<StatGroup>(chip_name(index), stats_, names);
}

Board::Board(sc_core::sc_module_name name, const TpuConfig& cfg, Timeline* timeline,
             HbmCalibrationCache& calibrations, const std::vector<std::int64_t>& like,
             const std::vector<std::int64_t>& image)
    : sc_module(name),
      cfg_(cfg),
      topology_(cfg.board, cfg.chip),
      reduction_cost_(cfg.vpu, cfg.hbm, cfg.chip),
      timeline_(timeline) {
    ici_ = std::make_unique<IciNetwork>("ici", topology_, cfg.ici, cfg.chip.clock_mhz,
                                        reduction_cost_);
    rendezvous_ = std::make_unique<CollectiveRendezvous>("ici_rendezvous", *ici_);
    if (timeline_ && timeline_->enabled()) ici_->engine().fabric().attach_timeline(timeline_);
    stats_.add_child(ici_->engine().fabric().stats());
    if (!image.empty()) rendezvous_->simulate_only(image);
    const HbmCalibration* hbm_calibration =
        cfg.sim.hbm_model != HbmModel::Burst
            ? &calibrations.get(cfg.hbm, cfg.chip.clock_mhz, cfg.chip.cores_per_chip)
            : nullptr;
    // In chip order, each built or a copy of the built chip it runs as (always one before it).
    for (std::int64_t c = 0; c < cfg.chips(); ++c) {
        const std::int64_t as = like.empty() ? c : like[static_cast<std::size_t>(c)];
        if (as == c) {
            chips_.push_back(std::make_unique<Chip>(chip_name(c).c_str(), c, cfg, *rendezvous_,
                                                    timeline, hbm_calibration));
            stats_.add_child(chips_.back()->stats());
        } else {
            if (as < 0 || as > c || !chips_[static_cast<std::size_t>(as)])
                throw std::logic_error("Board: a chip copies one that is not built before it");
            chips_.push_back(nullptr);
            chip_copies_.push_back(chips_[static_cast<std::size_t>(as)]->stats_as(c));
            stats_.add_child(*chip_copies_.back());
        }
    }
}

Board::~Board() = default;

TensorCore& Board::core(std::int64_t c) {
    const auto per_chip = static_cast<std::int64_t>(cfg_.chip.cores_per_chip);
    return chips_[static_cast<std::size_t>(c / per_chip)]->core(
        static_cast<std::size_t>(c % per_chip));
}

void Board::collect(RunResult& r) {
    // A built chip's HBM counts once for every chip it stands for.
    const auto copies = stats_.multiplicities();
    for (const auto& chip : chips_) {
        if (!chip) continue;
        const std::uint64_t n = copies.at(&chip->hbm_stats());
        r.hbm_bytes_read += chip->hbm_bytes_read() * n;
        r.hbm_bytes_written += chip->hbm_bytes_written() * n;
    }
    IciFabric& fabric = ici_->engine().fabric();
    fabric.set_elapsed(static_cast<Tick>(r.cycles) * kTicksPerCycle);
    for (std::size_t l = 0; l < topology_.links().size(); ++l) r.ici_bytes += fabric.link_bytes(l);
    if (timeline_ && timeline_->enabled()) fabric.flush_timeline();
}

nlohmann::json Board::stats_json() const { return stats_.to_json(); }

std::string module_tree(const sc_core::sc_object& obj, int depth) {
    // Structure only: processes, event queues, the units' update-phase channels (primitive
    // channels that order a delta cycle's requests) and sc_vector containers are left out.
    const std::string kind = obj.kind();
    for (const char* skip : {"process", "event_queue", "prim_channel", "sc_vector"}) {
        if (kind.find(skip) != std::string::npos) return "";
    }
    std::string out = fmt::format("{:{}}{}  ({})\n", "", 2 * depth, obj.name(), kind);
    for (const sc_core::sc_object* child : obj.get_child_objects()) {
        out += module_tree(*child, depth + 1);
    }
    return out;
}

}  // namespace tpusim
