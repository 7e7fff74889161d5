#include "config_checks.h"

#include <algorithm>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "tpusim/arch/topology.h"
#include "tpusim/common/error.h"

namespace tpusim {

namespace {

[[noreturn]] void fail(const std::map<std::string, std::string>& origin, const std::string& ptr,
                       const std::string& what) {
    throw InputError(config_origin(origin, ptr), ptr, what);
}

// ICI wiring: every chip needs a link per neighbour direction of its grid (docs/ici.md).
void check_ici_topology(const TpuConfig& cfg, const std::map<std::string, std::string>& origin) {
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
    if (cfg.mxu.weight_load_rows_per_cycle > cfg.mxu.rows) {
        fail(origin, "/mxu/weight_load_rows_per_cycle",
             fmt::format("expected at most mxu.rows ({}), got {}", cfg.mxu.rows,
                         cfg.mxu.weight_load_rows_per_cycle));
    }
    if (cfg.hbm.write_drain_low >= cfg.hbm.write_drain_high) {
        fail(origin, "/hbm/write_drain_low",
             fmt::format("expected less than hbm.write_drain_high ({}), got {}",
                         cfg.hbm.write_drain_high, cfg.hbm.write_drain_low));
    }
    if (cfg.hbm.timing.tRAS < cfg.hbm.timing.tRCD) {
        fail(origin, "/hbm/timing/tRAS",
             fmt::format("expected at least tRCD ({}), got {}", cfg.hbm.timing.tRCD,
                         cfg.hbm.timing.tRAS));
    }
    if (cfg.hbm.row_bytes * 8 < cfg.hbm.channel_width_bits / cfg.hbm.pseudo_channels *
                                    cfg.hbm.timing.burst_length) {
        fail(origin, "/hbm/row_bytes", "expected a row to hold at least one burst");
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
    if (cfg.hbm.channels() % cfg.chip.cores_per_chip != 0) {
        fail(origin, "/hbm/channels_per_stack",
             fmt::format("expected the chip's {} channels to split evenly between its {} cores",
                         cfg.hbm.channels(), cfg.chip.cores_per_chip));
    }
    check_ici_topology(cfg, origin);
}

}  // namespace tpusim
