#include "tpusim/train/run_description.h"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "tpusim/common/error.h"
#include "tpusim/common/json_io.h"

namespace tpusim {

namespace {

using nlohmann::json;

// Reads one object's keys with located errors; every key read is remembered so that a key no
// model reads (a typo) is an error, not a silent no-op.
class ObjectReader {
 public:
    ObjectReader(const json& j, std::string path, std::string ptr)
        : j_(j), path_(std::move(path)), ptr_(std::move(ptr)) {
        if (!j_.is_object())
            throw InputError(path_, ptr_.empty() ? "/" : ptr_,
                             fmt::format("expected an object, got {}", json_type_name(j_)));
    }

    const json* find(const char* key, bool required) {
        seen_.insert(key);
        const auto it = j_.find(key);
        if (it == j_.end()) {
            if (required) throw InputError(path_, at(key), "missing; expected a value here");
            return nullptr;
        }
        return &*it;
    }

    void integer(const char* key, std::int64_t& v, std::int64_t lo, std::int64_t hi,
                 bool required = false) {
        const json* x = find(key, required);
        if (!x) return;
        if (!x->is_number_integer() &&
            !(x->is_number_float() && std::floor(x->get<double>()) == x->get<double>()))
            throw InputError(path_, at(key),
                             fmt::format("expected an integer, got {}", json_type_name(*x)));
        const double d = x->get<double>();
        if (d < static_cast<double>(lo) || d > static_cast<double>(hi))
            throw InputError(
                path_, at(key),
                fmt::format("expected an integer in [{}, {}], got {}", lo, hi, x->dump()));
        v = static_cast<std::int64_t>(d);
    }

    void number(const char* key, double& v, double lo, double hi) {
        const json* x = find(key, false);
        if (!x) return;
        if (!x->is_number())
            throw InputError(path_, at(key),
                             fmt::format("expected a number, got {}", json_type_name(*x)));
        const double d = x->get<double>();
        if (!(d >= lo && d <= hi))
            throw InputError(
                path_, at(key),
                fmt::format("expected a number in [{}, {}], got {}", lo, hi, x->dump()));
        v = d;
    }

    void boolean(const char* key, bool& v) {
        const json* x = find(key, false);
        if (!x) return;
        if (!x->is_boolean())
            throw InputError(path_, at(key),
                             fmt::format("expected true or false, got {}", json_type_name(*x)));
        v = x->get<bool>();
    }

    void string(const char* key, std::string& v, bool required = false) {
        const json* x = find(key, required);
        if (!x) return;
        if (!x->is_string())
            throw InputError(path_, at(key),
                             fmt::format("expected a string, got {}", json_type_name(*x)));
        v = x->get<std::string>();
    }

    void source(const char* key, SampleSource& v) {
        std::string s;
        string(key, s);
        if (s.empty() && !j_.contains(key)) return;
        for (SampleSource c : {SampleSource::Memory, SampleSource::Disk, SampleSource::Gcs}) {
            if (s == source_name(c)) {
                v = c;
                return;
            }
        }
        throw InputError(path_, at(key),
                         fmt::format("expected \"memory\", \"disk\" or \"gcs\", got \"{}\"", s));
    }

    // Calls `f` with a reader of the sub-object `key` (when present).
    void object(const char* key, const std::function<void(ObjectReader&)>& f,
                bool required = false) {
        const json* x = find(key, required);
        if (!x) return;
        ObjectReader sub(*x, path_, at(key));
        f(sub);
        sub.reject_unknown();
    }

    void reject_unknown() const {
        for (const auto& [k, v] : j_.items()) {
            if (!seen_.count(k))
                throw InputError(path_, at(k.c_str()),
                                 "unknown key (docs/train.md lists the run description's keys)");
        }
    }

    std::string at(const std::string& key) const { return json_pointer_child(ptr_, key); }
    const json& value() const { return j_; }

