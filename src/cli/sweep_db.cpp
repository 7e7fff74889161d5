// The sweep database (SQLite, schema in docs/sweep.md). One driver per file: an exclusive
// flock on the database file, released by the kernel when the driver dies however it dies.
// Each point is one transaction (its row and its ops rows), so a kill leaves whole points only.
#include <fcntl.h>
#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include "sweep_db_impl.h"

namespace tpusim::cli::sweep {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Columns every points row has; report figures become further columns as they first appear.
const std::vector<std::pair<const char*, const char*>> kPointColumns = {
    {"sweep_id", "TEXT NOT NULL"},
    {"point", "INTEGER NOT NULL"},
    {"label", "TEXT"},
    {"workload", "TEXT"},
    {"workload_source", "TEXT"},
    {"params_json", "TEXT"},
    {"coords_json", "TEXT"},
    {"config_hash", "TEXT"},
    {"config_json", "TEXT"},
    {"status", "TEXT NOT NULL"},
    {"error", "TEXT"},
    {"stats_json", "TEXT"},
    {"wall_seconds", "REAL"},
    {"peak_rss_mib", "REAL"}};

std::string column_name(const std::string& key) {
    std::string s = key;
    for (auto& ch : s)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return s;
}

// Scalars of a JSON object flattened to columns ("hbm.bytes_read" -> hbm_bytes_read).
void flatten(const json& obj, const std::string& prefix,
             std::vector<std::pair<std::string, json>>& out) {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
        const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
        if (it.value().is_object()) {
            flatten(it.value(), key, out);
        } else if (!it.value().is_array()) {
            out.emplace_back(column_name(key), it.value());
        }
    }
}

const char* sql_type(const json& v) {
    if (v.is_number_float()) return "REAL";
    if (v.is_number() || v.is_boolean()) return "INTEGER";
    return "TEXT";
}

}  // namespace

