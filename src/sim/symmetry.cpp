#include "tpusim/sim/symmetry.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace tpusim {

namespace {

SymmetryPlan full(const Program& program, const TpuConfig& cfg, std::string reason) {
    SymmetryPlan p;
    p.simulated_cores = static_cast<std::int64_t>(program.cores.size());
    p.simulated_chips = cfg.chips();
    p.reason = std::move(reason);
    return p;
}

// Empty when `c` leaves every core's timeline the same; else why not, naming the op.
std::string collective_breaks_symmetry(const CollectiveInstr& c, std::int64_t cores,
                                       const Program& program, std::uint32_t op) {
    const std::string& id = program.ops[op].id;
    if (c.role != CollectiveInstr::Role::Group) {
        return fmt::format("op \"{}\" is a point-to-point {}: only its two cores wait on it", id,
                           c.role == CollectiveInstr::Role::Send ? "send" : "recv");
    }
    std::vector<std::int64_t> g = c.group;
    std::sort(g.begin(), g.end());
    bool all = static_cast<std::int64_t>(g.size()) == cores;
    for (std::size_t i = 0; all && i < g.size(); ++i) all = g[i] == static_cast<std::int64_t>(i);
    if (!all) {
        return fmt::format("op \"{}\" is a collective over {} of the {} cores, not all of them", id,
                           g.size(), cores);
    }
    return "";
}

}  // namespace

SymmetryPlan plan_symmetry(const Program& program, const TpuConfig& cfg, bool allowed,
                           bool timeline) {
    const auto ncores = static_cast<std::int64_t>(program.cores.size());
    const std::int64_t per_chip = cfg.chip.cores_per_chip;
    if (!allowed) return full(program, cfg, "--no-symmetry");
    if (timeline) return full(program, cfg, "a timeline was asked for (it shows every core)");
    if (ncores <= per_chip) {
        return full(program, cfg,
                    cfg.chips() < 2 ? "the board has one chip"
                                    : fmt::format("the program runs on {} of the board's {} cores",
                                                  ncores, cfg.cores()));
    }
    if (ncores % per_chip != 0) {
        return full(program, cfg,
                    fmt::format("the program runs on {} of the board's {} cores, not on whole "
                                "chips of {}",
                                ncores, cfg.cores(), per_chip));
    }
    const std::int64_t program_chips = ncores / per_chip;
    const CoreProgram& first = program.cores.front();
    for (std::int64_t c = 1; c < ncores; ++c) {
        const CoreProgram& cp = program.cores[static_cast<std::size_t>(c)];
        if (!cp.instrs.same_as(first.instrs)) {
            return full(program, cfg,
                        fmt::format("core {} runs another instruction stream than core 0: its "
                                    "ops or collective groups differ",
                                    c));
        }
        if (cp.hbm_base != program.cores[static_cast<std::size_t>(c % per_chip)].hbm_base) {
            return full(
                program, cfg,
                fmt::format("core {} uses other HBM addresses than core {}", c, c % per_chip));
        }
    }
    // The lowering lists each stream's collectives (one per op), held or streamed.
    if (!first.collectives) throw std::logic_error("plan_symmetry: a program not from lower_ops");
    for (const CollectiveInstr& c : *first.collectives) {
        std::string why =
            collective_breaks_symmetry(c, ncores, program, static_cast<std::uint32_t>(c.instance));
        if (!why.empty()) return full(program, cfg, std::move(why));
    }
    SymmetryPlan p;
    p.used = true;
    p.simulated_chips = 1;
    p.simulated_cores = per_chip;
    p.program_chips = program_chips;
    return p;
}

}  // namespace tpusim
