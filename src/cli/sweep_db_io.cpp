// The sweep database's outputs: merging shard databases, the CSV export, the sweep summary.
#include <filesystem>

#include "sweep_db_impl.h"

namespace tpusim::cli::sweep {

namespace fs = std::filesystem;
using nlohmann::json;

std::int64_t Database::merge_from(const std::string& other) {
    std::error_code ec;
    if (!fs::is_regular_file(other, ec)) throw InputError(other, "", "no such database file");
    {
        // Attached, not opened: its rows copy in one statement per table.
        sqlite3_stmt* at = impl_->prepare("ATTACH DATABASE ? AS src");
        impl_->bind(at, 1, other);
        const int rc = sqlite3_step(at);
        sqlite3_finalize(at);
        if (rc != SQLITE_DONE) impl_->fail("cannot attach " + other);
    }
    std::int64_t added = 0;
    try {
        impl_->load_columns("src", "points");
        impl_->load_columns("src", "ops");
        if (impl_->columns["src.points"].empty() || impl_->columns["src.ops"].empty())
            throw InputError(other, "", "not a tpusim sweep database (no points / ops tables)");
        impl_->exec("BEGIN IMMEDIATE");
        sqlite3_stmt* q = impl_->prepare(
            "SELECT s.sweep_id, s.spec_hash, m.spec_hash FROM src.sweeps s LEFT JOIN main.sweeps "
            "m USING (sweep_id)");
        while (sqlite3_step(q) == SQLITE_ROW) {
            const auto text = [&](int i) {
                const auto* t = sqlite3_column_text(q, i);
                return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
            };
            if (!text(2).empty() && text(1) != text(2)) {
                sqlite3_finalize(q);
                throw InputError(other, "",
                                 fmt::format("sweep \"{}\" comes from a different spec (hash {}) "
                                             "than in {} (hash {})",
                                             text(0), text(1), path_, text(2)));
            }
        }
        sqlite3_finalize(q);
        impl_->exec("INSERT OR IGNORE INTO main.sweeps SELECT * FROM src.sweeps");
        for (const char* table : {"points", "ops"}) {
            // Column types come along from the source's declaration.
            sqlite3_stmt* ti = impl_->prepare(fmt::format("PRAGMA src.table_info(\"{}\")", table));
            std::string cols;
            while (sqlite3_step(ti) == SQLITE_ROW) {
                const std::string name = reinterpret_cast<const char*>(sqlite3_column_text(ti, 1));
                const std::string type = reinterpret_cast<const char*>(sqlite3_column_text(ti, 2));
                impl_->ensure_column(table, name,
                                     type == "REAL"      ? "REAL"
                                     : type == "INTEGER" ? "INTEGER"
                                                         : "TEXT");
                cols += (cols.empty() ? "\"" : ",\"") + name + "\"";
            }
            sqlite3_finalize(ti);
            impl_->exec(
                fmt::format("INSERT OR IGNORE INTO main.\"{}\" ({}) SELECT {} FROM "
                            "src.\"{}\" ORDER BY rowid",
                            table, cols, cols, table));
            if (std::string(table) == "points") added = sqlite3_changes(impl_->db);
        }
        impl_->exec("COMMIT");
    } catch (...) {
        sqlite3_exec(impl_->db, "ROLLBACK", nullptr, nullptr, nullptr);
        sqlite3_exec(impl_->db, "DETACH DATABASE src", nullptr, nullptr, nullptr);
        impl_->load_columns("main", "points");
        impl_->load_columns("main", "ops");
        throw;
    }
    impl_->exec("DETACH DATABASE src");
    return added;
}

std::vector<std::tuple<std::string, std::int64_t, std::int64_t>> Database::summary() const {
    std::vector<std::tuple<std::string, std::int64_t, std::int64_t>> out;
    sqlite3_stmt* st = impl_->prepare(
        "SELECT s.sweep_id, s.points_total, (SELECT count(*) FROM points p WHERE p.sweep_id = "
        "s.sweep_id) FROM sweeps s ORDER BY s.sweep_id");
    while (sqlite3_step(st) == SQLITE_ROW)
        out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)),
                         sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2));
    sqlite3_finalize(st);
    return out;
}

