#pragma once
// Translation symmetry of a lowered collective on a 2-D torus (docs/ici.md, "Symmetric
// collectives"). When every core runs the schedule its translate by a tile of the torus runs,
// with the destinations translated, and every transfer stays on chip or crosses one link,
// the whole torus repeats one tile: each chip of a tile sees exactly what its translates see,
// so the collective can be simulated on the tile wrapped into a torus of its own, and every
// full link's figures are those of the tile link in its place.
#include <optional>
#include <vector>

#include "tpusim/config/topology.h"
#include "tpusim/program/collectives.h"

namespace tpusim {

struct TorusTile {
    int x = 0, y = 0;  // chips along x and y; each divides the torus side
};

// The smallest tile, in chips, whose translates the collective repeats (see above), or none
// when only the whole torus does (no saving) or the board is not a torus (it lacks the
// wrap-around links of an axis).
std::optional<TorusTile> symmetric_tile(const LoweredCollective& c, const Topology& topo);
// Whether the collective repeats with the translates of `tile` (symmetric_tile's test for one
// given tile).
bool repeats_on_tile(const LoweredCollective& c, const Topology& topo, TorusTile tile);
// The collective on the tile torus `tile_topo` (TorusTile's chips, wrapped): the cores of the
// tile's chips with their schedules, each destination replaced by the tile core in its place.
LoweredCollective fold_onto_tile(const LoweredCollective& c, const Topology& topo,
                                 const Topology& tile_topo);
// For every link of `topo`, the link of `tile_topo` in its place (same direction, from the
// tile chip its source chip repeats).
std::vector<std::size_t> tile_links(const Topology& topo, const Topology& tile_topo);
// For every core of `topo`, the core of `tile_topo` in its place.
int tile_core(const Topology& topo, const Topology& tile_topo, int core);

}  // namespace tpusim
