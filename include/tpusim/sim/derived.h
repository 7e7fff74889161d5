#pragma once
// Figures derived from the config alone (no simulation): peaks and capacities. Reports print
// them beside achieved (simulated) figures; neither is ever a literal.
#include <nlohmann/json_fwd.hpp>

#include "tpusim/config/tpu_config.h"

namespace tpusim {

struct DerivedFigures {
    double peak_flops_per_core;  // MXUs x rows x cols x 2 x clock
    double peak_flops_per_chip;
    double peak_flops_total;
    double hbm_bytes_per_s_per_chip;  // stacks x channels x bus width x data rate
    double hbm_capacity_bytes_per_chip;
    double ici_link_bytes_per_s;
    // Core clock at which the documents' quoted board peak would be the derived peak.
    double quoted_implied_clock_mhz;
};

DerivedFigures derive(const TpuConfig& cfg);

// The `tpusim info --json` object (keys per docs/design.md "Interfaces").
nlohmann::json info_json(const TpuConfig& cfg);

}  // namespace tpusim
