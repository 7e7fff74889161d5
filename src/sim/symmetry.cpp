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

// Empty when the replica groups of `c` are translates of one another by whole chips (every
// group's chips are the first group's moved by one chip translation of the board, the cores of
// a chip in the same group) and partition the program's cores; else why not.
std::string groups_break_symmetry(const ReplicaGroups& rg, std::int64_t cores, const TpuConfig& cfg,
                                  const std::string& id) {
    const std::int64_t per = cfg.chip.cores_per_chip;
    const std::int64_t nx = cfg.board.chips_x, ny = cfg.board.chips_y;
    const bool wrap = cfg.board.wraparound;
    std::vector<int> seen(static_cast<std::size_t>(cores), 0);
    std::vector<std::vector<std::int64_t>> chips;  // per group, its chips in ascending order
    for (const auto& g : rg.groups) {
        std::vector<std::int64_t> ch;
        for (std::int64_t c : g) {
            if (c < 0 || c >= cores || seen[static_cast<std::size_t>(c)]++ > 0) {
                return fmt::format("op \"{}\": its replica groups do not partition the {} cores",
                                   id, cores);
            }
            ch.push_back(c / per);
        }
        std::sort(ch.begin(), ch.end());
        // Whole chips: each chip appears cores-per-chip times.
        std::vector<std::int64_t> whole;
        for (std::size_t i = 0; i < ch.size(); i += static_cast<std::size_t>(per)) {
            if (i + static_cast<std::size_t>(per) > ch.size() ||
                ch[i + static_cast<std::size_t>(per) - 1] != ch[i]) {
                return fmt::format(
                    "op \"{}\": a replica group holds part of a chip's cores (the groups must "
                    "be of whole chips)",
                    id);
            }
            whole.push_back(ch[i]);
        }
        chips.push_back(std::move(whole));
    }
    if (std::count(seen.begin(), seen.end(), 1) != cores) {
        return fmt::format("op \"{}\": its replica groups do not partition the {} cores", id,
                           cores);
    }
    // The first group moved by (dx, dy) chips, or empty where it leaves a board without
    // wrap-around links.
    const auto& first = chips.front();
    auto moved = [&](std::int64_t dx, std::int64_t dy) {
        std::vector<std::int64_t> out;
        for (std::int64_t chip : first) {
            std::int64_t x = chip % nx + dx, y = chip / nx + dy;
            if (!wrap && (x < 0 || x >= nx || y < 0 || y >= ny)) return std::vector<std::int64_t>{};
            x = (x % nx + nx) % nx;
            y = (y % ny + ny) % ny;
            out.push_back(y * nx + x);
        }
        std::sort(out.begin(), out.end());
        return out;
    };
    for (std::size_t g = 1; g < chips.size(); ++g) {
        if (chips[g].size() != first.size()) {
            return fmt::format("op \"{}\": its replica groups are of different sizes", id);
        }
        bool found = false;
        // The translation takes the first group's first chip to one of this group's chips.
        for (std::size_t k = 0; !found && k < chips[g].size(); ++k) {
            const std::int64_t dx = chips[g][k] % nx - first.front() % nx;
            const std::int64_t dy = chips[g][k] / nx - first.front() / nx;
            found = moved(dx, dy) == chips[g];
        }
        if (!found) {
            return fmt::format(
                "op \"{}\": replica group {} is not a translate of the first one on the torus", id,
                g);
        }
    }
    return "";
}

// Empty when `c` leaves every core's timeline the same; else why not, naming the op.
std::string collective_breaks_symmetry(const CollectiveInstr& c, std::int64_t cores,
                                       const Program& program, const TpuConfig& cfg,
                                       std::uint32_t op) {
    const std::string& id = program.ops[op].id;
    if (c.role != CollectiveInstr::Role::Group) {
        return fmt::format("op \"{}\" is a point-to-point {}: only its two cores wait on it", id,
                           c.role == CollectiveInstr::Role::Send ? "send" : "recv");
    }
    if (c.groups && c.groups->groups.size() > 1)
        return groups_break_symmetry(*c.groups, cores, cfg, id);
    std::vector<std::int64_t> g = c.groups ? c.groups->groups.front() : c.group;
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
        std::string why = collective_breaks_symmetry(c, ncores, program, cfg,
                                                     static_cast<std::uint32_t>(c.instance));
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
