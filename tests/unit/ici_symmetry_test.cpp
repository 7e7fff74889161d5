// Symmetric collectives (docs/ici.md): a torus collective that repeats a tile of the torus is
// simulated on the tile alone, and everything the engine tells and counts is what the full
// simulation of every link tells and counts: each collective's end cycle, in the same order,
// every link's bytes, trains and busy time, the reduced bytes. Checked here on v3-32 (4 x 4)
// and v3-128 (8 x 8) as tori, v3-32 wrapped along y only and v3-128 as shipped (a mesh: cut
// from the 32 x 32 pod, it has no wrap-around links) against the same engine with the fold
// off, for symmetric collectives, irregular ones (fallback), a mix in flight at once (the
// phase runs again) and one started from another's completion.
#include "arch/ici/ici_symmetry.h"

#include <catch2/catch.hpp>
#include <numeric>
#include <ostream>
#include <string>
#include <vector>

#include "../completion_log.h"
#include "../test_util.h"
#include "tpusim/arch/ici/ici_engine.h"
#include "tpusim/config/tpu_config.h"

using namespace tpusim;

namespace {

CollectiveSpec all_reduce(Bytes bytes) {
    CollectiveSpec s;
    s.bytes = bytes;
    s.algorithm = AllReduceAlgorithm::Torus2d;
    return s;
}

// A board of the tests: a config file and overrides of its wrap-around. The v3-32 and v3-128
// slices are meshes as cut from the v3 pod (docs/pods.md, "Wrap-around"); as a pod of their
// own (board.pod_chips_x/y = 0) they are tori; with a pod as high as the slice and wider, the
// slice wraps along y only (as a v3-1024 does along its 32 chips): no tile is used there
// (src/arch/ici/ici_symmetry.cpp says why), every link is simulated.
struct FoldBoard {
    std::string config;
    std::vector<std::string> set;
};
std::ostream& operator<<(std::ostream& os, const FoldBoard& b) {
    os << b.config;
    for (const auto& s : b.set) os << " --set " << s;
    return os;
}
// The boards cut buffers to the byte (ici.shard_split=exact), so that a size that n does not
// divide gives blocks that differ from core to core, the irregular collectives that the
// fallbacks below need; with the default padded split every block of a torus all-reduce is
// the same size and every size repeats the 2 x 2 tile (the last test cases).
const std::string kExact = "ici.shard_split=exact";
const FoldBoard kTorus32{"tpu_v3_32.json", {"board.pod_chips_x=0", "board.pod_chips_y=0", kExact}};
const FoldBoard kTorus128{"tpu_v3_128.json",
                          {"board.pod_chips_x=0", "board.pod_chips_y=0", kExact}};
const FoldBoard kWrapY32{"tpu_v3_32.json", {"board.pod_chips_x=32", "board.pod_chips_y=4", kExact}};
const FoldBoard kMesh128{"tpu_v3_128.json", {kExact}};
const FoldBoard kPadded32{"tpu_v3_32.json", {"board.pod_chips_x=0", "board.pod_chips_y=0"}};
const FoldBoard kPadded128{"tpu_v3_128.json", {"board.pod_chips_x=0", "board.pod_chips_y=0"}};

struct Start {
    CollectiveSpec spec;
    Cycle at = 0;
};

// Starts another collective when the first one it is told of ends (a caller that starts work
// from its completion).
struct Chain final : CompletionIf {
    IciEngine* engine = nullptr;
    const Topology* topo = nullptr;
    const IciConfig* ici = nullptr;
    CollectiveSpec next;
    test::CompletionLog log;
    bool started = false;
    void complete(std::uint64_t tag, Cycle at) override {
        log.complete(tag, at);
        if (started) return;
        started = true;
        engine->start(lower_collective(next, *topo, *ici), at, log.to(100));
    }
};

struct Outcome {
    std::vector<std::pair<std::uint64_t, Cycle>> ends;
    std::vector<IciFabric::LinkCounters> links;
    Bytes reduced = 0;
    Cycle last = 0;
    std::size_t folded = 0, unfolded = 0;
};

// Runs `starts` (in order, each at its cycle) on a fresh engine of `config`; with `chain`, the
// first collective to end starts `chain` from its completion.
Outcome simulate(const FoldBoard& board, bool fold, const std::vector<Start>& starts,
                 const CollectiveSpec* chain = nullptr) {
    std::vector<std::string> set = board.set;
    set.push_back("ici.tick_order=by_link");
    set.push_back(std::string("ici.fold_symmetric=") + (fold ? "true" : "false"));
    const TpuConfig cfg = load_config(test::config_path(board.config), set);
    const Topology topo(cfg.board, cfg.chip);
    const AnalyticalReductionCost cost(cfg.vpu, cfg.hbm, cfg.chip);
    IciEngine engine(topo, cfg.ici, cfg.chip.clock_mhz, cost);
    Chain told;
    told.engine = &engine;
    told.topo = &topo;
    told.ici = &cfg.ici;
    if (chain) {
        told.next = *chain;
    } else {
        told.started = true;
    }
    for (std::size_t i = 0; i < starts.size(); ++i) {
        engine.run_until(starts[i].at);
        engine.start(lower_collective(starts[i].spec, topo, cfg.ici), starts[i].at,
                     ReplyTo{&told, i});
    }
    Outcome o;
    o.last = engine.run();
    o.ends = told.log.order;
    for (std::size_t l = 0; l < topo.links().size(); ++l)
        o.links.push_back(engine.fabric().link_counters(l));
    o.reduced = engine.reduced_bytes();
    o.folded = engine.folded_collectives();
    o.unfolded = engine.unfolded_phases();
    return o;
}

void require_same(const Outcome& a, const Outcome& b) {
    REQUIRE(a.ends == b.ends);
    REQUIRE(a.last == b.last);
    REQUIRE(a.reduced == b.reduced);
    REQUIRE(a.links.size() == b.links.size());
    for (std::size_t l = 0; l < a.links.size(); ++l) {
        INFO("link " << l);
        REQUIRE(a.links[l].bytes == b.links[l].bytes);
        REQUIRE(a.links[l].trains == b.links[l].trains);
        REQUIRE(a.links[l].busy_ticks == b.links[l].busy_ticks);
    }
}

std::optional<TorusTile> tile_of(const FoldBoard& board, Bytes bytes) {
    const TpuConfig cfg = load_config(test::config_path(board.config), board.set);
    const Topology topo(cfg.board, cfg.chip);
    return symmetric_tile(lower_collective(all_reduce(bytes), topo, cfg.ici), topo);
}

// Sizes: 28 MiB (every block of every ring the same: the smallest tile, 2 x 2); BERT-base's
// 28,351,488-byte gradient group; 1,000,003 bytes (odd: blocks differ by a byte from core to
// core, no tile repeats).
constexpr Bytes kEven = 28 * kMiB, kBert = 28351488, kOdd = 1000003;

}  // namespace

