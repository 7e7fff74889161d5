#pragma once
// The step program as `tpusim train` runs it, and the measurement of its steps.
//
// The input pipeline infeeds each batch while the previous step runs (input_pipeline.h), so the
// step program's own infeed ops are served from the board's infeed queue: they are taken out of
// the device program (their consumers inherit their dependencies) and their bytes become the
// pipeline's infeed.
//
// Steps run back to back on the board as a real TPU runs them: the same executable again, with
// the same buffers (one lowering, repeated), and a barrier between steps: on each core the
// first instruction of step k + 1 waits for every instruction of step k that nothing in step
// k waits for. The board is therefore idle at each step boundary, which is what makes a step's
// time a function of the program alone (exact step reuse, docs/train.md).
#include <cstdint>
#include <string>
#include <vector>

#include "tpusim/common/types.h"
#include "tpusim/program/program.h"
#include "tpusim/sim/simulator.h"
#include "tpusim/trace/trace.h"
#include "tpusim/train/run_description.h"

namespace tpusim {

struct StepProgram {
    Trace trace;                    // without its infeed ops
    std::int64_t infeed_bytes = 0;  // the removed infeed ops' bytes, over all their cores
    std::size_t ops = 0;            // ops of the original step program (for the compile)
};

// Throws InputError when the infeed ops' bytes add up to more than 2^63.
StepProgram device_step(const Trace& step);

// What `tpusim train` derives and checks before simulating: the run's infeed (and stored)
// bytes per sample from the step's infeed ops when the run gives none, and a step with device
// work. Throws InputError(run file or `program_path`, place, what was expected).
void resolve_step_inputs(RunDescription& run, const StepProgram& step,
                         const std::string& program_path);

// `n` copies of the lowered step with a barrier between consecutive copies; the copy of op "x"
// in step k is "x@step<k>", its collectives are new instances.
Program repeat_steps(const Program& step, std::int64_t n);
// The lowered programs run in `order` (indices into `programs`; e.g. training steps with an
// evaluation pass between them), with the same barrier between consecutive steps. The
// programs must run on the same cores. repeat_steps(p, n) is sequence_steps({&p}, n zeros).
Program sequence_steps(const std::vector<const Program*>& programs,
                       const std::vector<std::uint8_t>& order);

struct StepMeasure {
    Cycle cycles = 0;       // end of the step's last op - end of the previous step's last op
    Cycle exposed_ici = 0;  // cycles in which only collectives ran (ICI not hidden by compute)
    Cycle mxu_busy = 0;     // MXU busy cycles summed over the cores
    double mxu_flops = 0;   // useful matmul FLOPs, all cores
    bool operator==(const StepMeasure& o) const {
        return cycles == o.cycles && exposed_ici == o.exposed_ici && mxu_busy == o.mxu_busy;
    }
};

// The per-step figures of a run of repeat_steps(step, n).
std::vector<StepMeasure> measure_steps(const RunResult& r, std::int64_t n);

}  // namespace tpusim
