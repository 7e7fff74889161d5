#pragma once
// Simulation-level choices that trade detail for speed (not hardware parameters).
#include <string>

#include "tpusim/config/visitor.h"

namespace tpusim {

struct SimConfig {
    // "calibrated": HBM served as per-core-half transfer queues whose rates and latency are
    // measured on the burst-level model at start-up (include/tpusim/arch/hbm_calibrated.h);
    // "burst": every 32-byte burst through the bank/timing/scheduler model (slow, exact).
    std::string hbm_model = "calibrated";
    // "tile": MXU passes timed by the closed-form schedule; "pe": every processing element
    // stepped every cycle (same cycles, tested; for small studies and cross-checks).
    std::string mxu_fidelity = "tile";

    void visit(ConfigVisitor& v) {
        v.value("hbm_model", hbm_model, {"calibrated", "burst"},
                "HBM model in whole-program runs: calibrated transfer queues or every burst");
        v.value("mxu_fidelity", mxu_fidelity, {"tile", "pe"},
                "MXU model in whole-program runs: closed-form tile schedule or PE by PE");
    }
};

}  // namespace tpusim
