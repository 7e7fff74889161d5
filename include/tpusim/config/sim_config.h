#pragma once
// Simulation-level choices that trade detail for speed (not hardware parameters).
#include <array>
#include <cstdint>

#include "tpusim/config/visitor.h"

namespace tpusim {

// calibrated: HBM served as per-core-half transfer queues whose rates and latency are
// measured on the burst-level model at start-up (include/tpusim/arch/memory/hbm_calibrated.h);
// burst: every 32-byte burst through the bank/timing/scheduler model (slow, exact).
enum class HbmModel { Calibrated, Burst };
inline constexpr std::array<const char*, 2> kHbmModelNames = {"calibrated", "burst"};

// tile: MXU passes timed by the closed-form schedule; pe: every processing element stepped
// every cycle (same cycles, tested; for small studies and cross-checks).
enum class MxuFidelity { Tile, Pe };
inline constexpr std::array<const char*, 2> kMxuFidelityNames = {"tile", "pe"};

struct SimConfig {
    HbmModel hbm_model = HbmModel::Calibrated;
    MxuFidelity mxu_fidelity = MxuFidelity::Tile;
    // A core's program longer than this is streamed (lowered again on demand, a bounded window
    // ahead of the cores), not held (about 150 bytes an instruction). Memory and lowering time
    // only: the instructions, hence every cycle, are the same (tests/cli/streaming.sh).
    std::int64_t stream_above_instructions = std::int64_t{1} << 20;

    void visit(ConfigVisitor& v) {
        v.choice("hbm_model", hbm_model, kHbmModelNames,
                 "HBM model in whole-program runs: calibrated transfer queues or every burst");
        v.choice("mxu_fidelity", mxu_fidelity, kMxuFidelityNames,
                 "MXU model in whole-program runs: closed-form tile schedule or PE by PE");
        v.value("stream_above_instructions", stream_above_instructions,
                Limits::range(0, std::int64_t{1} << 40), "instructions",
                "a core's program longer than this is lowered on demand while it runs, not "
                "held (same cycles, less memory)");
    }
};

}  // namespace tpusim
