#include "arch/ici/ici_symmetry.h"

#include <stdexcept>

namespace tpusim {

namespace {

// Every stream has every core of the slice as its participants, in core order (participant
// index == core id), which is what a translation can map onto itself.
bool all_cores_in_order(const LoweredCollective& c, const Topology& topo) {
    if (c.streams.empty()) return false;
    for (const Schedule& s : c.streams) {
        if (s.cores.size() != static_cast<std::size_t>(topo.cores())) return false;
        for (std::size_t i = 0; i < s.cores.size(); ++i) {
            if (s.cores[i].core != static_cast<int>(i)) return false;
        }
    }
    return true;
}

// The core `core` moves to under the translation by (dx, dy) chips.
int translated(const Topology& topo, int core, int dx, int dy) {
    const int per = topo.cores_per_chip();
    const int chip = core / per;
    const int x = (topo.x_of(chip) + dx) % topo.chips_x();
    const int y = (topo.y_of(chip) + dy) % topo.chips_y();
    return topo.chip_at(x, y) * per + core % per;
}

// Whether the core at every position runs the schedule of the core (dx, dy) chips further,
// with the destinations translated back: the stream is the same after the translation.
// `moved`: translated() of every core (participant index == core id).
bool invariant(const Schedule& s, const std::vector<int>& moved) {
    for (std::size_t p = 0; p < s.cores.size(); ++p) {
        const int q = moved[p];
        const auto& a = s.cores[p].steps;
        const auto& b = s.cores[static_cast<std::size_t>(q)].steps;
        if (a.size() != b.size()) return false;
        for (std::size_t i = 0; i < a.size(); ++i) {
            const Step& sa = a[i];
            const Step& sb = b[i];
            if (sa.recv_bytes != sb.recv_bytes || sa.reduce != sb.reduce ||
                sa.sends.size() != sb.sends.size())
                return false;
            for (std::size_t j = 0; j < sa.sends.size(); ++j) {
                const Transfer& ta = sa.sends[j];
                const Transfer& tb = sb.sends[j];
                if (tb.dst != moved[static_cast<std::size_t>(ta.dst)] || ta.bytes != tb.bytes ||
                    ta.dst_step != tb.dst_step || ta.prefer_sign != tb.prefer_sign)
                    return false;
            }
        }
    }
    return true;
}

bool invariant_all(const LoweredCollective& c, const Topology& topo, int dx, int dy) {
    std::vector<int> moved(static_cast<std::size_t>(topo.cores()));
    for (int core = 0; core < topo.cores(); ++core)
        moved[static_cast<std::size_t>(core)] = translated(topo, core, dx, dy);
    for (const Schedule& s : c.streams) {
        if (!invariant(s, moved)) return false;
    }
    return true;
}

// Every transfer of the tile's cores stays on chip or crosses one link, and the tile torus
// routes it over the link in the same direction: along a side of 3 or more a neighbour is
// one way round; along a side of 2 (cut from a longer ring) both ways are one hop and the
// transfer's preferred direction must be the one it takes on the full torus.
bool routes_repeat(const LoweredCollective& c, const Topology& topo, TorusTile tile) {
    const int per = topo.cores_per_chip();
    for (const Schedule& s : c.streams) {
        for (const CoreSchedule& cs : s.cores) {
            const int chip = cs.core / per;
            if (topo.x_of(chip) >= tile.x || topo.y_of(chip) >= tile.y) continue;
            for (const Step& st : cs.steps) {
                for (const Transfer& t : st.sends) {
                    const int dst_chip = t.dst / per;
                    if (dst_chip == chip) continue;
                    const auto route = topo.route(chip, dst_chip, t.prefer_sign);
                    if (route.size() != 1) return false;
                    const Topology::Link& l = topo.links()[route.front().link];
                    const int side = l.dim == 0 ? tile.x : tile.y;
                    const int full = l.dim == 0 ? topo.chips_x() : topo.chips_y();
                    if (side == 2 && full > 2 && l.sign != (t.prefer_sign >= 0 ? 1 : -1))
                        return false;
                }
            }
        }
    }
    return true;
}

// Tile sides to try along a ring of n chips, smallest first: the divisors of n from 2 up, and
// n itself (a side of 1 would turn a neighbour into the chip itself).
std::vector<int> sides(int n) {
    std::vector<int> out;
    for (int t = 2; t < n; ++t) {
        if (n % t == 0) out.push_back(t);
    }
    out.push_back(n);
    return out;
}

// Only on a torus: on a board that wraps along one axis only (a v3-1024, 16 x 32 chips of the
// 32 x 32 pod) the torus all-reduce does not run alike on translates along the wrapped axis
// even where its schedule repeats them (its multi-hop rings along the other axis make the rows
// finish apart), so no tile is exact there; a mesh has no translation at all.
bool torus(const Topology& topo) { return topo.wraps(0) && topo.wraps(1); }

}  // namespace

std::optional<TorusTile> symmetric_tile(const LoweredCollective& c, const Topology& topo) {
    if (!torus(topo) || !all_cores_in_order(c, topo)) return std::nullopt;
    TorusTile tile{topo.chips_x(), topo.chips_y()};
    for (int t : sides(topo.chips_x())) {
        if (t == topo.chips_x() || invariant_all(c, topo, t, 0)) {
            tile.x = t;
            break;
        }
    }
    for (int t : sides(topo.chips_y())) {
        if (t == topo.chips_y() || invariant_all(c, topo, 0, t)) {
            tile.y = t;
            break;
        }
    }
    if (tile.x == topo.chips_x() && tile.y == topo.chips_y()) return std::nullopt;
    if (!routes_repeat(c, topo, tile)) return std::nullopt;
    return tile;
}

bool repeats_on_tile(const LoweredCollective& c, const Topology& topo, TorusTile tile) {
    if (!torus(topo) || !all_cores_in_order(c, topo)) return false;
    if (tile.x < topo.chips_x() && !invariant_all(c, topo, tile.x, 0)) return false;
    if (tile.y < topo.chips_y() && !invariant_all(c, topo, 0, tile.y)) return false;
    return routes_repeat(c, topo, tile);
}

int tile_core(const Topology& topo, const Topology& tile_topo, int core) {
    const int per = topo.cores_per_chip();
    const int chip = core / per;
    const int x = topo.x_of(chip) % tile_topo.chips_x();
    const int y = topo.y_of(chip) % tile_topo.chips_y();
    return tile_topo.chip_at(x, y) * per + core % per;
}

LoweredCollective fold_onto_tile(const LoweredCollective& c, const Topology& topo,
                                 const Topology& tile_topo) {
    const int per = topo.cores_per_chip();
    LoweredCollective out{c.name, {}, c.setup_us};
    for (const Schedule& s : c.streams) {
        Schedule f{s.name, {}, s.element_bytes};
        for (int tc = 0; tc < tile_topo.cores(); ++tc) {
            const int tchip = tc / per;
            const int full =
                topo.chip_at(tile_topo.x_of(tchip), tile_topo.y_of(tchip)) * per + tc % per;
            CoreSchedule cs = s.cores[static_cast<std::size_t>(full)];
            cs.core = tc;
            for (Step& st : cs.steps) {
                for (Transfer& t : st.sends) t.dst = tile_core(topo, tile_topo, t.dst);
            }
            f.cores.push_back(std::move(cs));
        }
        out.streams.push_back(std::move(f));
    }
    return out;
}

std::vector<std::size_t> tile_links(const Topology& topo, const Topology& tile_topo) {
    std::vector<std::size_t> out;
    out.reserve(topo.links().size());
    for (const Topology::Link& l : topo.links()) {
        const int x = topo.x_of(l.src_chip) % tile_topo.chips_x();
        const int y = topo.y_of(l.src_chip) % tile_topo.chips_y();
        const int id = tile_topo.link_from(tile_topo.chip_at(x, y), l.dim, l.sign);
        if (id < 0) throw std::logic_error("tile_links: the tile torus lacks a link");
        out.push_back(static_cast<std::size_t>(id));
    }
    return out;
}

}  // namespace tpusim
