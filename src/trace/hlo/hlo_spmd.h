#pragma once
// The SPMD partitioning pass (private to src/trace/hlo; docs/hlo.md, "SPMD and collectives"):
// XLA's HloSharding as written in `sharding={...}` (hlo_spmd_sharding.cpp) and the pass that
// turns a module with global shapes into the per-device module (hlo_spmd.cpp and the files
// of its Partitioner, hlo_spmd_partitioner.h).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tpusim/trace/hlo.h"

namespace tpusim::hlo_spmd {

// One `sharding={...}` value (xla/hlo/ir/hlo_sharding.h). The device assignment is kept as a
// flat list in row-major order over [tile..., replicate] (iota forms expanded).
struct Sharding {
    enum class Kind { Replicated, Maximal, Manual, Tiled, Tuple, Other };
    Kind kind = Kind::Replicated;
    std::vector<std::int64_t> tile;     // tiles per array dimension (Tiled)
    std::int64_t replicate = 1;         // last_tile_dim_replicate: copies of each tile
    std::vector<std::int64_t> devices;  // tile.product() * replicate ids (Tiled)
    std::int64_t device = 0;            // Maximal
    std::vector<Sharding> elements;     // Tuple
    std::string other;                  // Other: what it is (Shardy mesh form, subgroups)
};

// Parses a sharding attribute value. Malformed text, a device id out of [0, partitions), a
// device named twice, or a tile assignment that does not name exactly `partitions` devices is
// an InputError located at `at` (through m.fail).
Sharding parse_sharding(std::string_view v, const HloModule& m, std::uint32_t at,
                        std::int64_t partitions);

// Whether any instruction's sharding is a tiled HloSharding ("devices=" in the classic form).
bool has_tiled_sharding(const HloModule& m);

// The module partitioned when opts.spmd_partitioner and spmd_state(m) is Global (stats
// counted); none otherwise. What the import and `--after-passes` call, after the defusion.
std::optional<HloModule> partitioned(const HloModule& m, const HloImportOptions& opts,
                                     HloImportStats& stats);

}  // namespace tpusim::hlo_spmd
