#include "tpusim/config/topology.h"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

#include "tpusim/config/board_config.h"
#include "tpusim/config/ici_config.h"

namespace tpusim {

Topology::Topology(const BoardConfig& board, const ChipConfig& chip)
    : Topology(static_cast<int>(board.chips_x), static_cast<int>(board.chips_y), board.wraps(0),
               board.wraps(1), static_cast<int>(chip.cores_per_chip)) {}

Topology::Topology(int chips_x, int chips_y, bool wraparound, int cores_per_chip)
    : Topology(chips_x, chips_y, wraparound, wraparound, cores_per_chip) {}

Topology::Topology(int chips_x, int chips_y, bool wrap_x, bool wrap_y, int cores_per_chip)
    : nx_(chips_x), ny_(chips_y), wrap_{wrap_x, wrap_y}, cores_per_chip_(cores_per_chip) {
    if (nx_ < 1 || ny_ < 1 || cores_per_chip_ < 1) {
        throw std::invalid_argument("Topology: grid and cores per chip must be positive");
    }
    out_.assign(static_cast<std::size_t>(chips()) * 4, -1);
    const int size[2] = {nx_, ny_};
    for (int chip = 0; chip < chips(); ++chip) {
        const int pos[2] = {x_of(chip), y_of(chip)};
        for (int dim = 0; dim < 2; ++dim) {
            const int n = size[dim];
            if (n == 1) continue;
            for (int sign : {1, -1}) {
                int p = pos[dim] + sign;
                const bool wrap = p < 0 || p >= n;
                if (wrap && !wrap_[dim]) continue;
                p = (p + n) % n;
                const int dst = dim == 0 ? chip_at(p, pos[1]) : chip_at(pos[0], p);
                Link l{
                    chip, dst,
                    dim,  sign,
                    wrap, fmt::format("c{}{}{}", chip, sign > 0 ? '+' : '-', dim == 0 ? 'x' : 'y')};
                out_[static_cast<std::size_t>(chip * 4 + dim * 2 + (sign < 0))] =
                    static_cast<int>(links_.size());
                links_.push_back(std::move(l));
            }
        }
    }
}

const char* grid_kind(bool wrap_x, bool wrap_y) {
    if (wrap_x && wrap_y) return "torus";
    if (wrap_x) return "mesh wrapped along x";
    if (wrap_y) return "mesh wrapped along y";
    return "mesh";
}

int Topology::ports_needed(int chips_x, int chips_y, bool wrap_x, bool wrap_y) {
    // A mesh's inner chips have as many ports as a torus's; only the edges lose some.
    int n = 0;
    for (const auto& [size, wrap] : {std::pair{chips_x, wrap_x}, std::pair{chips_y, wrap_y}}) {
        if (size > 2 || (size == 2 && wrap))
            n += 2;
        else if (size == 2)
            n += 1;
    }
    return n;
}

std::string Topology::problem(const BoardConfig& board, const IciConfig& ici) {
    const int need = ports_needed(static_cast<int>(board.chips_x), static_cast<int>(board.chips_y),
                                  board.wraps(0), board.wraps(1));
    if (ici.links_per_chip < need) {
        return fmt::format(
            "a {} x {} {} needs {} ICI links per chip (+x, -x, +y, -y where the grid has "
            "them), got {}",
            board.chips_x, board.chips_y, grid_kind(board.wraps(0), board.wraps(1)), need,
            ici.links_per_chip);
    }
    return "";
}

int Topology::link_from(int chip, int dim, int sign) const {
    return out_[static_cast<std::size_t>(chip * 4 + dim * 2 + (sign < 0))];
}

void Topology::route_dim(int dim, int from, int to, int prefer_sign, int& chip,
                         std::vector<Hop>& out) const {
    const int n = dim == 0 ? nx_ : ny_;
    if (from == to) return;
    int sign = to > from ? 1 : -1;
    int hops = to > from ? to - from : from - to;
    if (wrap_[dim]) {
        const int fwd = ((to - from) % n + n) % n;
        const int bwd = n - fwd;
        sign = fwd < bwd ? 1 : (bwd < fwd ? -1 : (prefer_sign >= 0 ? 1 : -1));
        hops = sign > 0 ? fwd : bwd;
    }
    std::uint8_t vc = 0;  // dateline: after the wrap link a packet moves to VC 1
    for (int i = 0; i < hops; ++i) {
        const int id = link_from(chip, dim, sign);
        if (id < 0) throw std::logic_error("Topology: route leaves the grid");
        const Link& l = links_[static_cast<std::size_t>(id)];
        if (l.wrap) vc = 1;
        out.push_back(Hop{static_cast<std::uint32_t>(id), vc});
        chip = l.dst_chip;
    }
}

std::vector<Topology::Hop> Topology::route(int src_chip, int dst_chip, int prefer_sign) const {
    std::vector<Hop> hops;
    route_into(src_chip, dst_chip, prefer_sign, hops);
    return hops;
}

void Topology::route_into(int src_chip, int dst_chip, int prefer_sign,
                          std::vector<Hop>& out) const {
    out.clear();
    int chip = src_chip;
    route_dim(0, x_of(src_chip), x_of(dst_chip), prefer_sign, chip, out);
    route_dim(1, y_of(src_chip), y_of(dst_chip), prefer_sign, chip, out);
}

std::vector<int> Topology::ring_order() const {
    std::vector<int> order;
    if (nx_ == 1 || ny_ == 1 || (nx_ % 2 != 0 && ny_ % 2 != 0)) {
        // A line (a ring if wrapped), or odd x odd: row-major; the closing edge is multi-hop.
        for (int c = 0; c < chips(); ++c) order.push_back(c);
        return order;
    }
    // Hamiltonian cycle of a grid with an even side: along row 0, snake back through columns
    // 1..n-1 of the other rows, return along column 0. Transposed when only x is even.
    const bool even_y = ny_ % 2 == 0;
    const int a = even_y ? nx_ : ny_;  // length of the first row
    const int b = even_y ? ny_ : nx_;  // number of rows (even)
    auto at = [&](int i, int j) { return even_y ? chip_at(i, j) : chip_at(j, i); };
    for (int i = 0; i < a; ++i) order.push_back(at(i, 0));
    for (int j = 1; j < b; ++j) {
        if (j % 2 == 1) {
            for (int i = a - 1; i >= 1; --i) order.push_back(at(i, j));
        } else {
            for (int i = 1; i < a; ++i) order.push_back(at(i, j));
        }
    }
    for (int j = b - 1; j >= 1; --j) order.push_back(at(0, j));
    return order;
}

}  // namespace tpusim
