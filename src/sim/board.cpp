#include "board.h"

#include <fmt/format.h>

#include <algorithm>

#include "tpusim/common/sim_time.h"

namespace tpusim {

Chip::Chip(sc_core::sc_module_name name, std::int64_t index, const TpuConfig& cfg, UnitIf& ici,
           Timeline* timeline)
    : sc_module(name), stats_(fmt::format("chip{}", index), "one TPU chip") {
    const std::int64_t per_chip = cfg.chip.cores_per_chip;
    const bool burst = cfg.sim.hbm_model == HbmModel::burst;
    if (burst) {
        hbm_ = std::make_unique<HbmModule>("hbm", cfg.hbm, cfg.chip.clock_mhz,
                                           static_cast<std::uint32_t>(per_chip));
    } else {
        calibrated_ = std::make_unique<CalibratedHbm>("hbm", cfg.hbm, cfg.chip.clock_mhz, per_chip);
    }
    host_ = std::make_unique<HostLinkModule>("host", cfg.host, cfg.chip.clock_mhz,
                                             static_cast<int>(index));
    stats_.add_child(hbm_stats());
    stats_.add_child(host_->link().stats());
    TensorCoreConfigs tc{cfg.core, cfg.sequencer, cfg.mxu, cfg.vpu, cfg.vmem, cfg.dma};
    tc.mxu_fidelity = cfg.sim.mxu_fidelity;
    tc.cores_per_chip = per_chip;
    tc.hbm_capacity_bytes = cfg.hbm.capacity_bytes();
    tc.hbm_timing = burst ? DmaEngine::HbmTiming::blocking : DmaEngine::HbmTiming::annotated;
    for (std::int64_t local = 0; local < per_chip; ++local) {
        const std::int64_t c = index * per_chip + local;
        cores_.push_back(
            std::make_unique<TensorCore>(fmt::format("core{}", c).c_str(), c, tc, timeline));
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

Board::Board(sc_core::sc_module_name name, const TpuConfig& cfg, Timeline* timeline,
             std::int64_t built_chips)
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
    const std::int64_t built = built_chips > 0 ? std::min(built_chips, cfg.chips()) : cfg.chips();
    if (built < cfg.chips()) rendezvous_->simulate_only(built * cfg.chip.cores_per_chip);
    for (std::int64_t c = 0; c < built; ++c) {
        chips_.push_back(std::make_unique<Chip>(fmt::format("chip{}", c).c_str(), c, cfg,
                                                *rendezvous_, timeline));
        stats_.add_child(chips_.back()->stats());
    }
}

Board::~Board() = default;

TensorCore& Board::core(std::int64_t c) {
    const auto per_chip = static_cast<std::int64_t>(cfg_.chip.cores_per_chip);
    return chips_[static_cast<std::size_t>(c / per_chip)]->core(
        static_cast<std::size_t>(c % per_chip));
}

void Board::collect(RunResult& r) {
    // Chip c of the board did what built chip c % built did.
    const auto built = static_cast<std::int64_t>(chips_.size());
    for (std::int64_t c = 0; c < cfg_.chips(); ++c) {
        const Chip& chip = *chips_[static_cast<std::size_t>(c % built)];
        r.hbm_bytes_read += static_cast<Bytes>(chip.hbm_stats().lookup("bytes_read"));
        r.hbm_bytes_written += static_cast<Bytes>(chip.hbm_stats().lookup("bytes_written"));
    }
    IciFabric& fabric = ici_->engine().fabric();
    fabric.set_elapsed(static_cast<Tick>(r.cycles) * kTicksPerCycle);
    for (std::size_t l = 0; l < topology_.links().size(); ++l) r.ici_bytes += fabric.link_bytes(l);
    if (timeline_ && timeline_->enabled()) fabric.flush_timeline();
}

namespace {

// The stats of built chip `from` as chip `to` would name them: "chip<to>", its host link
// "host_link<to>" and its cores "core<to * per_chip + local>".
nlohmann::json renamed_chip(const nlohmann::json& from_json, std::int64_t from, std::int64_t to,
                            std::int64_t per_chip) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [key, value] : from_json.items()) {
        std::string name = key;
        if (key == fmt::format("host_link{}", from)) name = fmt::format("host_link{}", to);
        for (std::int64_t l = 0; l < per_chip; ++l) {
            if (key == fmt::format("core{}", from * per_chip + l))
                name = fmt::format("core{}", to * per_chip + l);
        }
        out[name] = value;
    }
    return out;
}

}  // namespace

nlohmann::json Board::stats_json() const {
    nlohmann::json j = stats_.to_json();
    const auto built = static_cast<std::int64_t>(chips_.size());
    for (std::int64_t c = built; c < cfg_.chips(); ++c) {
        const std::int64_t from = c % built;
        j[fmt::format("chip{}", c)] =
            renamed_chip(j[fmt::format("chip{}", from)], from, c, cfg_.chip.cores_per_chip);
    }
    return j;
}

std::string module_tree(const sc_core::sc_object& obj, int depth) {
    // Structure only: processes, event queues and sc_vector containers are left out.
    const std::string kind = obj.kind();
    for (const char* skip : {"process", "event_queue", "sc_vector"}) {
        if (kind.find(skip) != std::string::npos) return "";
    }
    std::string out = fmt::format("{:{}}{}  ({})\n", "", 2 * depth, obj.name(), kind);
    for (const sc_core::sc_object* child : obj.get_child_objects()) {
        out += module_tree(*child, depth + 1);
    }
    return out;
}

}  // namespace tpusim
