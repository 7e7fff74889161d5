#pragma once
// The host side of a training run, step by step: the input pipeline (read, preprocess on the
// host's vCPUs, prefetch), the infeed of each batch to the board, the per-step launch and the
// XLA compile before the first step. A plain C++ timing class: the device time of each step
// comes from the board simulation and is passed in.
//
// Timing assumptions (docs/train.md):
// - The map stage runs `workers` = min(parallel_calls, vcpus) samples at once; a batch of S
//   samples costs ceil(S / workers) x the per-sample CPU time, and its records are read from
//   storage meanwhile: a batch is ready after the longer of the two.
// - The producer may run ahead of the device by `prefetch` finished batches (plus the one in
//   production); it starts batch k once batch k - prefetch has left the host.
// - Infeed of batch k starts once it is ready, the previous infeed is done and step k - 1 has
//   started (the board holds one batch beyond the running step), so infeed overlaps the step.
// - Step k starts at the latest of: step k - 1's end plus the launch (`dispatch`), its batch
//   infed, and (first step of the run) the end of the compile, which starts with the run.
// - Each epoch restarts the pipeline (a new iterator): its producer starts with the epoch.
#include <cstdint>
#include <functional>
#include <vector>

#include "tpusim/common/types.h"
#include "tpusim/config/board_config.h"
#include "tpusim/train/run_description.h"

namespace tpusim {

// Per-batch and per-step costs in core-clock cycles.
struct HostTiming {
    std::int64_t workers = 1;
    std::int64_t prefetch = 1;
    Cycle cpu_per_sample = 0, cpu_per_sample_cached = 0;
    double read_bytes_per_cycle = 0, cached_read_bytes_per_cycle = 0;  // 0: from memory
    std::int64_t stored_bytes_per_sample = 0, cached_bytes_per_sample = 0;
    bool cache = false;
    Cycle infeed_per_batch = 0;
    Cycle dispatch = 0;
    Cycle compile = 0;

    // Producing a batch of `samples` samples in epoch `epoch` (cached after the first).
    Cycle produce(std::int64_t samples, std::int64_t epoch) const;
};

// Costs from the host config, the run and the step program (`ops`: for the compile time).
HostTiming host_timing(const HostConfig& host, const RunDescription& run, std::int64_t chips,
                       std::size_t ops, double clock_mhz);

struct StepRecord {
    Cycle produce_start = 0, ready = 0, infeed_start = 0, infeed_end = 0, start = 0, end = 0;
    Cycle wait_compile = 0, wait_dispatch = 0, wait_infeed = 0;
};

struct PipelineResult {
    std::vector<Cycle> epoch_cycles;  // per epoch, end of its last step - end of the last epoch
    Cycle total = 0;
    Cycle device = 0, compile = 0, dispatch = 0, infeed_wait = 0;  // summed over the run
    std::int64_t steps = 0;
    std::vector<StepRecord> first_steps;  // the first `keep` steps of the run
};

// device(step) is the device time of the run's step `step` (0-based over all epochs).
PipelineResult simulate_pipeline(const HostTiming& h, const RunDescription& run,
                                 const std::function<Cycle(std::int64_t)>& device,
                                 std::size_t keep = 16);

}  // namespace tpusim