std::vector<std::int64_t> Database::failed_points(const std::string& sweep_id) const {
    std::vector<std::int64_t> out;
    sqlite3_stmt* st = impl_->prepare(
        "SELECT point FROM points WHERE sweep_id = ? AND status != 'ok' ORDER BY point");
    sqlite3_bind_text(st, 1, sweep_id.c_str(), static_cast<int>(sweep_id.size()), SQLITE_TRANSIENT);
    while (sqlite3_step(st) == SQLITE_ROW) out.push_back(sqlite3_column_int64(st, 0));
    sqlite3_finalize(st);
    return out;
}

namespace {

std::string csv_field(sqlite3_stmt* st, int i) {
    switch (sqlite3_column_type(st, i)) {
        case SQLITE_NULL:
            return "";
        case SQLITE_INTEGER:
            return std::to_string(sqlite3_column_int64(st, i));
        case SQLITE_FLOAT:
            return fmt::format("{}", sqlite3_column_double(st, i));  // shortest exact form
        default: {
            std::string s = reinterpret_cast<const char*>(sqlite3_column_text(st, i));
            if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
            std::string q = "\"";
            for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
            return q + "\"";
        }
    }
}

}  // namespace

std::string Database::csv(const std::string& sweep_id) const {
    // Fixed columns, then the axis values (coords_json), then every report figure in name
    // order, then the two machine-dependent columns: the same spec gives the same text except
    // for wall_seconds and peak_rss_mib.
    std::vector<std::string> coords;
    {
        std::set<std::string> seen;
        sqlite3_stmt* st =
            impl_->prepare("SELECT coords_json FROM points WHERE sweep_id = ? ORDER BY point");
        impl_->bind(st, 1, sweep_id);
        while (sqlite3_step(st) == SQLITE_ROW) {
            const json c = json::parse(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
            for (auto it = c.begin(); it != c.end(); ++it)
                if (seen.insert(it.key()).second) coords.push_back(it.key());
        }
        sqlite3_finalize(st);
    }
    std::set<std::string> skip = {"params_json", "coords_json", "config_json", "stats_json"};
    std::vector<std::string> lead = {"sweep_id",        "point",  "label", "workload",
                                     "workload_source", "status", "error", "config_hash"};
    std::vector<std::string> tail = {"wall_seconds", "peak_rss_mib"};
    for (const auto& c : lead) skip.insert(c);
    for (const auto& c : tail) skip.insert(c);
    std::vector<std::string> cols = lead;
    std::string select;
    for (const auto& c : lead) select += (select.empty() ? "\"" : ",\"") + c + "\"";
    for (const auto& c : coords) {
        cols.push_back(c);
        std::string key = c;  // a JSON path: "$.\"mxu.rows\""
        select += fmt::format(",json_extract(coords_json, '$.\"{}\"')", key);
    }
    for (const auto& c : impl_->columns.at("main.points")) {  // std::set: name order
        if (skip.count(c)) continue;
        cols.push_back(c);
        select += ",\"" + c + "\"";
    }
    for (const auto& c : tail) {
        cols.push_back(c);
        select += ",\"" + c + "\"";
    }
    std::string out;
    for (std::size_t i = 0; i < cols.size(); ++i) out += (i ? "," : "") + cols[i];
    out += "\n";
    sqlite3_stmt* st = impl_->prepare(
        fmt::format("SELECT {} FROM points WHERE sweep_id = ? ORDER BY point", select));
    impl_->bind(st, 1, sweep_id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        for (int i = 0; i < sqlite3_column_count(st); ++i) out += (i ? "," : "") + csv_field(st, i);
        out += "\n";
    }
    sqlite3_finalize(st);
    return out;
}

}  // namespace tpusim::cli::sweep
