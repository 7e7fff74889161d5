#include "tpusim/program/collectives.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "tpusim/common/error.h"
#include "tpusim/config/ici_config.h"
#include "tpusim/config/topology.h"

namespace tpusim {

namespace {

[[noreturn]] void bad(const std::string& what) { throw InputError("collective", "", what); }

// How buffers are cut into blocks (ici.shard_split). padded: every block ceil(elements / n)
// whole elements, as XLA shards a dimension (HloSharding::TileShape), the buffer padded to n
// of them, so a core's blocks do not depend on its place in a ring; exact: to the byte, block i
// of n a byte longer than the last ones where n does not divide the buffer.
struct Split {
    ShardSplit rule = ShardSplit::Padded;
    Bytes element = 4;

    Bytes block(Bytes total, int n, int i) const {
        const auto un = static_cast<Bytes>(n);
        if (rule == ShardSplit::Padded) {
            const Bytes elements = (total + element - 1) / element;
            return (elements + un - 1) / un * element;
        }
        const auto ui = static_cast<Bytes>(i);
        return total * (ui + 1) / un - total * ui / un;
    }
};

// One ring phase over `ring` (participant indices in ring order), each member holding
// `bytes`: reduce-scatter (member k ends owning block k+1) or all-gather (member k starts
// owning block k+1), n-1 steps from step `first`. Two calls with the same `first` run two
// rings at once (the two directions of a bidirectional ring).
void ring_phase(Schedule& s, const Split& split, const std::vector<int>& ring, Bytes bytes,
                bool reduce_scatter, int sign, std::size_t first) {
    const int n = static_cast<int>(ring.size());
    if (n < 2) return;
    for (int p : ring) {
        auto& steps = s.cores[static_cast<std::size_t>(p)].steps;
        steps.resize(std::max(steps.size(), first + static_cast<std::size_t>(n - 1)));
    }
    for (int st = 0; st < n - 1; ++st) {
        const std::size_t step = first + static_cast<std::size_t>(st);
        for (int k = 0; k < n; ++k) {
            const int idx = ((reduce_scatter ? k - st : k + 1 - st) % n + n) % n;
            const Bytes b = split.block(bytes, n, idx);
            const int from = ring[static_cast<std::size_t>(k)];
            const int to = ring[static_cast<std::size_t>((k + 1) % n)];
            s.cores[static_cast<std::size_t>(from)].steps[step].sends.push_back(
                Transfer{to, b, static_cast<int>(step), sign});
            Step& r = s.cores[static_cast<std::size_t>(to)].steps[step];
            r.recv_bytes += b;
            r.reduce = r.reduce || reduce_scatter;
        }
    }
}

std::size_t steps_so_far(const Schedule& s) {
    return s.cores.empty() ? 0 : s.cores[0].steps.size();
}

void check_core(const Topology& topo, int core) {
    if (core < 0 || core >= topo.cores()) {
        bad(fmt::format("core {} is outside the slice (cores 0..{})", core, topo.cores() - 1));
    }
}

// Participants sorted by core id; ring order follows the topology's chip cycle.
Schedule participants(const std::vector<int>& group, const Topology& topo, std::vector<int>& ring) {
    Schedule s;
    std::vector<int> cores = group;
    if (cores.empty()) {
        for (int c = 0; c < topo.cores(); ++c) cores.push_back(c);
    }
    std::set<int> seen;
    for (int c : cores) {
        check_core(topo, c);
        if (!seen.insert(c).second) bad(fmt::format("core {} appears twice in the group", c));
    }
    std::sort(cores.begin(), cores.end());
    std::vector<int> pos(static_cast<std::size_t>(topo.chips()));
    const auto order = topo.ring_order();
    for (std::size_t i = 0; i < order.size(); ++i)
        pos[static_cast<std::size_t>(order[i])] = static_cast<int>(i);
    for (int c : cores) s.cores.push_back(CoreSchedule{c, {}});
    ring.resize(cores.size());
    for (std::size_t i = 0; i < ring.size(); ++i) ring[i] = static_cast<int>(i);
    std::stable_sort(ring.begin(), ring.end(), [&](int a, int b) {
        const int ca = cores[static_cast<std::size_t>(a)], cb = cores[static_cast<std::size_t>(b)];
        return pos[static_cast<std::size_t>(topo.chip_of_core(ca))] <
               pos[static_cast<std::size_t>(topo.chip_of_core(cb))];
    });
    return s;
}

void lower_torus2d(Schedule& s, const Split& split, const Topology& topo, Bytes bytes,
                   bool y_first) {
    const int C = topo.cores_per_chip(), X = topo.chips_x(), Y = topo.chips_y();
    auto core = [&](int x, int y, int c) { return topo.chip_at(x, y) * C + c; };
    // Every step the phases below make, reserved at once (they grow the lists phase by phase).
    const auto ring_steps = [](int n) { return static_cast<std::size_t>(std::max(n - 1, 0)); };
    const std::size_t total = steps_so_far(s) + 2 * (ring_steps(C) + ring_steps(X) + ring_steps(Y));
    for (CoreSchedule& cs : s.cores) cs.steps.reserve(total);
    // Phase A: reduce-scatter between the cores of each chip (on-chip turnaround).
    std::size_t first = steps_so_far(s);
    for (int chip = 0; chip < topo.chips(); ++chip) {
        std::vector<int> ring;
        for (int c = 0; c < C; ++c) ring.push_back(chip * C + c);
        ring_phase(s, split, ring, bytes, true, 1, first);
    }
    std::vector<Bytes> shard(static_cast<std::size_t>(C));
    for (int c = 0; c < C; ++c)
        shard[static_cast<std::size_t>(c)] = split.block(bytes, C, (c + 1) % C);
    // The two halves of a bidirectional ring: blocks 0 and 1 of the buffer split two ways.
    auto half = [&](Bytes b, int which) { return split.block(b, 2, which); };
    // Per dimension: a bidirectional ring, half of the data each way; what each core keeps
    // after x is the buffer of the y phase.
    auto bidir = [&](bool rs, int dim, auto size_of) {
        const std::size_t f = steps_so_far(s);
        const int n = dim == 0 ? X : Y, m = dim == 0 ? Y : X;
        for (int other = 0; other < m; ++other) {
            for (int c = 0; c < C; ++c) {
                std::vector<int> plus;
                for (int i = 0; i < n; ++i)
                    plus.push_back(dim == 0 ? core(i, other, c) : core(other, i, c));
                std::vector<int> minus(plus.rbegin(), plus.rend());
                const Bytes b = size_of(other, c);
                ring_phase(s, split, plus, half(b, 0), rs, 1, f);
                ring_phase(s, split, minus, half(b, 1), rs, -1, f);
            }
        }
    };
    // After a reduce-scatter along a ring of n, the core at position i owns block i+1 of the
    // + half and, being at position n-1-i of the reversed ring, block n-i of the - half.
    auto kept = [&](Bytes b, int n, int i) {
        if (n < 2) return b;
        return split.block(half(b, 0), n, (i + 1) % n) + split.block(half(b, 1), n, (n - i) % n);
    };
    auto first_size = [&](int, int c) { return shard[static_cast<std::size_t>(c)]; };
    // bidir's `other` is the coordinate along the other dimension, i.e. the position the
    // core had in the first dimension's ring.
    auto second_size = [&](int other, int c) {
        return kept(shard[static_cast<std::size_t>(c)], y_first ? Y : X, other);
    };
    const int d0 = y_first ? 1 : 0, d1 = 1 - d0;
    bidir(true, d0, first_size);
    bidir(true, d1, second_size);
    bidir(false, d1, second_size);
    bidir(false, d0, first_size);
    first = steps_so_far(s);
    for (int chip = 0; chip < topo.chips(); ++chip) {
        std::vector<int> ring;
        for (int c = 0; c < C; ++c) ring.push_back(chip * C + c);
        ring_phase(s, split, ring, bytes, false, 1, first);
    }
}

}  // namespace

CollectiveKind parse_collective_kind(const std::string& name) {
    static const std::map<std::string, CollectiveKind> kinds = {
        {"all_reduce", CollectiveKind::AllReduce},
        {"reduce_scatter", CollectiveKind::ReduceScatter},
        {"all_gather", CollectiveKind::AllGather},
        {"all_to_all", CollectiveKind::AllToAll},
        {"collective_permute", CollectiveKind::CollectivePermute},
        {"send_recv", CollectiveKind::SendRecv}};
    const auto it = kinds.find(name);
    if (it == kinds.end()) {
        bad(
            fmt::format("unknown collective \"{}\"; expected all_reduce, reduce_scatter, "
                        "all_gather, all_to_all, collective_permute or send_recv",
                        name));
    }
    return it->second;
}

CollectiveKind collective_kind(OpKind kind) {
    switch (kind) {
        case OpKind::AllReduce:
            return CollectiveKind::AllReduce;
        case OpKind::ReduceScatter:
            return CollectiveKind::ReduceScatter;
        case OpKind::AllGather:
            return CollectiveKind::AllGather;
        case OpKind::AllToAll:
            return CollectiveKind::AllToAll;
        case OpKind::CollectivePermute:
            return CollectiveKind::CollectivePermute;
        case OpKind::Send:
        case OpKind::Recv:
            return CollectiveKind::SendRecv;
        default:
            break;
    }
    throw std::logic_error(std::string("not a collective: ") + op_kind_name(kind));
}

const char* collective_kind_name(CollectiveKind kind) {
    switch (kind) {
        case CollectiveKind::AllReduce:
            return "all_reduce";
        case CollectiveKind::ReduceScatter:
            return "reduce_scatter";
        case CollectiveKind::AllGather:
            return "all_gather";
        case CollectiveKind::AllToAll:
            return "all_to_all";
        case CollectiveKind::CollectivePermute:
            return "collective_permute";
        case CollectiveKind::SendRecv:
            return "send_recv";
    }
    return "?";
}

Bytes dtype_bytes(const std::string& dtype) {
    static const std::map<std::string, Bytes> sizes = {
        {"f32", 4}, {"fp32", 4}, {"float32", 4}, {"s32", 4},  {"int32", 4},
        {"u32", 4}, {"bf16", 2}, {"f16", 2},     {"fp16", 2}, {"s16", 2},
        {"s8", 1},  {"int8", 1}, {"u8", 1},      {"f64", 8},  {"s64", 8}};
    const auto it = sizes.find(dtype);
    if (it == sizes.end()) bad(fmt::format("unknown dtype \"{}\"", dtype));
    return it->second;
}

LoweredCollective lower_collective(const CollectiveSpec& spec, const Topology& topo,
                                   const IciConfig& ici) {
    if (spec.element_bytes == 0) bad("element size must be positive");
    Schedule s;
    std::vector<int> ring;
    const bool pairwise =
        spec.kind == CollectiveKind::CollectivePermute || spec.kind == CollectiveKind::SendRecv;
    if (pairwise) {
        if (spec.kind == CollectiveKind::SendRecv && spec.pairs.size() != 1) {
            bad(fmt::format("send_recv takes exactly one (source, destination) pair, got {}",
                            spec.pairs.size()));
        }
        if (spec.pairs.empty()) bad("collective_permute needs at least one pair");
        std::set<int> srcs, dsts, all;
        for (const auto& [a, b] : spec.pairs) {
            check_core(topo, a);
            check_core(topo, b);
            if (!srcs.insert(a).second) bad(fmt::format("core {} is a source twice", a));
            if (!dsts.insert(b).second) bad(fmt::format("core {} is a destination twice", b));
            all.insert(a);
            all.insert(b);
        }
        s = participants(std::vector<int>(all.begin(), all.end()), topo, ring);
        std::map<int, int> index;
        for (std::size_t i = 0; i < s.cores.size(); ++i)
            index[s.cores[i].core] = static_cast<int>(i);
        for (auto& c : s.cores) c.steps.resize(1);
        for (const auto& [a, b] : spec.pairs) {
            s.cores[static_cast<std::size_t>(index[a])].steps[0].sends.push_back(
                Transfer{index[b], spec.bytes, 0, 1});
            s.cores[static_cast<std::size_t>(index[b])].steps[0].recv_bytes += spec.bytes;
        }
    } else {
        s = participants(spec.group, topo, ring);
    }
    s.name = collective_kind_name(spec.kind);
    s.element_bytes = spec.element_bytes;
    const Split split{ici.shard_split, std::max<Bytes>(spec.element_bytes, 1)};
    const int n = static_cast<int>(s.cores.size());
    switch (spec.kind) {
        case CollectiveKind::AllReduce: {
            const auto alg = spec.algorithm.value_or(ici.all_reduce_algorithm);
            if (alg == AllReduceAlgorithm::Torus2d && n == topo.cores()) {
                // Participants are all cores in id order, so participant index == core id.
                const bool both = topo.chips_x() > 1 && topo.chips_y() > 1;
                const int per_order =
                    spec.pieces > 0 ? spec.pieces : static_cast<int>(ici.all_reduce_pieces);
                const int pieces = per_order * (both ? 2 : 1);
                LoweredCollective out{s.name, {}, ici.collective_setup_us};
                for (int i = 0; i < pieces; ++i) {
                    Schedule piece = s;
                    lower_torus2d(piece, split, topo, split.block(spec.bytes, pieces, i),
                                  both && i % 2 == 1);
                    out.streams.push_back(std::move(piece));
                }
                return out;
            } else {
                ring_phase(s, split, ring, spec.bytes, true, 1, 0);
                ring_phase(s, split, ring, spec.bytes, false, 1, steps_so_far(s));
            }
            break;
        }
        case CollectiveKind::ReduceScatter:
            ring_phase(s, split, ring, spec.bytes, true, 1, 0);
            break;
        case CollectiveKind::AllGather:
            ring_phase(s, split, ring, spec.bytes, false, 1, 0);
            break;
        case CollectiveKind::AllToAll:
            for (auto& c : s.cores) c.steps.resize(1);
            for (int p = 0; p < n; ++p) {
                for (int q = 0; q < n; ++q) {
                    if (p == q) continue;
                    const Bytes b = split.block(spec.bytes, n, q);
                    s.cores[static_cast<std::size_t>(p)].steps[0].sends.push_back(
                        Transfer{q, b, 0, 1});
                    s.cores[static_cast<std::size_t>(q)].steps[0].recv_bytes += b;
                }
            }
            break;
        case CollectiveKind::CollectivePermute:
        case CollectiveKind::SendRecv:
            break;
    }
    const bool point_to_point =
        spec.kind == CollectiveKind::CollectivePermute || spec.kind == CollectiveKind::SendRecv;
    return LoweredCollective{
        s.name, {std::move(s)}, point_to_point ? 0.0 : ici.collective_setup_us};
}

}  // namespace tpusim
