#pragma once
// SPMD symmetry: when every core of the program runs the same instruction stream and meets
// the others only in collectives over all of them, every chip that runs it follows the same
// timeline (a collective ends at one cycle for all its cores, so they leave it together and
// reach the next one together). Collectives over replica groups that are translates of one
// another by whole chips qualify too, when each group's collective ends at the same cycle as
// the others': the rendezvous starts them all and checks that while the run goes
// (CollectiveRendezvous::groups_apart; Simulator::run throws SymmetryBroken otherwise). The program
// may run on the board's first chips only (a 4-core program on a v3-8): the chips after them run
// nothing. The simulator then builds and runs one representative chip, runs every collective on the
// full ICI fabric, and scales the chip's figures to the board.
//
// When chip 0 alone cannot stand for the others, a block of chips may (a spatially partitioned
// replica, two chips stacked along y, whose cores run different streams): the unit is the
// bx x by block of chips at the torus origin, the board is tiled by its translates, and every
// core runs as its image in the unit (the core of the same index on the chip at (x mod bx,
// y mod by)). The exact conditions are in docs/pods.md ("SPMD symmetry"); plan_symmetry checks
// them.
#include <cstdint>
#include <string>
#include <vector>

#include "tpusim/config/tpu_config.h"
#include "tpusim/program/program.h"

namespace tpusim {

struct SymmetryPlan {
    bool used = false;
    // The cores built and simulated, ascending: the unit's cores when used, every core of the
    // program when not.
    std::vector<std::int64_t> cores;
    // Per chip of the board: the chip it runs as, whose stats it reports (itself when it is
    // built). Empty when not used: every chip is built.
    std::vector<std::int64_t> like;
    // Per core of the program: the simulated core whose timeline it shares (its image in the
    // unit). Empty when not used.
    std::vector<std::int64_t> image;
    // The unit, a block of chips_x x chips_y chips at the origin (1 x 1: chip 0); 0 when not used.
    std::int64_t unit_x = 0, unit_y = 0;
    std::string reason;  // why every core is simulated; empty when used

    std::int64_t simulated_cores() const { return static_cast<std::int64_t>(cores.size()); }
};

// `allowed`: false for --no-symmetry; `timeline`: a timeline (every core's tracks) was asked
// for. Reads a held program's instructions once; a streamed program is simulated in full.
SymmetryPlan plan_symmetry(const Program& program, const TpuConfig& cfg, bool allowed,
                           bool timeline);

}  // namespace tpusim
