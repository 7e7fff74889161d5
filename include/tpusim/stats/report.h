#pragma once
// Reports: JSON first (tool, version, git revision, command, config in effect, results, stats),
// a text summary second (written by each command with fmt).
#include <string>

#include <nlohmann/json.hpp>

#include "tpusim/config/tpu_config.h"

namespace tpusim {

struct ToolInfo {
    static const char* version();
    static const char* git_revision();
};

// {"tool": "tpusim", "version", "git_revision", "command", ...body, "config": {...}}.
// nlohmann::json orders keys alphabetically, so reports are byte-identical across runs.
nlohmann::json make_report(const std::string& command, const TpuConfig& cfg,
                           const nlohmann::json& body);

// Writes `j` pretty-printed; "-" is stdout. Throws InputError if the file cannot be written.
void write_json(const std::string& path, const nlohmann::json& j);

}  // namespace tpusim
