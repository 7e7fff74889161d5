#pragma once
// The HTML report: one self-contained page (inline CSS, SVG and script; nothing loaded from
// the network) from a run report, written by `tpusim report R.json -o R.html` and by
// `tpusim run ... --html R.html` (docs/program.md, "HTML report").
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace tpusim::cli {

// The page for `report`, a run report as `tpusim run --report` writes it; `source` names it in
// errors (a located InputError for a report that is not a run report or lacks a figure the
// page shows). `timeline` names the run's timeline file for the Perfetto instructions ("" when
// the run wrote none).
std::string html_report(const nlohmann::json& report, const std::string& source,
                        const std::string& timeline);

// html_report written to `path` ("-": stdout).
void write_html_report(const std::string& path, const nlohmann::json& report,
                       const std::string& source, const std::string& timeline);

}  // namespace tpusim::cli