TEST_CASE("symmetric tiles: the smallest tile the torus all-reduce repeats", "[ici][symmetry]") {
    for (const FoldBoard& board : {kTorus32, kTorus128}) {
        INFO(board);
        const auto even = tile_of(board, kEven);
        REQUIRE(even);
        CHECK(even->x == 2);
        CHECK(even->y == 2);
        CHECK_FALSE(tile_of(board, kOdd));
    }
    // Not a torus: wrapped along y only, or a mesh.
    CHECK_FALSE(tile_of(kWrapY32, kEven));
    CHECK_FALSE(tile_of(kMesh128, kEven));
    // The ring all-reduce of the -8 boards follows one Hamiltonian cycle: no translation.
    const TpuConfig cfg = load_config(test::config_path("tpu_v3_8.json"), {});
    const Topology topo(cfg.board, cfg.chip);
    CollectiveSpec ring = all_reduce(kEven);
    ring.algorithm = AllReduceAlgorithm::Ring;
    CHECK_FALSE(symmetric_tile(lower_collective(ring, topo, cfg.ici), topo));
}

TEST_CASE("symmetric collectives on a tile equal the simulation of every link", "[ici][symmetry]") {
    // The boards that are not tori check that the torus all-reduce, whose rings close over
    // several hops there, runs to its end (trains of a ring step wait behind others passing
    // through: tests/unit/ici_fabric_test.cpp) and that nothing is folded.
    for (const FoldBoard& config : {kTorus32, kTorus128, kWrapY32, kMesh128}) {
        for (Bytes bytes : {kEven, kBert, kOdd}) {
            INFO(config << ", " << bytes << " B");
            const std::vector<Start> one{{all_reduce(bytes), 10}};
            const Outcome tile = simulate(config, true, one);
            const Outcome full = simulate(config, false, one);
            require_same(tile, full);
            REQUIRE(full.folded == 0);
            REQUIRE(tile.folded == (tile_of(config, bytes) ? 1u : 0u));
            REQUIRE(tile.unfolded == 0);
        }
    }
}

