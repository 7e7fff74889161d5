#pragma once
// `tpusim sweep`: a spec (docs/sweep.md) expands to points; each point is one `tpusim run` in a
// worker process of its own (SystemC elaborates once per process); results go to SQLite.
//   sweep_spec.cpp: spec -> points (located errors, exit 2 for a bad spec)
//   sweep_db.cpp:   the database (schema, one transaction per point, lock, merge, CSV)
//   sweep_pool.cpp: the worker processes (fork/exec, wait4 for wall time and peak RSS)
//   sweep_cmd.cpp:  the command (resume, shards, progress)
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace tpusim::cli::sweep {

// How a workload's trace is obtained. Paths and generator arguments are resolved against the
// spec's folder; "{param}" in them is replaced by the point's workload parameter.
struct Workload {
    std::string name;
    std::string trace, hlo;             // exactly one of trace / hlo / generate
    std::vector<std::string> generate;  // argv; "{output}" is the trace file to write
    std::string run;  // a train run description: each point is `tpusim train --run` (empty: run)
    nlohmann::json params = nlohmann::json::object();  // defaults of the workload parameters
};

// One simulation: a base config file, overrides in order, and a workload with its parameters.
struct Point {
    std::int64_t index = 0;
    std::string base;  // config file, absolute
    std::vector<std::pair<std::string, nlohmann::json>> sets;
    std::size_t workload = 0;                          // into Spec::workloads
    nlohmann::json params = nlohmann::json::object();  // workload parameters in effect
    nlohmann::json coords = nlohmann::json::object();  // axis name -> value (for tables, plots)
    std::string label;                                 // "bert_layer mxu.rows=128 ..."
};

struct Spec {
    std::string path, dir;  // the spec file and its folder
    std::string name;       // the sweep id
    std::string hash;       // of the canonical spec text: a resume must see the same spec
    nlohmann::json canonical;
    std::vector<Workload> workloads;
    std::vector<Point> points;
};

// The most points a spec may expand to (docs/sweep.md).
inline constexpr std::size_t kMaxSweepPoints = 1000000;

// Reads and expands a spec. Throws InputError(spec path, JSON pointer, what was expected).
Spec load_spec(const std::string& path);
// The same from the spec's text, without its file: `path` names it in errors, `dir` is the
// folder its relative paths are resolved against. `max_points` lowers the expansion's cap
// (the fuzz harness, tests/fuzz/sweep_spec_fuzz.cpp).
Spec parse_spec(const std::string& text, const std::string& path, const std::string& dir,
                std::size_t max_points = kMaxSweepPoints);

// The program a point runs: "--trace F" or "--hlo F" after parameter substitution; for a
// generated workload, the generator's argv (with "{output}" left in).
std::string substitute(const std::string& text, const nlohmann::json& params);
std::string workload_source(const Spec& spec, const Point& p);
// A train workload's run description after substitution, relative to the spec's folder;
// empty for a `tpusim run` workload.
std::string run_source(const Spec& spec, const Point& p);

// 64-bit FNV-1a as 16 hex digits: config hashes and spec hashes (stable across machines).
std::string fnv1a_hex(const std::string& text);

// Exit status of a sweep that ran every point of its shard and recorded them, some failed
// (0: every point ok; 1: interrupted or incomplete; 2: bad input, before any point runs).
inline constexpr int kSweepPointsFailed = 3;

// --- database -------------------------------------------------------------------------------

struct PointResult {
    std::string status;  // "ok" or "failed"
    std::string error;
    std::string config_json;  // the effective config (empty when it did not load)
    nlohmann::json report;    // the run report (null for a failed point)
    double wall_seconds = 0;
    double peak_rss_mib = 0;
};

class Database {
 public:
    // Opens (creating) the database and takes the driver lock: a second driver on the same
    // file gets InputError. Unwritable paths are InputErrors too. `read_only`: no lock, no
    // writes (CSV export beside a running driver).
    explicit Database(const std::string& path, bool read_only = false);
    ~Database();
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    // Registers the sweep; throws InputError when the file holds a different spec under the
    // same sweep id. Returns the point indices already recorded.
    std::set<std::int64_t> begin_sweep(const Spec& spec);
    // One transaction: the point's row and its ops rows, or nothing.
    void record(const Spec& spec, const Point& p, const PointResult& r);
    // Merges another database's sweeps, points and ops (INSERT OR IGNORE: each point once).
    // Returns the number of points added.
    std::int64_t merge_from(const std::string& other);
    // The points table as CSV, columns in a fixed order (see docs/sweep.md).
    std::string csv(const std::string& sweep_id) const;
    // Sweep ids with their declared and recorded point counts.
    std::vector<std::tuple<std::string, std::int64_t, std::int64_t>> summary() const;
    // Indices of the sweep's points recorded with a status other than "ok".
    std::vector<std::int64_t> failed_points(const std::string& sweep_id) const;

    const std::string& path() const { return path_; }

 private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::string path_;
};

// --- worker processes -----------------------------------------------------------------------

struct Job {
    std::vector<std::string> argv;
    std::string log_path;  // stdout and stderr of the child
    std::string cwd;       // empty: the driver's
};

struct JobResult {
    int exit_status = -1;  // exit code, or -1 when killed by a signal
    int signal = 0;
    double wall_seconds = 0;
    double peak_rss_mib = 0;
};

// Runs jobs on at most `workers` child processes. `on_done` is called in the driver, in
// completion order. Stops starting new jobs once `stop()` returns true; children still running
// then get SIGTERM. Children die with the driver (PR_SET_PDEATHSIG).
void run_jobs(const std::vector<Job>& jobs, int workers,
              const std::function<void(std::size_t, const JobResult&)>& on_done,
              const std::function<bool()>& stop);

// The last non-empty line of a file (a failed run's error line).
std::string last_line(const std::string& path);

}  // namespace tpusim::cli::sweep
