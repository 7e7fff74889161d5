#include "tpusim/stats/report.h"

#include "tpusim/common/text_output.h"

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
    write_text(path, j.dump(2) + "\n");
}

}  // namespace tpusim