Database::Database(const std::string& path, bool read_only)
    : impl_(std::make_unique<Impl>()), path_(path) {
    impl_->path = path;
    std::error_code ec;
    if (read_only) {
        if (!fs::is_regular_file(path, ec)) throw InputError(path, "", "no such database file");
        if (sqlite3_open_v2(path.c_str(), &impl_->db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK)
            impl_->fail("cannot open the database");
        sqlite3_busy_timeout(impl_->db, 10000);
        impl_->load_columns("main", "points");
        impl_->load_columns("main", "ops");
        if (impl_->columns["main.points"].empty())
            throw InputError(path, "", "not a tpusim sweep database (no points table)");
        return;
    }
    if (fs::is_directory(path, ec)) throw InputError(path, "", "the database path is a directory");
    const fs::path p(path);
    const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
    if (!fs::is_directory(dir, ec))
        throw InputError(path, "", "cannot write the database: no directory " + dir.string());
    impl_->lock_fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (impl_->lock_fd < 0)
        throw InputError(path, "",
                         fmt::format("cannot write the database: {}", std::strerror(errno)));
    if (flock(impl_->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        close(impl_->lock_fd);
        impl_->lock_fd = -1;
        throw InputError(path, "",
                         "the database is locked by another tpusim sweep driver (one driver per "
                         "database: wait for it to end, or give another --db)");
    }
    if (sqlite3_open_v2(path.c_str(), &impl_->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                        nullptr) != SQLITE_OK)
        impl_->fail("cannot open the database");
    sqlite3_busy_timeout(impl_->db, 10000);
    // A journal directory that cannot be written, or a file that is not SQLite, fails here.
    std::string cols;
    for (const auto& [n, t] : kPointColumns) cols += fmt::format("\"{}\" {}, ", n, t);
    try {
        impl_->exec(
            "CREATE TABLE IF NOT EXISTS sweeps (sweep_id TEXT PRIMARY KEY, spec_hash TEXT NOT "
            "NULL, spec_json TEXT NOT NULL, points_total INTEGER NOT NULL)");
        impl_->exec("CREATE TABLE IF NOT EXISTS points (" + cols +
                    "PRIMARY KEY (sweep_id, point))");
        impl_->exec(
            "CREATE TABLE IF NOT EXISTS ops (sweep_id TEXT NOT NULL, point INTEGER NOT NULL, "
            "op_index INTEGER NOT NULL, PRIMARY KEY (sweep_id, point, op_index))");
    } catch (const InputError& e) {
        throw InputError(path, "", "cannot use the database: " + e.what_only());
    }
    impl_->load_columns("main", "points");
    impl_->load_columns("main", "ops");
}

Database::~Database() = default;

std::set<std::int64_t> Database::begin_sweep(const Spec& spec) {
    sqlite3_stmt* st = impl_->prepare("SELECT spec_hash FROM sweeps WHERE sweep_id = ?");
    impl_->bind(st, 1, spec.name);
    std::string old_hash;
    if (sqlite3_step(st) == SQLITE_ROW)
        old_hash = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (!old_hash.empty() && old_hash != spec.hash)
        throw InputError(path_, "",
                         fmt::format("holds sweep \"{}\" from a different spec (hash {}, this spec "
                                     "{}): rename the sweep (\"name\") or give another --db",
                                     spec.name, old_hash, spec.hash));
    if (old_hash.empty())
        impl_->insert("sweeps", {{"sweep_id", spec.name},
                                 {"spec_hash", spec.hash},
                                 {"spec_json", spec.canonical.dump()},
                                 {"points_total", static_cast<std::int64_t>(spec.points.size())}});
    std::set<std::int64_t> done;
    st = impl_->prepare("SELECT point FROM points WHERE sweep_id = ?");
    impl_->bind(st, 1, spec.name);
    while (sqlite3_step(st) == SQLITE_ROW) done.insert(sqlite3_column_int64(st, 0));
    sqlite3_finalize(st);
    return done;
}

void Database::record(const Spec& spec, const Point& p, const PointResult& r) {
    std::vector<std::pair<std::string, json>> row = {
        {"sweep_id", spec.name},
        {"point", p.index},
        {"label", p.label},
        {"workload", spec.workloads[p.workload].name},
        {"workload_source", workload_source(spec, p) + (spec.workloads[p.workload].run.empty()
                                                            ? std::string()
                                                            : " --run " + run_source(spec, p))},
        {"params_json", p.params.dump()},
        {"coords_json", p.coords.dump()},
        {"config_hash", r.config_json.empty() ? json() : json(fnv1a_hex(r.config_json))},
        {"config_json", r.config_json.empty() ? json() : json(r.config_json)},
        {"status", r.status},
        {"error", r.error.empty() ? json() : json(r.error)},
        {"stats_json", r.report.contains("stats") ? json(r.report.at("stats").dump()) : json()},
        {"wall_seconds", r.wall_seconds},
        {"peak_rss_mib", r.peak_rss_mib}};
    std::set<std::string> fixed;
    for (const auto& [n, t] : kPointColumns) fixed.insert(n);
    std::vector<std::pair<std::string, json>> figures;
    if (r.report.is_object()) {
        json body = r.report;
        for (const char* k : {"config", "ops", "stats", "wall_seconds"}) body.erase(k);
        // Per-point paths (the workload_source column has them): not results.
        if (body.contains("trace")) body["trace"].erase("path");
        if (body.contains("run")) body["run"].erase("path");
        flatten(body, "", figures);
    }
    impl_->exec("BEGIN IMMEDIATE");
    try {
        for (const auto& [k, v] : figures) {
            if (fixed.count(k)) continue;
            impl_->ensure_column("points", k, sql_type(v));
            row.emplace_back(k, v);
        }
        impl_->insert("points", row);
        if (r.report.is_object() && r.report.contains("ops")) {
            std::int64_t i = 0;
            for (const auto& op : r.report.at("ops")) {
                std::vector<std::pair<std::string, json>> orow = {
                    {"sweep_id", spec.name}, {"point", p.index}, {"op_index", i++}};
                std::vector<std::pair<std::string, json>> cols;
                flatten(op, "", cols);
                for (const auto& [k, v] : cols) {
                    if (k == "sweep_id" || k == "point" || k == "op_index") continue;
                    impl_->ensure_column("ops", k, sql_type(v));
                    orow.emplace_back(k, v);
                }
                impl_->insert("ops", orow);
            }
        }
        impl_->exec("COMMIT");
    } catch (...) {
        sqlite3_exec(impl_->db, "ROLLBACK", nullptr, nullptr, nullptr);
        impl_->load_columns("main", "points");  // an ALTER may have been rolled back
        impl_->load_columns("main", "ops");
        throw;
    }
}

}  // namespace tpusim::cli::sweep
