// `tpusim sweep SPEC`: runs a spec's points in worker processes into SQLite (docs/sweep.md);
// `tpusim sweep merge`: joins shard databases.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <thread>

#include "common.h"
#include "sweep.h"
#include "tpusim/common/error.h"
#include "tpusim/common/json_io.h"
#include "tpusim/common/progress.h"
#include "tpusim/common/text_output.h"
#include "tpusim/common/threads.h"
#include "tpusim/config/tpu_config.h"

namespace tpusim::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace sweep;

volatile std::sig_atomic_t g_interrupted = 0;
void on_signal(int) { g_interrupted = 1; }

struct SweepOptions {
    std::string spec, db, csv, shard, sweep_id;
    int jobs = 0;
    bool resume = false, quiet = false, list = false, keep_going = false;
    std::string merge_db;
    std::vector<std::string> merge_inputs;
};

std::string self_exe() {
    std::error_code ec;
    const auto p = fs::read_symlink("/proc/self/exe", ec);
    if (ec) throw std::runtime_error("cannot find the tpusim binary: " + ec.message());
    return p.string();
}

std::pair<std::int64_t, std::int64_t> parse_shard(const std::string& s) {
    const auto slash = s.find('/');
    std::int64_t i = -1, n = 0;
    try {
        if (slash != std::string::npos) {
            std::size_t a = 0, b = 0;
            i = std::stoll(s.substr(0, slash), &a);
            n = std::stoll(s.substr(slash + 1), &b);
            if (a != slash || b != s.size() - slash - 1) n = 0;
        }
    } catch (const std::exception&) {
        n = 0;
    }
    if (n < 1 || i < 0 || i >= n)
        throw InputError("--shard", s, "expected I/N with 0 <= I < N (shard I of N, from 0)");
    return {i, n};
}

std::string signal_text(int sig) {
    const char* name = sigabbrev_np(sig);
    return fmt::format("signal {} (SIG{})", sig, name ? name : "?");
}

// A worker killed by one of these was stopped from outside (the driver, a user, the OOM
// killer): the point has no result yet and --resume runs it again. Any other signal is the
// point's own crash and is recorded as its failure.
bool external_kill(int sig) { return sig == SIGKILL || sig == SIGTERM || sig == SIGINT; }

// Before any point runs: every workload file the shard's points name exists, and every
// point's config loads (a value the config rejects, an 8192 x 8192 MXU, is the spec's error,
// unless keep_going: then the point is recorded as failed and the others run).
void check_points(const Spec& spec, std::int64_t shard, std::int64_t shards, bool keep_going) {
    std::set<std::string> seen_files, seen_configs;
    for (const auto& p : spec.points) {
        if (p.index % shards != shard) continue;
        const Workload& w = spec.workloads[p.workload];
        std::vector<std::pair<std::string, std::string>> files;  // key, path
        if (!w.trace.empty() || !w.hlo.empty())
            files.emplace_back(w.trace.empty() ? "hlo" : "trace",
                               substitute(w.trace.empty() ? w.hlo : w.trace, p.params));
        if (!w.run.empty()) files.emplace_back("run", run_source(spec, p));
        for (const auto& [key, rel] : files) {
            const fs::path f = (fs::path(spec.dir) / rel).lexically_normal();
            if (!seen_files.insert(f.string()).second) continue;
            std::error_code ec;
            if (!fs::is_regular_file(f, ec))
                throw InputError(
                    spec.path, fmt::format("/workloads/{}/{}", p.workload, key),
                    fmt::format("names {}, which {} (point {}: {})", f.string(),
                                fs::exists(f, ec) ? "is not a regular file" : "does not exist",
                                p.index, p.label));
        }
        if (keep_going) continue;
        std::vector<std::string> sets;
        for (const auto& [k, v] : p.sets) sets.push_back(k + "=" + v.dump());
        std::string key = p.base;
        for (const auto& x : sets) key += "\n" + x;
        if (!seen_configs.insert(key).second) continue;
        try {
            (void)load_config(p.base, sets);
        } catch (const InputError& e) {
            throw InputError(spec.path, fmt::format("point {} ({})", p.index, p.label),
                             fmt::format("its config is invalid: {} (every point's config is "
                                         "checked before any runs; --keep-going records such "
                                         "points as failed and runs the others)",
                                         e.what()));
        }
    }
}

