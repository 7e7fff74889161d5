#pragma once
// Simulator: builds the board from the config, runs a lowered program on it, collects stats.
// Data flows one way: config + trace -> program -> board -> stats -> report.
//
// Contract: SystemC elaborates once per process, so one Simulator runs one program per
// process (`tpusim run`, `tpusim bench peak` and each system test are one process each).
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "tpusim/arch/core/core_stats.h"
#include "tpusim/arch/memory/hbm_calibrated.h"
#include "tpusim/config/tpu_config.h"
#include "tpusim/program/program.h"
#include "tpusim/sim/kernel_attribution.h"
#include "tpusim/stats/timeline.h"

namespace tpusim {

struct RunOptions {
    bool timeline = false;
    bool progress = true;  // a progress line on stderr for runs longer than a few seconds
    // Stop with CycleBudgetExceeded once simulated time passes this many cycles (0: no limit).
    // The check comes between simulation slices, so a run may overshoot by one slice.
    Cycle max_cycles = 0;
    // SPMD symmetry (tpusim/sim/symmetry.h): simulate one representative chip when the
    // program allows it; false simulates every core (--no-symmetry).
    bool symmetry = true;
    // The HBM calibration may be read from and written to the on-disk cache
    // (HbmCalibrationCache, docs/hbm.md); false measures it (`run --no-cache`).
    bool hbm_cache = true;
};

// Thrown by Simulator::run when RunOptions::max_cycles is reached before the program ends.
class CycleBudgetExceeded : public std::runtime_error {
 public:
    using std::runtime_error::runtime_error;
};

// SPMD symmetry over replica groups found, while it ran, that the groups' collectives of one op
// did not end at one cycle (docs/pods.md): the simulated chip does not stand for the others,
// and the run must be simulated again with every core (a fresh process: SystemC elaborates one
// board). what(): which collective, and where.
class SymmetryBroken : public std::runtime_error {
 public:
    using std::runtime_error::runtime_error;
};

struct OpResult {
    std::string id;
    OpKind kind = OpKind::Matmul;
    Cycle start_cycle = 0, end_cycle = 0;
    Cycle busy[kUnitCount] = {0, 0, 0, 0, 0};  // summed over cores, by Unit
    double flops = 0;                          // useful FLOPs (MXU and VPU), all cores
    Bytes hbm_bytes = 0;                       // all cores
    std::string bottleneck;  // compute, hbm, vector, ici, host, latency, fused into X
    std::int64_t cores_ran = 0;
    std::int64_t trips = 1;  // times the op ran per core (its loop's trips; 1 outside loops)
};

struct RunResult {
    Cycle cycles = 0;
    double seconds = 0;
    double flops = 0;      // useful FLOPs over all cores (matmuls and vector ops)
    double mxu_flops = 0;  // the matmuls' share: what achieved_bf16_tflops counts
    double achieved_tflops = 0;
    double peak_tflops = 0;      // derived peak of the cores the program ran on
    double mxu_utilization = 0;  // achieved / peak over those cores
    // Fraction of the run each unit was busy, averaged over the cores that ran (MXU: over
    // their MXUs); HBM: bytes over the peak bandwidth of those cores' shares of their chips;
    // padding: array MACs that were padding.
    struct Busy {
        double mxu = 0, vpu = 0, dma = 0, ici = 0, host = 0, hbm = 0;
        double mxu_padding_waste = 0;
    } busy;
    Bytes hbm_bytes_read = 0, hbm_bytes_written = 0;
    double hbm_gbps_per_chip = 0;  // average over the chips that ran the program
    Bytes ici_bytes = 0;
    std::int64_t cores = 0, chips = 0;
    std::vector<OpResult> ops;
    // The ops as kernels (an op with the ops fused into it) and each one's share of `cycles`
    // on the critical path of the core that ends last (include/tpusim/sim/kernel_attribution.h).
    KernelAttribution kernels;
    nlohmann::json stats;  // the full stats tree
    // SPMD symmetry: whether one representative chip (or block of chips) stood for the board,
    // how many cores were simulated, and why every core was simulated when it did not. When the
    // unit is a block of several chips: its size in chips and the simulated cores' ids (empty
    // for chip 0 alone, whose cores are 0 .. simulated_cores - 1).
    struct Symmetry {
        bool used = false;
        std::int64_t simulated_cores = 0;
        std::string reason;
        std::int64_t unit_chips_x = 0, unit_chips_y = 0;
        std::vector<std::int64_t> cores;
    } symmetry;
    double wall_seconds = 0;
    // Loop reuse (docs/program.md, "Loops"): the program's loops were lowered with fewer trips
    // than they run. `refused`: the trips left out could not be charged exactly (the reason);
    // the figures are then those of the short program and the run must be repeated with every
    // trip. Else `charged_trips` trips were charged without being simulated.
    struct LoopReuseResult {
        bool tried = false;
        std::string refused;
        std::int64_t simulated_trips = 0, charged_trips = 0;
    } loop_reuse;
};

class Board;

class Simulator {
 public:
    Simulator(const TpuConfig& cfg, RunOptions opts);
    ~Simulator();
    // Throws SymmetryBroken (see above) when SPMD symmetry over replica groups turns out not
    // to hold; never with opts.symmetry false.
    RunResult run(const Program& program);
    // Why loop reuse cannot watch the loops `program` lowers short, known before the run (a
    // loop whose trips lower differently, or a simulated core without it): lower it again
    // with every trip instead (no second board needed). Empty: run() may still refuse after
    // the run, from what the trips did (RunResult::loop_reuse).
    std::string reuse_refusal(const Program& program) const;
    // Elaborates the board (without running it) and lists its module hierarchy, one module,
    // port, export or socket a line: "board.chip0.core1.dma_out  (sc_port)". Contract: instead of
    // run(), not before it.
    std::string module_tree();
    Timeline& timeline() { return timeline_; }

