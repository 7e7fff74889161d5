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
enum class SampleSource { memory, disk, gcs };

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
    SampleSource source = SampleSource::memory;
    // CPU time to turn one record into a sample (decode, augment, tokenise) on one vCPU.
    double preprocess_ms_per_sample = 0;
    std::int64_t parallel_calls = 1;    // tf.data map num_parallel_calls / DataLoader workers
    std::int64_t prefetch_batches = 1;  // batches the host may hold ready ahead of the device
    // Dataset cache: the first epoch preprocesses and fills it; later epochs read the cached
    // samples at `cached_ms_per_sample` of CPU each and from `cache_source`.
    bool cache = false;
    double cached_ms_per_sample = 0;
    SampleSource cache_source = SampleSource::memory;
    std::int64_t cached_bytes_per_sample = -1;   // read from cache_source; -1: stored bytes
    std::map<std::string, std::string> sources;  // key -> where its value comes from

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