 private:
    const json& j_;
    std::string path_, ptr_;
    std::set<std::string> seen_;
};

constexpr std::int64_t kMaxCount = std::int64_t{1} << 40;
// Steps in a whole run (epochs x steps per epoch). The host model walks every step (about
// 10 ns each, for the run and each what-if): 2^27 steps is ~1,000x a 90-epoch ResNet-50
// training and a few seconds of host-model time.
constexpr std::int64_t kMaxRunSteps = std::int64_t{1} << 27;

}  // namespace

const char* source_name(SampleSource s) {
    switch (s) {
        case SampleSource::Memory:
            return "memory";
        case SampleSource::Disk:
            return "disk";
        case SampleSource::Gcs:
            return "gcs";
    }
    return "?";
}

std::int64_t RunDescription::steps_per_epoch() const {
    return drop_remainder ? samples / global_batch : (samples + global_batch - 1) / global_batch;
}

std::int64_t RunDescription::samples_in_step(std::int64_t i) const {
    const std::int64_t left = samples - i * global_batch;
    return left < global_batch ? left : global_batch;
}

std::int64_t EvalDescription::steps() const {
    if (samples <= 0) return 0;
    return drop_remainder ? samples / global_batch : (samples + global_batch - 1) / global_batch;
}

std::int64_t EvalDescription::samples_in_step(std::int64_t i) const {
    const std::int64_t left = samples - i * global_batch;
    return left < global_batch ? left : global_batch;
}

bool RunDescription::eval_after(std::int64_t epoch, std::int64_t k) const {
    if (!eval.enabled()) return false;
    const std::int64_t per_epoch = steps_per_epoch();
    if (eval.every_steps > 0) return (epoch * per_epoch + k + 1) % eval.every_steps == 0;
    return k == per_epoch - 1 && (epoch + 1) % eval.every_epochs == 0;
}

std::int64_t RunDescription::evals_in_epoch(std::int64_t epoch) const {
    if (!eval.enabled()) return 0;
    const std::int64_t per_epoch = steps_per_epoch();
    if (eval.every_steps > 0)
        return ((epoch + 1) * per_epoch) / eval.every_steps -
               (epoch * per_epoch) / eval.every_steps;
    return (epoch + 1) % eval.every_epochs == 0 ? 1 : 0;
}

bool RunDescription::checkpoint_after(std::int64_t epoch, std::int64_t k) const {
    if (!checkpoint.enabled()) return false;
    const std::int64_t per_epoch = steps_per_epoch();
    const CheckpointDescription& c = checkpoint;
    return (c.every_steps > 0 && (epoch * per_epoch + k + 1) % c.every_steps == 0) ||
           (c.every_epochs > 0 && k == per_epoch - 1 && (epoch + 1) % c.every_epochs == 0) ||
           (c.after_eval && eval_after(epoch, k));
}

RunDescription parse_run_description(const nlohmann::json& j, const std::string& path) {
    RunDescription r;
    r.path = path;
    ObjectReader top(j, path, "");
    std::string format;
    top.string("format", format, true);
    if (format != "tpusim.run")
        throw InputError(path, "/format",
                         fmt::format("expected \"tpusim.run\", got \"{}\"", format));
    std::int64_t version = 0;
    top.integer("version", version, 1, 1, true);
    top.string("name", r.name);
    top.string("description", r.description);
    top.integer("global_batch", r.global_batch, 1, kMaxCount, true);
    top.integer("epochs", r.epochs, 1, 100000);
    top.boolean("drop_remainder", r.drop_remainder);
    top.integer("compiled_programs", r.compiled_programs, 1, 1000);
    top.object(
        "dataset",
        [&](ObjectReader& d) {
            d.integer("samples", r.samples, 1, kMaxCount, true);
            // Absent: taken from the step program's infeed ops (tpusim train).
            d.integer("infeed_bytes_per_sample", r.infeed_bytes_per_sample, 1, kMaxCount);
            r.stored_bytes_per_sample = r.infeed_bytes_per_sample;
            d.integer("stored_bytes_per_sample", r.stored_bytes_per_sample, 0, kMaxCount);
            d.source("source", r.source);
        },
        true);
    top.object("pipeline", [&](ObjectReader& p) {
        p.number("preprocess_ms_per_sample", r.preprocess_ms_per_sample, 0, 1e7);
        p.integer("parallel_calls", r.parallel_calls, 1, 4096);
        p.integer("prefetch_batches", r.prefetch_batches, 1, 4096);
        p.boolean("cache", r.cache);
        p.number("cached_ms_per_sample", r.cached_ms_per_sample, 0, 1e7);
        p.source("cache_source", r.cache_source);
        p.integer("cached_bytes_per_sample", r.cached_bytes_per_sample, 0, kMaxCount);
    });
    top.object("eval", [&](ObjectReader& e) {
        EvalDescription& v = r.eval;
        e.integer("samples", v.samples, 1, kMaxCount, true);
        e.integer("global_batch", v.global_batch, 1, kMaxCount);
        e.integer("every_steps", v.every_steps, 1, kMaxCount);
        if (e.value().contains("every_epochs") && v.every_steps > 0)
            throw InputError(path, "/eval/every_epochs",
                             "given with every_steps; expected one of the two");
        e.integer("every_epochs", v.every_epochs, 1, 100000);
        e.boolean("drop_remainder", v.drop_remainder);
        e.boolean("pipelined", v.pipelined);
        e.string("trace", v.trace);
        e.integer("infeed_bytes_per_sample", v.infeed_bytes_per_sample, 1, kMaxCount);
        e.number("preprocess_ms_per_sample", v.preprocess_ms_per_sample, 0, 1e7);
    });
    top.object("checkpoint", [&](ObjectReader& c) {
        CheckpointDescription& v = r.checkpoint;
        c.integer("bytes", v.bytes, 1, kMaxCount, true);
        c.integer("every_steps", v.every_steps, 1, kMaxCount);
        c.integer("every_epochs", v.every_epochs, 1, 100000);
        c.boolean("after_eval", v.after_eval);
    });
    top.object("weights", [&](ObjectReader& w) {
        WeightsDescription& v = r.weights;
        w.integer("bytes", v.bytes, 1, kMaxCount, true);
        w.boolean("upload", v.upload);
        w.boolean("download", v.download);
    });
    const nlohmann::json* src = top.find("sources", false);
    if (src) {
        const std::string ptr = "/sources";
        if (!src->is_object())
            throw InputError(path, ptr,
                             fmt::format("expected an object of key -> source text, got {}",
                                         json_type_name(*src)));
        for (const auto& [k, v] : src->items()) {
            if (!v.is_string())
                throw InputError(
                    path, json_pointer_child(ptr, k),
                    fmt::format("expected a string naming the source, got {}", json_type_name(v)));
            r.sources[k] = v.get<std::string>();
        }
    }
    top.reject_unknown();
    if (r.drop_remainder && r.samples < r.global_batch)
        throw InputError(path, "/global_batch",
                         fmt::format("larger than the {} samples with drop_remainder: no step "
                                     "would run",
                                     r.samples));
    if (r.eval.enabled()) {
        if (r.eval.global_batch == 0) r.eval.global_batch = r.global_batch;
        if (r.eval.drop_remainder && r.eval.samples < r.eval.global_batch)
            throw InputError(
                path,
                r.eval.global_batch == r.global_batch ? "/eval/samples" : "/eval/global_batch",
                fmt::format("the eval batch of {} is larger than the {} eval "
                            "samples with drop_remainder: no eval step would run",
                            r.eval.global_batch, r.eval.samples));
        if (r.eval.preprocess_ms_per_sample < 0)
            r.eval.preprocess_ms_per_sample = r.preprocess_ms_per_sample;
    }
    const CheckpointDescription& ck = r.checkpoint;
    if (ck.enabled() && ck.every_steps == 0 && ck.every_epochs == 0 && !ck.after_eval)
        throw InputError(path, "/checkpoint",
                         "no save is triggered; expected every_steps, every_epochs or "
                         "after_eval");
    if (r.weights.enabled() && !r.weights.upload && !r.weights.download)
        throw InputError(path, "/weights",
                         "neither upload nor download; expected at least one of them true (or "
                         "no \"weights\")");
    if (r.checkpoint.after_eval && !r.eval.enabled())
        throw InputError(path, "/checkpoint/after_eval",
                         "the run has no evaluation passes (no \"eval\"); expected every_steps "
                         "or every_epochs");
    // epochs <= 10^5 and steps <= 2^40: the product fits in 64 bits.
    const std::int64_t steps = r.steps_per_epoch();
    if (steps * r.epochs > kMaxRunSteps)
        throw InputError(
            path, steps > kMaxRunSteps ? "/dataset/samples" : "/epochs",
            fmt::format("the run has {} steps ({} epochs x {} steps of {} samples); expected "
                        "at most {} (2^27)",
                        steps * r.epochs, r.epochs, steps, r.global_batch, kMaxRunSteps));
    // Eval steps over the run: passes <= run steps <= 2^27 and steps per pass <= 2^40.
    if (r.eval.enabled()) {
        double passes = 0;
        for (std::int64_t e = 0; e < r.epochs; ++e)
            passes += static_cast<double>(r.evals_in_epoch(e));
        const double eval_steps = passes * static_cast<double>(r.eval.steps());
        if (eval_steps > static_cast<double>(kMaxRunSteps))
            throw InputError(path, "/eval/samples",
                             fmt::format("the run has {:.0f} eval steps ({:.0f} passes x {}); "
                                         "expected at most {} (2^27)",
                                         eval_steps, passes, r.eval.steps(), kMaxRunSteps));
    }
    return r;
}

RunDescription read_run_description(const std::string& path) {
    return parse_run_description(read_json_file(path), path);
}

}  // namespace tpusim
