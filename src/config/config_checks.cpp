#include "config_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "tpusim/common/error.h"
#include "tpusim/common/types.h"
#include "tpusim/config/topology.h"

namespace tpusim {

namespace {

[[noreturn]] void fail(const std::map<std::string, std::string>& origin, const std::string& ptr,
                       const std::string& what) {
    throw InputError(config_origin(origin, ptr), ptr, what);
}

// One side of a relation between two values: its pointer and what it should have been.
struct Side {
    std::string ptr, what;
};

// The defaults are consistent, so at least one side was set by a file or an override. Blame
// the side that was set; when both were, the override (applied last) or else the first side.
[[noreturn]] void fail_relation(const std::map<std::string, std::string>& origin, const Side& first,
                                const Side& second) {
    const std::string o1 = config_origin(origin, first.ptr);
    const std::string o2 = config_origin(origin, second.ptr);
    const bool set1 = o1 != "<defaults>", set2 = o2 != "<defaults>";
    const bool blame_second = (set2 && !set1) || (set1 && set2 && o2.rfind("--set ", 0) == 0 &&
                                                  o1.rfind("--set ", 0) != 0);
    const Side& s = blame_second ? second : first;
    fail(origin, s.ptr, s.what);
}

// ICI wiring: every chip needs a link per neighbour direction of its grid (docs/ici.md).
void check_ici_topology(const TpuConfig& cfg, const std::map<std::string, std::string>& origin) {
    // A slice is cut out of its pod: it cannot be longer than the pod along an axis.
    for (const char* axis : {"x", "y"}) {
        const bool x = axis[0] == 'x';
        const std::int64_t n = x ? cfg.board.chips_x : cfg.board.chips_y;
        const std::int64_t pod = x ? cfg.board.pod_chips_x : cfg.board.pod_chips_y;
        if (pod != 0 && pod < n) {
            fail_relation(
                origin,
                {fmt::format("/board/pod_chips_{}", axis),
                 fmt::format("expected 0 (the board is the machine) or at least board.chips_{} "
                             "({}): a slice is cut out of its pod, got {}",
                             axis, n, pod)},
                {fmt::format("/board/chips_{}", axis),
                 fmt::format("expected at most board.pod_chips_{} ({}), the pod the slice is cut "
                             "from (set board.pod_chips_{} to 0 or to a larger pod), got {}",
                             axis, pod, axis, n)});
        }
    }
    const std::string why = Topology::problem(cfg.board, cfg.ici);
    if (!why.empty()) fail(origin, "/ici/links_per_chip", "expected enough links: " + why);
    if (cfg.ici.chunk_bytes < cfg.ici.packet_bytes) {
        fail(origin, "/ici/chunk_bytes",
             fmt::format("expected at least ici.packet_bytes ({}), got {}", cfg.ici.packet_bytes,
                         cfg.ici.chunk_bytes));
    }
}

}  // namespace

void check_relations(const TpuConfig& cfg, const std::map<std::string, std::string>& origin) {
    const auto& m = cfg.mxu;
    if (m.weight_load_rows_per_cycle > m.rows) {
        fail_relation(origin,
                      {"/mxu/weight_load_rows_per_cycle",
                       fmt::format("expected at most mxu.rows ({}), got {}", m.rows,
                                   m.weight_load_rows_per_cycle)},
                      {"/mxu/rows", fmt::format("expected at least mxu.weight_load_rows_per_cycle "
                                                "({}), got {}",
                                                m.weight_load_rows_per_cycle, m.rows)});
    }
    const auto& h = cfg.hbm;
    if (h.write_drain_low >= h.write_drain_high) {
        fail_relation(origin,
                      {"/hbm/write_drain_low",
                       fmt::format("expected less than hbm.write_drain_high ({}), got {}",
                                   h.write_drain_high, h.write_drain_low)},
                      {"/hbm/write_drain_high",
                       fmt::format("expected greater than hbm.write_drain_low ({}), got {}",
                                   h.write_drain_low, h.write_drain_high)});
    }
    if (h.timing.tRAS < h.timing.tRCD) {
        fail_relation(origin,
                      {"/hbm/timing/tRAS", fmt::format("expected at least tRCD ({}), got {}",
                                                       h.timing.tRCD, h.timing.tRAS)},
                      {"/hbm/timing/tRCD", fmt::format("expected at most tRAS ({}), got {}",
                                                       h.timing.tRAS, h.timing.tRCD)});
    }
    const std::int64_t burst_bits =
        h.channel_width_bits / h.pseudo_channels * h.timing.burst_length;
    if (h.row_bytes * 8 < burst_bits) {
        fail_relation(origin,
                      {"/hbm/row_bytes", fmt::format("expected a row to hold at least one burst "
                                                     "({} B), got {}",
                                                     burst_bits / 8, h.row_bytes)},
                      {"/hbm/timing/burst_length",
                       fmt::format("expected a burst ({} B) to fit in a row ({} B)", burst_bits / 8,
                                   h.row_bytes)});
    }
    if (cfg.hbm.timing.tREFI <= cfg.hbm.timing.tRFC + cfg.hbm.timing.tRP) {
        fail(origin, "/hbm/timing/tREFI",
             fmt::format("expected more than tRFC + tRP ({}) so that a bank can work between "
                         "refreshes, got {}",
                         cfg.hbm.timing.tRFC + cfg.hbm.timing.tRP, cfg.hbm.timing.tREFI));
    }
    // Address mapping: each field exactly once.
    const std::set<std::string> fields = {"ro", "ba", "bg", "co", "pc", "ch", "st"};
    std::set<std::string> seen;
    std::stringstream ss(cfg.hbm.address_mapping);
    std::string part;
    while (std::getline(ss, part, '-')) {
        if (!fields.count(part) || !seen.insert(part).second) {
            fail(origin, "/hbm/address_mapping",
                 fmt::format("expected each of ro, ba, bg, co, pc, ch, st once, separated by "
                             "'-', got \"{}\"",
                             cfg.hbm.address_mapping));
        }
    }
    if (seen.size() != fields.size()) {
        fail(origin, "/hbm/address_mapping",
             fmt::format("expected each of ro, ba, bg, co, pc, ch, st once, got \"{}\"",
                         cfg.hbm.address_mapping));
    }
    if (!is_power_of_two(static_cast<std::uint64_t>(cfg.hbm.stacks))) {
        fail(origin, "/hbm/stacks",
             fmt::format("expected a power of two (the address map uses bit fields), got {}",
                         cfg.hbm.stacks));
    }
    if (cfg.hbm.channels() % cfg.chip.cores_per_chip != 0 ||
        !is_power_of_two(
            static_cast<std::uint64_t>(cfg.hbm.channels() / cfg.chip.cores_per_chip))) {
        const std::string what = fmt::format(
            "expected the chip's {} HBM channels to split into a power of two per "
            "core between its {} cores",
            cfg.hbm.channels(), cfg.chip.cores_per_chip);
        fail_relation(origin, {"/hbm/channels_per_stack", what}, {"/chip/cores_per_chip", what});
    }
    check_ici_topology(cfg, origin);
}

}  // namespace tpusim