int run_sweep(const SweepOptions& o) {
    const Spec spec = load_spec(o.spec);
    std::int64_t shard = 0, shards = 1;
    if (!o.shard.empty()) std::tie(shard, shards) = parse_shard(o.shard);
    if (o.list) {
        for (const auto& p : spec.points) {
            if (p.index % shards != shard) continue;
            std::cout << fmt::format("{}\t{}\n", p.index, p.label);
        }
        return 0;
    }
    check_points(spec, shard, shards, o.keep_going);
    const int jobs = o.jobs > 0 ? o.jobs : std::max(1u, std::thread::hardware_concurrency());
    // Each worker may keep cores / jobs threads busy (TPUSIM_THREADS; the HBM calibration runs
    // side by side when it may), so that N workers use the machine's cores, not N times them.
    // A value the user set is kept (and checked here, before any point runs).
    const int threads = worker_threads();
    if (std::getenv("TPUSIM_THREADS") == nullptr)
        setenv("TPUSIM_THREADS", std::to_string(std::max(1, threads / jobs)).c_str(), 1);
    const std::string db_path = o.db.empty() ? spec.name + ".sqlite" : o.db;
    Database db(db_path);
    const auto done = db.begin_sweep(spec);
    std::vector<const Point*> todo;
    std::int64_t in_shard = 0, done_in_shard = 0;
    for (const auto& p : spec.points) {
        if (p.index % shards != shard) continue;
        ++in_shard;
        if (done.count(p.index)) {
            ++done_in_shard;
        } else {
            todo.push_back(&p);
        }
    }
    if (!done.empty() && !o.resume)
        throw InputError(db_path, "",
                         fmt::format("already holds {} points of sweep \"{}\": add --resume to "
                                     "finish it, or give another --db",
                                     done.size(), spec.name));

    // Per-point files live beside the database; only the lock holder uses the folder.
    const fs::path work = fs::absolute(db_path + ".work");  // generators run in the spec folder
    std::error_code ec;
    fs::remove_all(work, ec);
    fs::create_directories(work, ec);
    if (ec) throw InputError(work.string(), "", "cannot create the work folder: " + ec.message());

    struct sigaction sa {};
    sa.sa_handler = on_signal;  // no SA_RESTART: wait4 returns so the pool sees the stop
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);

    const auto t0 = std::chrono::steady_clock::now();
    ProgressLine progress(!o.quiet);
    std::int64_t ok = 0, failed = 0, lost = 0;
    const std::int64_t total = static_cast<std::int64_t>(todo.size());
    auto record = [&](const Point& p, const PointResult& r) {
        db.record(spec, p, r);
        (r.status == "ok" ? ok : failed) += 1;
        progress.update(fmt::format("sweep {}: {}/{} points ({} failed)", spec.name,
                                    ok + failed + done_in_shard, in_shard, failed),
                        total ? double(ok + failed) / double(total) : 1.0);
    };

    // Generated workloads: each distinct generator command runs once, before the points.
    std::map<std::string, std::string> gen_output, gen_error;  // command -> trace / error
    std::vector<Job> gen_jobs;
    std::vector<std::string> gen_keys;
    for (const Point* p : todo) {
        const Workload& w = spec.workloads[p->workload];
        if (w.generate.empty()) continue;
        const std::string key = workload_source(spec, *p);
        if (gen_output.count(key)) continue;
        const std::string out = (work / fmt::format("gen{}.json", gen_jobs.size())).string();
        gen_output[key] = out;
        json params = p->params;
        params["output"] = out;
        Job j;
        for (const auto& a : w.generate) j.argv.push_back(substitute(a, params));
        j.log_path = out + ".log";
        j.cwd = spec.dir;
        gen_jobs.push_back(std::move(j));
        gen_keys.push_back(key);
    }
    run_jobs(
        gen_jobs, jobs,
        [&](std::size_t i, const JobResult& r) {
            if (r.exit_status != 0)
                gen_error[gen_keys[i]] = fmt::format(
                    "workload generator failed ({}): {}",
                    r.signal ? signal_text(r.signal) : fmt::format("exit status {}", r.exit_status),
                    last_line(gen_jobs[i].log_path));
        },
        [] { return g_interrupted != 0; });

    // Points: the config is checked here (a bad value fails the point without a process).
    const std::string exe = self_exe();
    std::vector<Job> run_jobs_list;
    std::vector<const Point*> run_points;
    std::vector<std::string> configs;
    for (const Point* p : todo) {
        if (g_interrupted) break;
        std::vector<std::string> sets;
        for (const auto& [k, v] : p->sets) sets.push_back(k + "=" + v.dump());
        PointResult fail;
        fail.status = "failed";
        std::string config_json;
        try {
            config_json = config_to_json(load_config(p->base, sets)).dump();
        } catch (const InputError& e) {
            fail.error = std::string("error: ") + e.what();
            record(*p, fail);
            continue;
        }
        const Workload& w = spec.workloads[p->workload];
        std::string program_flag = "--trace", program;
        if (!w.generate.empty()) {
            const std::string key = workload_source(spec, *p);
            if (gen_error.count(key) || g_interrupted) {
                fail.config_json = config_json;
                fail.error = gen_error.count(key) ? gen_error[key] : "interrupted";
                if (!g_interrupted) record(*p, fail);
                continue;
            }
            program = gen_output[key];
        } else {
            if (!w.hlo.empty()) program_flag = "--hlo";
            program =
                (fs::path(spec.dir) / substitute(w.trace.empty() ? w.hlo : w.trace, p->params))
                    .lexically_normal()
                    .string();
        }
        Job j;
        // A train workload: the same program as the step of `tpusim train --run`.
        j.argv = {exe, w.run.empty() ? "run" : "train", "--config", p->base};
        for (const auto& s : sets) j.argv.insert(j.argv.end(), {"--set", s});
        if (!w.run.empty())
            j.argv.insert(
                j.argv.end(),
                {"--run", (fs::path(spec.dir) / run_source(spec, *p)).lexically_normal().string()});
        const std::string report = (work / fmt::format("p{}.json", p->index)).string();
        j.argv.insert(j.argv.end(), {program_flag, program, "--report", report, "--quiet"});
        j.log_path = (work / fmt::format("p{}.log", p->index)).string();
        run_jobs_list.push_back(std::move(j));
        run_points.push_back(p);
        configs.push_back(std::move(config_json));
    }
    run_jobs(
        run_jobs_list, jobs,
        [&](std::size_t i, const JobResult& r) {
            const Point& p = *run_points[i];
            if (r.signal && external_kill(r.signal)) {
                ++lost;
                return;
            }
            PointResult pr;
            pr.config_json = configs[i];
            pr.wall_seconds = r.wall_seconds;
            pr.peak_rss_mib = r.peak_rss_mib;
            const std::string report = (work / fmt::format("p{}.json", p.index)).string();
            if (r.exit_status == 0) {
                pr.status = "ok";
                try {
                    pr.report = read_json_file(report);
                } catch (const InputError& e) {  // a run that says it succeeded but left no report
                    pr.status = "failed";
                    pr.error = std::string("no readable report: ") + e.what();
                }
            } else {
                pr.status = "failed";
                pr.error = r.signal ? "crashed: " + signal_text(r.signal)
                                    : last_line(run_jobs_list[i].log_path);
            }
            record(p, pr);
            fs::remove(report, ec);
            fs::remove(run_jobs_list[i].log_path, ec);
        },
        [] { return g_interrupted != 0; });
    progress.finish();
    fs::remove_all(work, ec);

    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::int64_t recorded = done_in_shard + ok + failed;
    // With the CSV on stdout the summary goes to stderr, so that stdout is the CSV alone.
    (o.csv == "-" ? std::cerr : std::cout) << fmt::format(
        "sweep {}{}: {} of {} points recorded ({} run now: {} ok, {} failed) in {:.1f} s with "
        "{} workers -> {}\n",
        spec.name, shards > 1 ? fmt::format(" shard {}/{}", shard, shards) : "", recorded, in_shard,
        ok + failed, ok, failed, wall, jobs, db_path);
    if (!o.csv.empty()) write_text(o.csv, db.csv(spec.name), "the CSV file");
    if (g_interrupted || recorded < in_shard) {
        std::cerr << fmt::format(
            "{}: {} points not recorded{}; run the same command with --resume to finish\n",
            g_interrupted ? "interrupted" : "incomplete", in_shard - recorded,
            lost ? fmt::format(" ({} workers killed from outside)", lost) : "");
        return 1;
    }
    // Every point recorded: the shard's outcome is its points' (this run's and, with
    // --resume, the earlier ones'), so that a job chain (Slurm afterok) stops on a failure.
    std::int64_t failed_in_shard = 0;
    for (std::int64_t i : db.failed_points(spec.name))
        if (i % shards == shard) ++failed_in_shard;
    if (failed_in_shard > 0) {
        std::cerr << fmt::format(
            "{} of {} points failed: their error is in the database (sqlite3 {} \"select "
            "point, label, error from points where status != 'ok'\")\n",
            failed_in_shard, in_shard, db_path);
        return kSweepPointsFailed;
    }
    return 0;
}

