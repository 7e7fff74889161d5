#include "tpusim/stats/report.h"

#include <fstream>
#include <iostream>

#include "tpusim/common/error.h"

namespace tpusim {

const char* ToolInfo::version() { return TPUSIM_VERSION; }
const char* ToolInfo::git_revision() { return TPUSIM_GIT_REVISION; }

nlohmann::json make_report(const std::string& command, const TpuConfig& cfg,
                           const nlohmann::json& body) {
    nlohmann::json j = body.is_object() ? body : nlohmann::json::object();
    j["tool"] = "tpusim";
    j["version"] = ToolInfo::version();
    j["git_revision"] = ToolInfo::git_revision();
    j["command"] = command;
    j["config"] = config_to_json(cfg);
    return j;
}

void write_json(const std::string& path, const nlohmann::json& j) {
    const std::string text = j.dump(2) + "\n";
    if (path == "-") {
        std::cout << text;
        return;
    }
    std::ofstream out(path);
    if (!out) throw InputError(path, "", "cannot write file");
    out << text;
    if (!out) throw InputError(path, "", "error while writing file");
}

}  // namespace tpusim