TEST_CASE("collectives in flight together: joined on the tile, or all run again",
          "[ici][symmetry]") {
    for (const FoldBoard& config : {kTorus32, kTorus128}) {
        INFO(config);
        // Two symmetric ones overlapping: both on the tile.
        const std::vector<Start> two{{all_reduce(kEven), 0}, {all_reduce(kBert), 20000}};
        const Outcome t2 = simulate(config, true, two);
        require_same(t2, simulate(config, false, two));
        REQUIRE(t2.folded == 2);
        REQUIRE(t2.unfolded == 0);
        // An irregular one joins while the first runs: the phase runs again on every link.
        const std::vector<Start> mixed{{all_reduce(kEven), 0}, {all_reduce(kOdd), 20000}};
        const Outcome tm = simulate(config, true, mixed);
        require_same(tm, simulate(config, false, mixed));
        REQUIRE(tm.unfolded == 1);
        // After the engine is idle again, a symmetric one starts a new phase on the tile.
        const Outcome first = simulate(config, true, {{all_reduce(kEven), 0}});
        const std::vector<Start> apart{{all_reduce(kEven), 0},
                                       {all_reduce(kBert), first.last + 1000}};
        const Outcome ta = simulate(config, true, apart);
        require_same(ta, simulate(config, false, apart));
        REQUIRE(ta.folded == 2);
        REQUIRE(ta.unfolded == 0);
        // After a phase on every link: the arbiters' pointers need not repeat the tile any
        // more (then the next one runs on every link too); either way the same figures.
        std::vector<Start> later = mixed;
        later.push_back({all_reduce(kEven), tm.last + 1000});
        require_same(simulate(config, true, later), simulate(config, false, later));
    }
}

TEST_CASE("a collective on a coarser tile joins: the phase runs again on the common tile",
          "[ici][symmetry]") {
    // On v3-128 (8 x 8) 7,340,544 bytes repeat a 4 x 4 tile and no smaller one, 28 MiB a
    // 2 x 2 tile; 4 x 4 is the smallest both repeat.
    const Bytes coarse = 7340544;
    const auto tile = tile_of(kTorus128, coarse);
    REQUIRE(tile);
    REQUIRE(tile->x == 4);
    REQUIRE(tile->y == 4);
    const std::vector<Start> starts{{all_reduce(kEven), 0}, {all_reduce(coarse), 20000}};
    const Outcome t = simulate(kTorus128, true, starts);
    require_same(t, simulate(kTorus128, false, starts));
    REQUIRE(t.unfolded == 1);
    // The first started on the 2 x 2 tile, then both again on the 4 x 4 one.
    REQUIRE(t.folded == 3);
}

TEST_CASE("a collective started from another's completion, fitting the tile or not",
          "[ici][symmetry]") {
    for (const FoldBoard& config : {kTorus32, kTorus128}) {
        for (Bytes next : {kBert, kOdd}) {
            INFO(config << ", then " << next << " B");
            // The second starts from the first's completion while the third still runs.
            const std::vector<Start> starts{{all_reduce(kEven), 0}, {all_reduce(2 * kEven), 100}};
            const CollectiveSpec chained = all_reduce(next);
            const Outcome tile = simulate(config, true, starts, &chained);
            const Outcome full = simulate(config, false, starts, &chained);
            require_same(tile, full);
            REQUIRE(tile.ends.size() == 3);
            REQUIRE(tile.unfolded == (tile_of(config, next) ? 0u : 1u));
        }
    }
}

TEST_CASE("with the fifo tick order nothing is folded", "[ici][symmetry]") {
    std::vector<std::string> set = kTorus32.set;
    set.push_back("ici.tick_order=fifo");
    const TpuConfig cfg = load_config(test::config_path(kTorus32.config), set);
    REQUIRE(cfg.ici.tick_order == IciTickOrder::Fifo);
    // by_link is the default.
    CHECK(load_config(test::config_path("tpu_v3_32.json"), {}).ici.tick_order ==
          IciTickOrder::ByLink);
    const Topology topo(cfg.board, cfg.chip);
    const AnalyticalReductionCost cost(cfg.vpu, cfg.hbm, cfg.chip);
    IciEngine engine(topo, cfg.ici, cfg.chip.clock_mhz, cost);
    test::CompletionLog end;
    engine.start(lower_collective(all_reduce(kEven), topo, cfg.ici), 0, end.to());
    engine.run();
    REQUIRE(end.order.size() == 1);
    REQUIRE(engine.folded_collectives() == 0);
}

TEST_CASE("with the padded split every size repeats the smallest tile and folds exactly",
          "[ici][symmetry]") {
    // Equal blocks of whole elements (ici.shard_split=padded, the default): no block depends on
    // a core's place in its ring, so the sizes that repeat no tile or a coarser one when cut to
    // the byte (kOdd, 7,340,544 bytes on v3-128) repeat the 2 x 2 tile, and the run on the tile
    // equals the run on every link.
    for (const FoldBoard& board : {kPadded32, kPadded128}) {
        for (Bytes bytes : {kEven, kBert, kOdd, Bytes{7340544}}) {
            INFO(board << ", " << bytes << " B");
            const auto tile = tile_of(board, bytes);
            REQUIRE(tile);
            CHECK(tile->x == 2);
            CHECK(tile->y == 2);
        }
        const std::vector<Start> mixed{{all_reduce(kEven), 0}, {all_reduce(kOdd), 20000}};
        const Outcome t = simulate(board, true, mixed);
        require_same(t, simulate(board, false, mixed));
        REQUIRE(t.folded == 2);
        REQUIRE(t.unfolded == 0);
    }
}
