#pragma once
// Quoted figures (board.quoted_peak_tflops, quoted_memory_gb) belong to the hardware they were
// quoted for: the loader notes the merged config right after the layer that set each quote, and
// drops a quote that a later layer (a file that extends the quoting one, or --set) made stale.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "tpusim/config/tpu_config.h"

namespace tpusim {

// The merged JSON as it stood right after the layer that set each quoted figure: the
// hardware that figure was quoted for (drop_stale_quotes).
struct QuoteBases {
    nlohmann::json peak, memory;
    std::string peak_source, memory_source;
    void note(const nlohmann::json& layer, const nlohmann::json& merged,
              const std::string& source) {
        const auto b = layer.find("board");
        if (b == layer.end() || !b->is_object()) return;
        if (b->contains("quoted_peak_tflops")) {
            peak = merged;
            peak_source = source;
        }
        if (b->contains("quoted_memory_gb")) {
            memory = merged;
            memory_source = source;
        }
    }
};

// Drops (sets to 0, with a note naming the changed keys) each quote whose basis changed after
// the quoting layer: peak: the chip, core and mxu sections and the board size; memory: the hbm
// section and the board size. `apply` turns a merged JSON object into the config it describes.
void drop_stale_quotes(TpuConfig& cfg, const QuoteBases& q,
                       const std::function<TpuConfig(const nlohmann::json&)>& apply);

}  // namespace tpusim