 private:
    const TpuConfig& cfg_;
    RunOptions opts_;
    Timeline timeline_;
    HbmCalibrationCache hbm_calibrations_;  // measured once, shared by every chip
    std::unique_ptr<Board> board_;
};

// The `tpusim run` report object (keys per docs/design.md "Interfaces"), without the header and
// config that make_report adds.
nlohmann::json run_report_body(const RunResult& r, const TpuConfig& cfg);
// The reports' "symmetry" object: {"used", "simulated_cores", "reason"}, and with a unit of
// several chips "unit_chips": [x, y] and "simulated_core_ids".
nlohmann::json symmetry_json(const RunResult::Symmetry& s);
// Each unit's busy share of `cycles` on `cores` cores (MXU: over their MXUs; HBM: bytes over
// the peak bandwidth of those cores' shares of their chips).
struct UnitShares {
    double mxu = 0, hbm = 0, vpu = 0, ici = 0, host = 0;
};
UnitShares unit_shares(const Cycle busy[kUnitCount], Bytes hbm_bytes, Cycle cycles,  // by Unit
                       std::int64_t cores, const TpuConfig& cfg);
// The bottleneck rule, the same for an op and a run: when the units' busy shares add up to
// less than one half, the time went mostly to waiting (dependencies, pipeline fill, issue)
// and the verdict is "latency"; otherwise the busiest unit decides: compute (MXU), hbm,
// vector (VPU), ici or host.
std::string bottleneck_of(double mxu, double hbm, double vpu, double ici, double host);
std::string bottleneck_of(const UnitShares& s);
// bottleneck_of over the run's utilization figures.
std::string run_bottleneck(const RunResult& r);
// Text summary for the terminal; the kernel table lists the `top` kernels with the most self
// time.
std::string run_summary_text(const RunResult& r, const TpuConfig& cfg, const std::string& name,
                             std::size_t top = 12);
// The report's "kernels" (rows as docs/program.md describes them, largest self time first) and
// "kernel_attribution" {"method", "core", "run_cycles", "sum_cycles"}, added to `j`.
void kernels_json(const RunResult& r, const TpuConfig& cfg, nlohmann::json& j);
// A kernel's TFLOPS over its self time (all cores' FLOPs); 0 when its self time is 0.
double kernel_tflops(const KernelRow& k, double clock_mhz);
// A name for a stretch of the critical path: its kernel's, or its loop's kernels'.
std::string kernel_path_name(const RunResult& r, const PathSegment& seg);
// Per-op CSV: id, kind, start/end cycles, busy cycles per unit, bottleneck, trips, and the
// op's kernel (its root op's id) and self cycles (a root's is its kernel's; a fused op's 0).
std::string ops_csv(const RunResult& r);

}  // namespace tpusim
