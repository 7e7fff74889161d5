#pragma once
// Shared by sweep_spec.cpp (the spec, workloads, expansion) and sweep_axes.cpp (the axes):
// the parsing context and the checks that locate an error by JSON pointer.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "sweep.h"
#include "tpusim/common/error.h"

namespace tpusim::cli::sweep {

// One value of an axis: config overrides and workload parameters set together, and for a
// variant a config file of its own.
struct AxisValue {
    std::string base;
    std::vector<std::pair<std::string, nlohmann::json>> assigns;
    nlohmann::json coords = nlohmann::json::object();
};

struct Ctx {
    std::string path, dir;
    nlohmann::json base_config;  // the base config in effect, for key and type checks

    [[noreturn]] void fail(const std::string& where, const std::string& what) const {
        throw InputError(path, where, what);
    }
    std::string resolve(const std::string& p) const {
        return std::filesystem::absolute(std::filesystem::path(dir) / p)
            .lexically_normal()
            .string();
    }
};

void check_keys(const Ctx& c, const nlohmann::json& obj, const std::string& where,
                std::initializer_list<const char*> allowed);
const nlohmann::json& need(const Ctx& c, const nlohmann::json& obj, const std::string& where,
                           const char* key);
std::string need_string(const Ctx& c, const nlohmann::json& v, const std::string& where);
// A value for a config key (type of the key's default) or "workload.<param>".
void check_assign(const Ctx& c, const std::vector<Workload>& wls, const std::string& key,
                  const nlohmann::json& v, const std::string& where);
// One axis of the spec -> its values, in order.
std::vector<AxisValue> parse_axis(const Ctx& c, const std::vector<Workload>& wls,
                                  const nlohmann::json& a, const std::string& where);

}  // namespace tpusim::cli::sweep
