#pragma once
// ICI topology of a board or slice: chips on a chips_x x chips_y grid, each with up to four
// off-chip links (+x, -x, +y, -y), each axis optionally wrapped into rings (a 2-D torus when
// both are). A v2-8 / v3-8 board is
// a 2 x 2 torus: +x and -x of a chip reach the same neighbour over two separate links, which
// is how the four links of each chip are used on a 4-chip board (docs/ici.md). Cores are
// numbered chip-major: core = chip * cores_per_chip + local index; chip = y * chips_x + x.
#include <cstdint>
#include <string>
#include <vector>

namespace tpusim {

struct BoardConfig;
struct ChipConfig;
struct IciConfig;

// "torus", "mesh", "mesh wrapped along x" / "... y": for messages.
const char* grid_kind(bool wrap_x, bool wrap_y);

class Topology {
 public:
    // One direction of one physical link.
    struct Link {
        int src_chip = 0, dst_chip = 0;
        int dim = 0;        // 0: x, 1: y
        int sign = 1;       // +1 or -1 along dim
        bool wrap = false;  // the torus wrap-around link of its ring (the dateline)
        std::string name;   // "c3+x"
    };
    // One hop of a route: the link and the virtual channel (0 before the dateline of the
    // current dimension, 1 after it) the packet occupies in the receiver's buffer.
    struct Hop {
        std::uint32_t link = 0;
        std::uint8_t vc = 0;
    };

    // Wrap-around along both axes, or along each as given; from a board, along the axes it
    // spans its pod's whole side (BoardConfig::wraps).
    Topology(int chips_x, int chips_y, bool wraparound, int cores_per_chip);
    Topology(int chips_x, int chips_y, bool wrap_x, bool wrap_y, int cores_per_chip);
    Topology(const BoardConfig& board, const ChipConfig& chip);

    // Why the ICI cannot wire this board ("" if it can): fewer links per chip than ports.
    static std::string problem(const BoardConfig& board, const IciConfig& ici);
    // Off-chip links a chip of this grid needs (2 per dimension longer than one chip).
    static int ports_needed(int chips_x, int chips_y, bool wrap_x, bool wrap_y);

    int chips_x() const { return nx_; }
    int chips_y() const { return ny_; }
    // Whether the ring along dim (0: x, 1: y) is closed by a wrap-around link.
    bool wraps(int dim) const { return wrap_[dim != 0]; }
    int chips() const { return nx_ * ny_; }
    int cores_per_chip() const { return cores_per_chip_; }
    int cores() const { return chips() * cores_per_chip_; }
    int chip_of_core(int core) const { return core / cores_per_chip_; }
    int x_of(int chip) const { return chip % nx_; }
    int y_of(int chip) const { return chip / nx_; }
    int chip_at(int x, int y) const { return y * nx_ + x; }

    const std::vector<Link>& links() const { return links_; }
    // Link leaving `chip` along dim in direction sign, or -1 if there is none.
    int link_from(int chip, int dim, int sign) const;
    // Dimension-ordered route (x first, then y) along shortest directions; when both
    // directions of a torus ring are equally short, `prefer_sign` picks one (a bidirectional
    // ring algorithm uses both links of a 2-chip ring that way). Empty for src == dst.
    std::vector<Hop> route(int src_chip, int dst_chip, int prefer_sign = 1) const;
    // The same route written into `out` (cleared first; its storage is reused).
    void route_into(int src_chip, int dst_chip, int prefer_sign, std::vector<Hop>& out) const;
    // A cyclic order of all chips in which consecutive chips (and last -> first) are
    // neighbours whenever the grid allows it (a Hamiltonian cycle of the torus / mesh).
    std::vector<int> ring_order() const;

 private:
    void route_dim(int dim, int from, int to, int prefer_sign, int& chip,
                   std::vector<Hop>& out) const;

    int nx_, ny_;
    bool wrap_[2];
    int cores_per_chip_;
    std::vector<Link> links_;
    std::vector<int> out_;  // chip * 4 + dim * 2 + (sign < 0) -> link id or -1
};

}  // namespace tpusim
