#pragma once
// A whole training run: the measured device steps (step_program.h) composed with the host and
// input pipeline (input_pipeline.h) into epoch times, a time split, a verdict and what-ifs.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tpusim/config/tpu_config.h"
#include "tpusim/train/input_pipeline.h"
#include "tpusim/train/run_description.h"
#include "tpusim/train/step_program.h"

namespace tpusim {

struct TrainInputs {
    RunDescription run;                   // infeed_bytes_per_sample resolved
    std::size_t program_ops = 0;          // ops of the step program (compile time)
    std::int64_t cores = 0;               // cores the step program runs on
    std::vector<StepMeasure> steps;       // simulated steps, in run order
    std::vector<StepMeasure> eval_steps;  // simulated eval steps, in run order (if any)
    std::size_t eval_program_ops = 0;
    bool reuse = true;  // steps past the simulated ones repeat the last one
};

struct WhatIf {
    std::string change;
    double epoch_seconds = 0;
    double change_fraction = 0;  // (what-if - now) / now, of the steady epoch
};

struct TrainResult {
    PipelineResult pipeline;
    HostTiming host;
    double clock_mhz = 0;
    std::int64_t steps = 0, reused_steps = 0, simulated_steps = 0;
    Cycle exposed_ici = 0;  // summed over the run's training steps
    std::int64_t reused_eval_steps = 0, simulated_eval_steps = 0;
    double mxu_busy_fraction = 0;     // over the last epoch, of every MXU of the cores
    double mxu_busy_first_epoch = 0;  // the same over the first epoch
    std::string verdict;
    std::vector<WhatIf> what_ifs;  // the verdict's lever first
};

TrainResult run_training(const TpuConfig& cfg, const TrainInputs& in);

nlohmann::json train_report_body(const TrainResult& r, const TrainInputs& in);
std::string train_summary_text(const TrainResult& r, const TrainInputs& in);
// Chrome trace-event JSON (ui.perfetto.dev) of the run's first steps: one lane each for the
// input pipeline (batch production), the infeed and the board's steps (with their waits).
nlohmann::json train_timeline_json(const TrainResult& r);

}  // namespace tpusim
