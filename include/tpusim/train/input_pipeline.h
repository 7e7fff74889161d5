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
//   It takes the slowest of: each chip's share over its PCIe link; on a TPU Node, the whole
//   batch through the user VM's network and the runtime's measured transfer path (plus one
//   call's fixed latency).
// - Step k starts at the latest of: step k - 1's end plus the launch (`dispatch`), its batch
//   infed, and (first step of the run) the end of the compile, which starts with the run.
// - An evaluation pass starts when the training step before it ends: a new iterator over the
//   validation set (produced, infed and launched by the same rules, uncached; with
//   `eval.pipelined` false a batch is infed only after the eval step before it ended), then
//   its eval steps; the next training step waits for the pass to end. The training producer keeps
//   running ahead meanwhile (its prefetch buffer stays full).
// - A checkpoint (run.checkpoint) starts when the step before it (and its evaluation pass, if
//   any) ends: the variables cross from one chip to the host by the infeed's path in reverse
//   (PCIe; on a TPU Node also the runtime's transfer path and the network, plus one call's
//   latency); the next training step waits for it. The file write is left to the host's page
//   cache (not charged).
// - The variables' one-off transfers (run.weights) take the checkpoint's path: the upload, host
//   to board, after the compile (Keras on TPU sets the weights once the first program is
//   compiled; the first step waits for both); the download, board to host, after the last
//   step of the run (and its evaluation pass and save), outside every epoch.
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
    Cycle eval_cpu_per_sample = 0;  // eval batches: uncached, read from the dataset's source
    Cycle eval_infeed_per_batch = 0;
    Cycle checkpoint = 0;  // one save: its bytes from the board to the host
    Cycle weights_upload = 0, weights_download = 0;  // run.weights, once each

    // Producing a batch of `samples` samples in epoch `epoch` (cached after the first).
    Cycle produce(std::int64_t samples, std::int64_t epoch) const;
    Cycle produce_eval(std::int64_t samples) const;
};

// Costs from the host config, the run and the step program (`ops`: for the compile time).
HostTiming host_timing(const HostConfig& host, const RunDescription& run, std::int64_t chips,
                       std::size_t ops, double clock_mhz);

struct StepRecord {
    Cycle produce_start = 0, ready = 0, infeed_start = 0, infeed_end = 0, start = 0, end = 0;
    Cycle wait_compile = 0, wait_upload = 0, wait_dispatch = 0, wait_infeed = 0;
    Cycle checkpoint_start = 0, checkpoint_end = 0;  // the save after this step; equal: none
    bool eval = false;                               // a step of an evaluation pass
    std::int64_t index = 0;  // the step's index among its kind (training or eval) in the run
};

struct PipelineResult {
    std::vector<Cycle> epoch_cycles;  // per epoch, end of its last step - end of the last epoch
    Cycle total = 0;
    Cycle device = 0, compile = 0, dispatch = 0, infeed_wait = 0;  // summed over the run
    Cycle eval = 0;        // evaluation passes, end of the step before - end of their last step
    Cycle checkpoint = 0;  // checkpoint saves, summed over the run
    Cycle weights = 0;     // the weights' upload (as the first step waited for it) and download,
                           // which ends the run (it starts at total - HostTiming::weights_download)
    std::int64_t steps = 0, eval_steps = 0, eval_passes = 0, checkpoints = 0;
    std::vector<StepRecord> first_steps;  // the first `keep` steps of the run
};

// device(step) is the device time of the run's training step `step` (0-based over all
// epochs), eval_device(step) that of its eval step `step` (0-based over all passes).
using DeviceTime = std::function<Cycle(std::int64_t)>;
PipelineResult simulate_pipeline(const HostTiming& h, const RunDescription& run,
                                 const DeviceTime& device, const DeviceTime& eval_device,
                                 std::size_t keep = 16);
// A run without evaluation passes.
inline PipelineResult simulate_pipeline(const HostTiming& h, const RunDescription& run,
                                        const DeviceTime& device, std::size_t keep = 16) {
    return simulate_pipeline(
        h, run, device, [](std::int64_t) { return Cycle{0}; }, keep);
}

}  // namespace tpusim
