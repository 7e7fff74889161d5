#pragma once
// The sweep database's SQLite handle and helpers, shared by sweep_db.cpp (open, lock, record)
// and sweep_db_io.cpp (merge, CSV). Internal to the sweep command.
#include <fmt/format.h>
#include <sqlite3.h>
#include <unistd.h>

#include <map>
#include <set>
#include <string>

#include "sweep.h"
#include "tpusim/common/error.h"

namespace tpusim::cli::sweep {

struct Database::Impl {
    sqlite3* db = nullptr;
    int lock_fd = -1;
    std::string path;
    std::map<std::string, std::set<std::string>> columns;  // table -> column names

    // Here rather than in ~Database, so that a constructor that throws (a file that is not
    // SQLite, a locked database) still closes the handle and releases the lock.
    ~Impl() {
        if (db) sqlite3_close(db);
        if (lock_fd >= 0) ::close(lock_fd);  // releases the flock
    }

    [[noreturn]] void fail(const std::string& what) const {
        throw InputError(path, "", fmt::format("{}: {}", what, sqlite3_errmsg(db)));
    }
    void exec(const std::string& sql) {
        char* msg = nullptr;
        if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
            const std::string m = msg ? msg : "unknown";
            sqlite3_free(msg);
            throw InputError(path, "",
                             fmt::format("database error: {} (in: {})", m, sql.substr(0, 60)));
        }
    }
    sqlite3_stmt* prepare(const std::string& sql) {
        sqlite3_stmt* st = nullptr;
        if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
            fail("database error");
        return st;
    }
    void load_columns(const std::string& schema, const std::string& table) {
        auto& cols = columns[schema + "." + table];
        cols.clear();
        sqlite3_stmt* st = prepare(fmt::format("PRAGMA {}.table_info(\"{}\")", schema, table));
        while (sqlite3_step(st) == SQLITE_ROW)
            cols.insert(reinterpret_cast<const char*>(sqlite3_column_text(st, 1)));
        sqlite3_finalize(st);
    }
    void ensure_column(const std::string& table, const std::string& name, const char* type) {
        auto& cols = columns["main." + table];
        if (cols.count(name)) return;
        exec(fmt::format("ALTER TABLE \"{}\" ADD COLUMN \"{}\" {}", table, name, type));
        cols.insert(name);
    }
    void bind(sqlite3_stmt* st, int i, const nlohmann::json& v) {
        if (v.is_null()) {
            sqlite3_bind_null(st, i);
        } else if (v.is_boolean()) {
            sqlite3_bind_int(st, i, v.get<bool>() ? 1 : 0);
        } else if (v.is_number_integer() || v.is_number_unsigned()) {
            sqlite3_bind_int64(st, i, v.get<std::int64_t>());
        } else if (v.is_number_float()) {
            sqlite3_bind_double(st, i, v.get<double>());
        } else {
            const std::string s = v.is_string() ? v.get<std::string>() : v.dump();
            sqlite3_bind_text(st, i, s.c_str(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
        }
    }
    void insert(const std::string& table,
                const std::vector<std::pair<std::string, nlohmann::json>>& row) {
        std::string cols, qs;
        for (const auto& [k, v] : row) {
            cols += (cols.empty() ? "\"" : ",\"") + k + "\"";
            qs += qs.empty() ? "?" : ",?";
        }
        sqlite3_stmt* st =
            prepare(fmt::format("INSERT INTO \"{}\" ({}) VALUES ({})", table, cols, qs));
        for (std::size_t i = 0; i < row.size(); ++i)
            bind(st, static_cast<int>(i + 1), row[i].second);
        const int rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE) fail("cannot write a row");
    }
};

}  // namespace tpusim::cli::sweep
