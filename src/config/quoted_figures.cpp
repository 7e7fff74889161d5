#include "quoted_figures.h"

#include <fmt/format.h>

#include <initializer_list>
#include <vector>

namespace tpusim {

using nlohmann::json;

namespace {

// Leaves of `a` and `b` (config_to_json objects) that differ, as dotted keys.
void changed_keys(const json& a, const json& b, const std::string& prefix,
                  std::vector<std::string>& out) {
    for (auto it = a.begin(); it != a.end(); ++it) {
        const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
        const auto bt = b.find(it.key());
        if (bt == b.end()) {
            out.push_back(key);
        } else if (it->is_object() && bt->is_object()) {
            changed_keys(*it, *bt, key, out);
        } else if (*it != *bt) {
            out.push_back(key);
        }
    }
}

// A quoted figure belongs to the hardware it was quoted for: when a later layer (a file that
// extends the quoting one, or --set) changes what the figure depends on, the quote is dropped
// (0: "quoted none") and the note says why. Peak: chip, core, mxu sections and the board's
// size; memory: the hbm section and the board's size.
}  // namespace

void drop_stale_quotes(TpuConfig& cfg, const QuoteBases& q,
                       const std::function<TpuConfig(const json&)>& apply) {
    const json now = config_to_json(cfg);
    auto basis = [](const json& full, std::initializer_list<const char*> sections) {
        json b = json::object();
        for (const char* s : sections) b[s] = full.at(s);
        b["chips_x"] = full.at("board").at("chips_x");
        b["chips_y"] = full.at("board").at("chips_y");
        return b;
    };
    auto then = [&](const json& merged) { return config_to_json(apply(merged)); };
    std::vector<std::string> changed;
    changed_keys(basis(then(q.peak), {"chip", "core", "mxu"}), basis(now, {"chip", "core", "mxu"}),
                 "", changed);
    if (!changed.empty() && cfg.board.quoted_peak_tflops > 0) {
        std::string keys;
        for (std::size_t i = 0; i < changed.size() && i < 4; ++i) {
            keys += (i ? ", " : "") + changed[i];
        }
        if (changed.size() > 4) keys += fmt::format(" and {} more", changed.size() - 4);
        cfg.board.quoted_note = fmt::format(
            "the {} TFLOPS quoted in {} is for other hardware: this configuration changes {}",
            cfg.board.quoted_peak_tflops, q.peak_source, keys);
        cfg.board.quoted_peak_tflops = 0;
    }
    changed.clear();
    changed_keys(basis(then(q.memory), {"hbm"}), basis(now, {"hbm"}), "", changed);
    if (!changed.empty()) cfg.board.quoted_memory_gb = 0;
}

}  // namespace tpusim
