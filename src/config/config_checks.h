#pragma once
// Checks that relate several config values (single-value ranges live in the visit() Limits).
#include <map>
#include <string>

#include "tpusim/config/tpu_config.h"

namespace tpusim {

// Which source (file or "--set ...") set the value at `pointer` or its closest parent.
std::string config_origin(const std::map<std::string, std::string>& origin,
                          const std::string& pointer);

// Throws InputError naming the source and pointer of the first inconsistent value.
void check_relations(const TpuConfig& cfg, const std::map<std::string, std::string>& origin);

}  // namespace tpusim
