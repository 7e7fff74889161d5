#include "tpusim/sim/symmetry.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "tpusim/config/topology.h"

namespace tpusim {

namespace {

SymmetryPlan full(const Program& program, std::string reason) {
    SymmetryPlan p;
    for (std::int64_t c = 0; c < static_cast<std::int64_t>(program.cores.size()); ++c)
        p.cores.push_back(c);
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
    const bool wrap_x = cfg.board.wraps(0), wrap_y = cfg.board.wraps(1);
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
    // The first group moved by (dx, dy) chips, or empty where it leaves the board along an
    // axis without wrap-around links.
    const auto& first = chips.front();
    auto moved = [&](std::int64_t dx, std::int64_t dy) {
        std::vector<std::int64_t> out;
        for (std::int64_t chip : first) {
            std::int64_t x = chip % nx + dx, y = chip / nx + dy;
            if ((!wrap_x && (x < 0 || x >= nx)) || (!wrap_y && (y < 0 || y >= ny)))
                return std::vector<std::int64_t>{};
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

// Empty when chip 0 stands for the program's chips (conditions 3 and 4 of docs/pods.md); else
// why not.
std::string chip_zero_breaks_symmetry(const Program& program, const TpuConfig& cfg) {
    const auto ncores = static_cast<std::int64_t>(program.cores.size());
    const std::int64_t per_chip = cfg.chip.cores_per_chip;
    const CoreProgram& first = program.cores.front();
    for (std::int64_t c = 1; c < ncores; ++c) {
        const CoreProgram& cp = program.cores[static_cast<std::size_t>(c)];
        if (!cp.instrs.same_as(first.instrs)) {
            return fmt::format(
                "core {} runs another instruction stream than core 0: its ops or collective "
                "groups differ",
                c);
        }
        if (cp.hbm_base != program.cores[static_cast<std::size_t>(c % per_chip)].hbm_base)
            return fmt::format("core {} uses other HBM addresses than core {}", c, c % per_chip);
    }
    // The lowering lists each stream's collectives (one per op), held or streamed.
    if (!first.collectives) throw std::logic_error("plan_symmetry: a program not from lower_ops");
    for (const CollectiveInstr& c : *first.collectives) {
        std::string why = collective_breaks_symmetry(c, ncores, program, cfg,
                                                     static_cast<std::uint32_t>(c.instance));
        if (!why.empty()) return why;
    }
    return "";
}

// A block of bx x by chips at the origin as the unit: every chip runs as the chip at (x mod bx,
// y mod by), core for core. The board is tiled by the block's translates.
struct Block {
    std::int64_t bx = 1, by = 1;
    std::int64_t nx = 1, ny = 1, per = 1;
    bool wrap_x = true, wrap_y = true;           // BoardConfig::wraps
    const std::vector<int>* ring_pos = nullptr;  // per chip: its place on the board's chip cycle

    std::int64_t image(std::int64_t core) const {
        const std::int64_t chip = core / per;
        return ((chip / nx % by) * nx + chip % nx % bx) * per + core % per;
    }
    // `core` moved by (dx, dy) chips; -1 where it leaves the board along an axis without
    // wrap-around links.
    std::int64_t moved(std::int64_t core, std::int64_t dx, std::int64_t dy) const {
        const std::int64_t chip = core / per;
        std::int64_t x = chip % nx + dx, y = chip / nx + dy;
        if ((!wrap_x && (x < 0 || x >= nx)) || (!wrap_y && (y < 0 || y >= ny))) return -1;
        x = (x % nx + nx) % nx;
        y = (y % ny + ny) % ny;
        return (y * nx + x) * per + core % per;
    }
    std::string name() const { return fmt::format("{} x {} chips", bx, by); }
    // The group's cores in the order of its ring, as the lowering makes it (lower_collective:
    // by their chips' places on the board's chip cycle, then by core id).
    std::vector<std::int64_t> ring(const std::vector<std::int64_t>& group) const {
        std::vector<std::int64_t> r(group.begin(), group.end());
        std::sort(r.begin(), r.end());
        std::stable_sort(r.begin(), r.end(), [&](std::int64_t a, std::int64_t c) {
            return (*ring_pos)[static_cast<std::size_t>(a / per)] <
                   (*ring_pos)[static_cast<std::size_t>(c / per)];
        });
        return r;
    }
};

// Whether ring `to` is ring `from` moved by (dx, dy) chips, from any of its cores (the same
// cycle of cores: its steps are the same, each at another core). A group whose ring runs
// another way round its chips (the board's chip cycle returns along column 0) runs its
// collective otherwise, and would end apart from its translates.
bool ring_moves(const std::vector<std::int64_t>& from, const std::vector<std::int64_t>& to,
                std::int64_t dx, std::int64_t dy, const Block& b) {
    if (from.size() != to.size()) return false;
    if (from.empty()) return true;
    const std::int64_t first = b.moved(from.front(), dx, dy);
    const auto at = std::find(to.begin(), to.end(), first);
    if (at == to.end()) return false;
    const auto k = static_cast<std::size_t>(at - to.begin());
    for (std::size_t i = 0; i < from.size(); ++i)
        if (b.moved(from[i], dx, dy) != to[(k + i) % to.size()]) return false;
    return true;
}

// Empty when the replica groups of `c` map onto themselves under the block's translations;
// else why not. Each core's group must meet the unit where its image's group does (the
// images of their cores are the same unit cores: the two groups start at one cycle), and the
// groups that meet the unit alike must be translates of one another by whole blocks (so that
// they run alike; the rendezvous checks that they end together).
std::string block_groups_break_symmetry(const ReplicaGroups& rg, std::int64_t cores, const Block& b,
                                        const std::string& id) {
    std::vector<int> seen(static_cast<std::size_t>(cores), 0);
    std::vector<std::int32_t> group_of(static_cast<std::size_t>(cores), -1);
    for (std::size_t g = 0; g < rg.groups.size(); ++g) {
        for (std::int64_t c : rg.groups[g]) {
            if (c < 0 || c >= cores || seen[static_cast<std::size_t>(c)]++ > 0) {
                return fmt::format("op \"{}\": its replica groups do not partition the {} cores",
                                   id, cores);
            }
            group_of[static_cast<std::size_t>(c)] = static_cast<std::int32_t>(g);
        }
    }
    if (std::count(seen.begin(), seen.end(), 1) != cores) {
        return fmt::format("op \"{}\": its replica groups do not partition the {} cores", id,
                           cores);
    }
    // Each group's images in the unit; groups with the same images form one class.
    std::map<std::vector<std::int64_t>, std::size_t> classes;
    std::vector<std::size_t> class_of(rg.groups.size());
    std::vector<std::size_t> first_of;  // per class, its first group
    for (std::size_t g = 0; g < rg.groups.size(); ++g) {
        std::vector<std::int64_t> img;
        for (std::int64_t c : rg.groups[g]) img.push_back(b.image(c));
        std::sort(img.begin(), img.end());
        img.erase(std::unique(img.begin(), img.end()), img.end());
        const auto [it, added] = classes.emplace(std::move(img), first_of.size());
        if (added) first_of.push_back(g);
        class_of[g] = it->second;
    }
    for (std::int64_t c = 0; c < cores; ++c) {
        const std::int64_t u = b.image(c);
        if (class_of[static_cast<std::size_t>(group_of[static_cast<std::size_t>(c)])] !=
            class_of[static_cast<std::size_t>(group_of[static_cast<std::size_t>(u)])]) {
            return fmt::format(
                "op \"{}\": the replica group of core {} does not meet the unit ({}) as that of "
                "core {} does",
                id, c, b.name(), u);
        }
    }
    for (std::size_t g = 0; g < rg.groups.size(); ++g) {
        const auto& first = rg.groups[first_of[class_of[g]]];
        const auto& group = rg.groups[g];
        if (&first == &group) continue;
        std::vector<std::int64_t> want(group.begin(), group.end());
        std::sort(want.begin(), want.end());
        bool found = first.size() == group.size();
        if (found) {
            found = false;
            // The translation takes the first group's first core to one of this group's cores
            // of the same index on its chip, by whole blocks.
            const std::int64_t f = first.front(), fchip = f / b.per;
            for (std::size_t k = 0; !found && k < group.size(); ++k) {
                const std::int64_t chip = group[k] / b.per;
                const std::int64_t dx = chip % b.nx - fchip % b.nx;
                const std::int64_t dy = chip / b.nx - fchip / b.nx;
                if (group[k] % b.per != f % b.per || dx % b.bx != 0 || dy % b.by != 0) continue;
                std::vector<std::int64_t> got;
                for (std::int64_t c : first) got.push_back(b.moved(c, dx, dy));
                std::sort(got.begin(), got.end());
                found = got == want && ring_moves(b.ring(first), b.ring(group), dx, dy, b);
            }
        }
        if (!found) {
            return fmt::format(
                "op \"{}\": replica group {} is not a translate of group {} by whole units ({}), "
                "its ring included",
                id, g, first_of[class_of[g]], b.name());
        }
    }
    return "";
}

// Empty when `c` leaves every core's timeline that of its image in the unit; else why not.
std::string block_collective_breaks_symmetry(const CollectiveInstr& c, std::int64_t cores,
                                             const Program& program, const Block& b) {
    const std::string& id = program.ops[static_cast<std::size_t>(c.instance)].id;
    if (c.role != CollectiveInstr::Role::Group) {
        return fmt::format("op \"{}\" is a point-to-point {}: only its two cores wait on it", id,
                           c.role == CollectiveInstr::Role::Send ? "send" : "recv");
    }
    if (c.groups && c.groups->groups.size() > 1)
        return block_groups_break_symmetry(*c.groups, cores, b, id);
    // One group: every core runs it as its image does when the group holds a core exactly
    // when it holds the core's image (the group then ends at one cycle for all of them).
    const std::vector<std::int64_t>& g = c.groups ? c.groups->groups.front() : c.group;
    std::vector<char> in(static_cast<std::size_t>(cores), 0);
    for (std::int64_t x : g) {
        if (x < 0 || x >= cores) {
            return fmt::format("op \"{}\": its group names core {}, not one of the {} cores", id, x,
                               cores);
        }
        in[static_cast<std::size_t>(x)] = 1;
    }
    for (std::int64_t x = 0; x < cores; ++x) {
        if (in[static_cast<std::size_t>(x)] != in[static_cast<std::size_t>(b.image(x))]) {
            return fmt::format(
                "op \"{}\" is a collective over {} of the {} cores, which hold core {} {} its "
                "image {} in the unit ({})",
                id, g.size(), cores, x, in[static_cast<std::size_t>(x)] ? "but not" : "and not",
                b.image(x), b.name());
        }
    }
    return "";
}

// Empty when the block `b` stands for the board (the program on every core); else why not.
// `streams_repeat` tells whether every core runs its image's stream.
std::string block_breaks_symmetry(const Program& program, const Block& b, bool& streams_repeat) {
    const auto ncores = static_cast<std::int64_t>(program.cores.size());
    streams_repeat = false;
    for (std::int64_t c = 0; c < ncores; ++c) {
        const CoreProgram& cp = program.cores[static_cast<std::size_t>(c)];
        const std::int64_t u = b.image(c);
        if (!cp.instrs.same_as(program.cores[static_cast<std::size_t>(u)].instrs)) {
            return fmt::format("core {} runs another instruction stream than core {}", c, u);
        }
        if (cp.hbm_base != program.cores[static_cast<std::size_t>(c % b.per)].hbm_base)
            return fmt::format("core {} uses other HBM addresses than core {}", c, c % b.per);
    }
    streams_repeat = true;
    // The unit's streams (each once) and their collectives.
    std::vector<const CoreProgram*> streams;
    for (std::int64_t c = 0; c < ncores; ++c) {
        if (b.image(c) != c) continue;
        const CoreProgram& cp = program.cores[static_cast<std::size_t>(c)];
        if (std::none_of(streams.begin(), streams.end(),
                         [&](const CoreProgram* s) { return s->instrs.same_as(cp.instrs); }))
            streams.push_back(&cp);
    }
    for (const CoreProgram* s : streams) {
        if (!s->collectives) throw std::logic_error("plan_symmetry: a program not from lower_ops");
        for (const CollectiveInstr& c : *s->collectives) {
            std::string why = block_collective_breaks_symmetry(c, ncores, program, b);
            if (!why.empty()) return why;
        }
    }
    return "";
}

}  // namespace

SymmetryPlan plan_symmetry(const Program& program, const TpuConfig& cfg, bool allowed,
                           bool timeline) {
    const auto ncores = static_cast<std::int64_t>(program.cores.size());
    const std::int64_t per_chip = cfg.chip.cores_per_chip;
    if (!allowed) return full(program, "--no-symmetry");
    if (timeline) return full(program, "a timeline was asked for (it shows every core)");
    if (ncores <= per_chip) {
        return full(program, cfg.chips() < 2
                                 ? "the board has one chip"
                                 : fmt::format("the program runs on {} of the board's {} cores",
                                               ncores, cfg.cores()));
    }
    if (ncores % per_chip != 0) {
        return full(program, fmt::format("the program runs on {} of the board's {} cores, not "
                                         "on whole chips of {}",
                                         ncores, cfg.cores(), per_chip));
    }
    const std::int64_t program_chips = ncores / per_chip;
    std::string why = chip_zero_breaks_symmetry(program, cfg);
    if (why.empty()) {
        // Chip 0 stands for chips 0 .. program_chips - 1; the first idle chip is built, the
        // others copy it.
        SymmetryPlan p;
        p.used = true;
        p.unit_x = p.unit_y = 1;
        for (std::int64_t c = 0; c < per_chip; ++c) p.cores.push_back(c);
        for (std::int64_t chip = 0; chip < cfg.chips(); ++chip)
            p.like.push_back(chip < program_chips ? 0 : program_chips);
        for (std::int64_t c = 0; c < ncores; ++c) p.image.push_back(c % per_chip);
        return p;
    }
    // Else, when the program runs on every chip, a block of chips whose translates run alike
    // (docs/pods.md, "A block of chips as the unit"), fewest chips first: chip 0 alone again
    // (its groups need not be of whole chips, nor all translates of one another: only those
    // whose cores run as the same unit cores), then blocks of several chips, the first that
    // tiles the torus and meets the conditions. The reason, when none does, adds why the
    // smallest block of several chips whose cores' streams repeat does not.
    if (program_chips == cfg.chips()) {
        const std::int64_t nx = cfg.board.chips_x, ny = cfg.board.chips_y;
        const auto order = Topology(cfg.board, cfg.chip).ring_order();
        std::vector<int> ring_pos(order.size());
        for (std::size_t i = 0; i < order.size(); ++i)
            ring_pos[static_cast<std::size_t>(order[i])] = static_cast<int>(i);
        std::vector<Block> blocks;
        for (std::int64_t by = 1; by <= ny; ++by) {
            for (std::int64_t bx = 1; bx <= nx; ++bx) {
                if (nx % bx != 0 || ny % by != 0 || bx * by == nx * ny) continue;
                blocks.push_back(Block{bx, by, nx, ny, per_chip, cfg.board.wraps(0),
                                       cfg.board.wraps(1), &ring_pos});
            }
        }
        std::stable_sort(blocks.begin(), blocks.end(),
                         [](const Block& a, const Block& b) { return a.bx * a.by < b.bx * b.by; });
        std::string block_why;
        for (const Block& b : blocks) {
            bool streams_repeat = false;
            const std::string w = block_breaks_symmetry(program, b, streams_repeat);
            if (w.empty()) {
                SymmetryPlan p;
                p.used = true;
                p.unit_x = b.bx;
                p.unit_y = b.by;
                for (std::int64_t c = 0; c < ncores; ++c) {
                    p.image.push_back(b.image(c));
                    if (b.image(c) == c) p.cores.push_back(c);
                }
                for (std::int64_t chip = 0; chip < cfg.chips(); ++chip)
                    p.like.push_back(b.image(chip * per_chip) / per_chip);
                return p;
            }
            if (streams_repeat && block_why.empty() && b.bx * b.by > 1)
                block_why = fmt::format("; with a block of {} as the unit: {}", b.name(), w);
        }
        why += block_why;
    }
    return full(program, std::move(why));
}

}  // namespace tpusim
