#pragma once
// A training run (`tpusim train --run RUN.json`, docs/train.md): the dataset, the batch, the
// epochs and the workload's side of the input pipeline. The machine's side (vCPUs, bandwidths,
// dispatch, compile) is the config's `host` section; the step program is a trace or HLO file.
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace tpusim {

// Where the pipeline reads a sample's stored record from.
enum class SampleSource { Memory, Disk, Gcs };

// Evaluation passes inside the run (Keras `validation_data`/`validation_split` with
// `validation_freq`, a custom loop's "validate every N steps", PyTorch Lightning's
// `val_check_interval`): a forward-only step program run over the validation set.
struct EvalDescription {
    std::int64_t samples = 0;       // validation samples per pass; 0: no evaluation
    std::int64_t global_batch = 0;  // 0: the training batch
    std::int64_t every_steps = 0;   // > 0: after every N-th training step of the run
    std::int64_t every_epochs = 1;  // (every_steps == 0) at the end of every N-th epoch
    bool drop_remainder = false;    // false: the last partial batch is padded
    // true: batch j + 1 is infed while eval step j runs; false: only after it ends (TF 1.x
    // keras_to_tpu_model's test_loop: one session.run per batch, feed and step in turn).
    bool pipelined = true;
    std::string trace;  // the eval step program (relative to the run file), or ""
    std::int64_t infeed_bytes_per_sample = 0;  // 0: the eval trace's infeed, else training's
    double preprocess_ms_per_sample = -1;      // < 0: the training pipeline's

    bool enabled() const { return samples > 0; }
    std::int64_t steps() const;  // eval steps per pass
    std::int64_t samples_in_step(std::int64_t i) const;
};

// Checkpoints the run saves (Keras ModelCheckpoint, a custom loop's save after validation,
// TPUEstimator's save_checkpoints_steps): each copies `bytes` of variables from the board to
// the host, and training waits until it is done (the callbacks run between steps).
struct CheckpointDescription {
    std::int64_t bytes = 0;         // per save; 0: the run saves none
    std::int64_t every_steps = 0;   // > 0: after every N-th training step of the run
    std::int64_t every_epochs = 0;  // > 0: at the end of every N-th epoch
    bool after_eval = false;        // after every evaluation pass

    bool enabled() const { return bytes > 0; }
};

// The variables' one-off transfers between the host and the board: before the first training
// step (the framework sets the initial or pretrained weights on the device, after the first
// compile) and after the last one (it copies them back). `bytes`: one replica.
struct WeightsDescription {
    std::int64_t bytes = 0;  // 0: the run moves none
    bool upload = true;
    bool download = true;

    bool enabled() const { return bytes > 0; }
};

struct RunDescription {
    std::string path;  // the file, for error messages
    std::string name;
    std::string description;
    std::int64_t samples = 0;       // training samples per epoch
    std::int64_t global_batch = 0;  // samples per step over the whole board
    std::int64_t epochs = 1;
    // false: the last, partial batch is padded to a full one (the same program runs on it, as
    // TPUEstimator and Keras on TPU do); true: it is dropped.
    bool drop_remainder = false;
    // XLA programs the framework compiles during the first epoch, each costing the config's
    // compile time: the training step, and e.g. a partial last batch that is not padded
    // (Keras on TPU recompiles for it) or a validation step. All are charged before step 1.
    std::int64_t compiled_programs = 1;
    std::int64_t infeed_bytes_per_sample = 0;  // one sample's input tensors; 0: from the trace
    std::int64_t stored_bytes_per_sample = 0;  // the record read from `source` per sample
    SampleSource source = SampleSource::Memory;
    // CPU time to turn one record into a sample (decode, augment, tokenise) on one vCPU.
    double preprocess_ms_per_sample = 0;
    std::int64_t parallel_calls = 1;    // tf.data map num_parallel_calls / DataLoader workers
    std::int64_t prefetch_batches = 1;  // batches the host may hold ready ahead of the device
    // Dataset cache: the first epoch preprocesses and fills it; later epochs read the cached
    // samples at `cached_ms_per_sample` of CPU each and from `cache_source`.
    bool cache = false;
    double cached_ms_per_sample = 0;
    SampleSource cache_source = SampleSource::Memory;
    std::int64_t cached_bytes_per_sample = -1;   // read from cache_source; -1: stored bytes
    std::map<std::string, std::string> sources;  // key -> where its value comes from
    EvalDescription eval;
    CheckpointDescription checkpoint;
    WeightsDescription weights;

    // Whether an evaluation pass follows step `k` (0-based) of epoch `epoch`.
    bool eval_after(std::int64_t epoch, std::int64_t k) const;
    // Evaluation passes in epoch `epoch`.
    std::int64_t evals_in_epoch(std::int64_t epoch) const;
    // Whether a checkpoint is saved after step `k` of epoch `epoch` (after its evaluation
    // pass, if one follows it): one save however many of the triggers fall on the step.
    bool checkpoint_after(std::int64_t epoch, std::int64_t k) const;

    std::int64_t steps_per_epoch() const;
    // Samples in step `i` of an epoch (the last may be partial; padded to global_batch).
    std::int64_t samples_in_step(std::int64_t i) const;
};

// Reads and validates a run description. Throws InputError(path, JSON pointer, what was
// expected) for a missing or unknown key, a wrong type or an out-of-range value.
RunDescription read_run_description(const std::string& path);
RunDescription parse_run_description(const nlohmann::json& j, const std::string& path);

const char* source_name(SampleSource s);

}  // namespace tpusim
