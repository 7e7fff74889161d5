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
// full ICI fabric, and scales the chip's figures to the board. The exact conditions are in
// docs/pods.md ("SPMD symmetry"); plan_symmetry checks them.
#include <cstdint>
#include <string>

#include "tpusim/config/tpu_config.h"
#include "tpusim/program/program.h"

namespace tpusim {

struct SymmetryPlan {
    bool used = false;
    std::int64_t simulated_chips = 0;  // chips built and simulated (all of them when not used)
    std::int64_t simulated_cores = 0;  // cores 0 .. simulated_cores - 1
    // Chips 0 .. program_chips - 1 run the program (the simulated ones stand for them when
    // used); the board's other chips run nothing. 0: every chip of the board.
    std::int64_t program_chips = 0;
    std::string reason;  // why every core is simulated; empty when used
};

// `allowed`: false for --no-symmetry; `timeline`: a timeline (every core's tracks) was asked
// for. Reads a held program's instructions once; a streamed program is simulated in full.
SymmetryPlan plan_symmetry(const Program& program, const TpuConfig& cfg, bool allowed,
                           bool timeline);

}  // namespace tpusim