int export_csv(const SweepOptions& o) {
    if (o.db.empty())
        throw InputError("tpusim sweep", "", "give a SPEC to run, or --db F --csv OUT");
    Database db(o.db, true);
    std::string id = o.sweep_id;
    if (id.empty()) {
        const auto s = db.summary();
        if (s.size() != 1)
            throw InputError(o.db, "",
                             fmt::format("holds {} sweeps: name one with --sweep", s.size()));
        id = std::get<0>(s[0]);
    }
    write_text(o.csv.empty() ? "-" : o.csv, db.csv(id), "the CSV file");
    return 0;
}

}  // namespace

void add_sweep_command(CLI::App& app) {
    const auto o = std::make_shared<SweepOptions>();
    auto* cmd = app.add_subcommand(
        "sweep", "run a sweep spec's points in worker processes into SQLite (docs/sweep.md)");
    cmd->add_option("spec", o->spec, "sweep spec (JSON)");
    cmd->add_option("--db", o->db, "SQLite database (default: <sweep name>.sqlite)");
    cmd->add_option("-j,--jobs", o->jobs, "worker processes (default: the machine's cores)")
        ->check(CLI::Range(1, 4096));
    cmd->add_flag("--resume", o->resume, "finish a sweep this database already holds part of");
    cmd->add_flag("--keep-going", o->keep_going,
                  "record points whose config is invalid as failed and run the others, instead "
                  "of refusing the spec before any point runs");
    cmd->add_option("--shard", o->shard, "run only points with index % N == I (I/N, I from 0)");
    cmd->add_option("--csv", o->csv, "write the points table as CSV here ('-': stdout)");
    cmd->add_option("--sweep", o->sweep_id, "with --csv and no SPEC: which sweep of the database");
    cmd->add_flag("--list", o->list, "print the points (index and label) and run nothing");
    cmd->add_flag("--quiet,-q", o->quiet, "no progress line");
    auto* merge = cmd->add_subcommand("merge", "merge shard databases into one");
    merge->add_option("--db", o->merge_db, "the database to merge into")->required();
    merge->add_option("inputs", o->merge_inputs, "shard databases")->required();
    merge->callback([o] {
        Database db(o->merge_db);
        std::int64_t added = 0;
        for (const auto& in : o->merge_inputs) added += db.merge_from(in);
        std::cout << fmt::format("merged {} points from {} databases into {}\n", added,
                                 o->merge_inputs.size(), o->merge_db);
        bool complete = true;
        for (const auto& [id, total, have] : db.summary()) {
            std::cout << fmt::format("  sweep {}: {} of {} points\n", id, have, total);
            complete = complete && have == total;
        }
        if (!complete) {
            std::cerr << "incomplete: some points are in no input (a shard that did not finish)\n";
            throw CliExit{1};
        }
    });
    cmd->callback([o, cmd, merge] {
        if (merge->parsed()) return;
        (void)cmd;
        const int status = o->spec.empty() ? export_csv(*o) : run_sweep(*o);
        if (status != 0) throw CliExit{status};
    });
}

}  // namespace tpusim::cli
