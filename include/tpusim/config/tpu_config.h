#pragma once
// The whole configuration in effect: one typed struct per component. A component receives
// only its own struct (`const MxuConfig&`), never this object.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "tpusim/config/board_config.h"
#include "tpusim/config/core_config.h"
#include "tpusim/config/energy_config.h"
#include "tpusim/config/hbm_config.h"
#include "tpusim/config/ici_config.h"
#include "tpusim/config/lowering_config.h"
#include "tpusim/config/memory_config.h"
#include "tpusim/config/mxu_config.h"
#include "tpusim/config/sequencer_config.h"
#include "tpusim/config/sim_config.h"
#include "tpusim/config/visitor.h"

namespace tpusim {

struct TpuConfig {
    std::string name = "tpu";
    std::string description;
    BoardConfig board;
    ChipConfig chip;
    HostConfig host;
    CoreConfig core;
    SequencerConfig sequencer;
    MxuConfig mxu;
    VpuConfig vpu;
    VmemConfig vmem;
    DmaConfig dma;
    HbmConfig hbm;
    IciConfig ici;
    LoweringConfig lowering;
    SimConfig sim;
    EnergyConfig energy;

    std::int64_t chips() const { return board.chips(); }
    std::int64_t cores() const { return board.chips() * chip.cores_per_chip; }

    void visit(ConfigVisitor& v) {
        v.value("name", name, {}, "configuration name");
        v.value("description", description, {}, "what this configuration models");
        v.section("board", board, "board / slice topology and quoted figures");
        v.section("chip", chip, "chip-level parameters");
        v.section("host", host, "host and its link to the board");
        v.section("core", core, "TensorCore");
        v.section("sequencer", sequencer, "sequencer (scalar unit) issue model");
        v.section("mxu", mxu, "matrix unit (systolic array)");
        v.section("vpu", vpu, "vector unit");
        v.section("vmem", vmem, "vector memory (per-core scratchpad)");
        v.section("dma", dma, "DMA engines (per core)");
        v.section("hbm", hbm, "high-bandwidth memory (per chip)");
        v.section("ici", ici, "inter-chip interconnect");
        v.section("lowering", lowering, "how ops are tiled onto a core (compiler choices)");
        v.section("sim", sim, "simulation detail / speed choices");
        v.section("energy", energy, "energy and power model (docs/energy.md)");
    }
};

// Loads `path`, following "extends" (relative to the file that names it), applies overrides
// ("mxu.rows=256": dotted key = JSON value or bare string), and validates. Throws InputError
// naming the file (or "--set <override>") and the JSON pointer of the offending value.
TpuConfig load_config(const std::string& path, const std::vector<std::string>& overrides = {});

// The config in effect as JSON (the object echoed in every report and by `config --dump`).
nlohmann::json config_to_json(const TpuConfig& cfg);

// Markdown table of every key: pointer, type, default, unit, meaning (docs/config.md); with
// `in_effect`, that config's value of each key instead of the default (`config --keys --config F`).
std::string config_key_table(const TpuConfig* in_effect = nullptr);

// The same keys as data (`config --keys --json`): key, type, default, unit, range, meaning;
// with `in_effect`, also "value", that config's.
nlohmann::json config_keys_json(const TpuConfig* in_effect = nullptr);

}  // namespace tpusim
