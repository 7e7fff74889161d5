// ICI topology: wiring of the 4-chip boards and torus slices, routes, ring order, and the
// configurations the loader must reject.
#include <catch2/catch.hpp>
#include <set>

#include "../test_util.h"
#include "tpusim/common/error.h"
#include "tpusim/config/topology.h"
#include "tpusim/config/tpu_config.h"

using namespace tpusim;

TEST_CASE("a 2 x 2 torus board joins each pair of neighbours by two links", "[ici][topology]") {
    const TpuConfig cfg = load_config(test::config_path("tpu_v3_8.json"));
    const Topology t(cfg.board, cfg.chip);
    REQUIRE(t.chips() == 4);
    REQUIRE(t.cores() == 8);
    // 4 chips x 4 links, each one direction of a physical link.
    REQUIRE(t.links().size() == 16);
    for (int chip = 0; chip < 4; ++chip) {
        const auto px = t.link_from(chip, 0, 1), mx = t.link_from(chip, 0, -1);
        REQUIRE(px >= 0);
        REQUIRE(mx >= 0);
        REQUIRE(px != mx);
        // +x and -x of a 2-wide torus reach the same neighbour.
        REQUIRE(t.links()[static_cast<std::size_t>(px)].dst_chip ==
                t.links()[static_cast<std::size_t>(mx)].dst_chip);
        REQUIRE(t.links()[static_cast<std::size_t>(px)].dst_chip == (chip ^ 1));
        REQUIRE(t.links()[static_cast<std::size_t>(t.link_from(chip, 1, 1))].dst_chip ==
                (chip ^ 2));
    }
    // A tie in a 2-wide ring is broken by the preferred direction.
    const auto plus = t.route(0, 1, 1), minus = t.route(0, 1, -1);
    REQUIRE(plus.size() == 1);
    REQUIRE(minus.size() == 1);
    REQUIRE(plus[0].link != minus[0].link);
}

TEST_CASE("routes are dimension ordered, shortest, and change VC after the dateline",
          "[ici][topology]") {
    const Topology t(4, 4, true, 2);
    // (0,0) -> (3,2): x goes -1 (wrap link, VC 1), then y +2 (VC 0 again).
    const auto r = t.route(t.chip_at(0, 0), t.chip_at(3, 2));
    REQUIRE(r.size() == 3);
    REQUIRE(t.links()[r[0].link].dim == 0);
    REQUIRE(t.links()[r[0].link].sign == -1);
    REQUIRE(t.links()[r[0].link].wrap);
    REQUIRE(r[0].vc == 1);
    REQUIRE(t.links()[r[1].link].dim == 1);
    REQUIRE(r[1].vc == 0);
    REQUIRE(r[2].vc == 0);
    REQUIRE(t.links()[r[2].link].dst_chip == t.chip_at(3, 2));
    // A mesh has no wrap links: the same trip goes +3 along x.
    const Topology m(4, 4, false, 2);
    REQUIRE(m.route(0, m.chip_at(3, 0)).size() == 3);
    REQUIRE(m.links().size() == 2 * (3 * 4 + 3 * 4));
}

TEST_CASE("the ring order is a cycle of neighbours on boards and slices", "[ici][topology]") {
    for (auto [x, y] : {std::pair{2, 2}, std::pair{4, 4}, std::pair{32, 32}, std::pair{4, 2},
                        std::pair{3, 4}, std::pair{8, 1}}) {
        const Topology t(x, y, true, 2);
        const auto order = t.ring_order();
        REQUIRE(order.size() == static_cast<std::size_t>(x * y));
        REQUIRE(std::set<int>(order.begin(), order.end()).size() == order.size());
        for (std::size_t i = 0; i < order.size(); ++i) {
            const int a = order[i], b = order[(i + 1) % order.size()];
            INFO(x << " x " << y << " at " << i);
            REQUIRE(t.route(a, b).size() == 1);
        }
    }
}

TEST_CASE("bad ICI topologies are rejected with the key that is wrong", "[ici][topology]") {
    const auto v3 = test::config_path("tpu_v3_8.json");
    // A 2-D torus needs +x, -x, +y, -y on every chip.
    REQUIRE_THROWS_AS(load_config(test::config_path("tpu_v3_32.json"), {"ici.links_per_chip=3"}),
                      InputError);
    try {
        load_config(v3, {"ici.links_per_chip=2"});
        FAIL("expected an error");
    } catch (const InputError& e) {
        REQUIRE(e.where() == "/ici/links_per_chip");
    }
    // A 4 x 1 line without wrap-around needs only +x and -x; with one link it cannot be wired.
    REQUIRE_NOTHROW(load_config(v3, {"board.chips_x=4", "board.chips_y=1", "board.wraparound=false",
                                     "ici.links_per_chip=2"}));
    REQUIRE_THROWS_AS(
        load_config(v3, {"board.chips_x=4", "board.chips_y=1", "ici.links_per_chip=1"}),
        InputError);
    REQUIRE_THROWS_AS(load_config(v3, {"ici.chunk_bytes=256"}), InputError);
    REQUIRE_THROWS_AS(load_config(v3, {"ici.all_reduce_algorithm=tree"}), InputError);
    // The shipped slices load.
    const TpuConfig pod = load_config(test::config_path("tpu_v3_2048.json"));
    REQUIRE(pod.chips() == 1024);
    REQUIRE(load_config(test::config_path("tpu_v3_1024.json")).chips() == 512);
    REQUIRE(load_config(test::config_path("tpu_v3_32.json")).chips() == 16);
}

TEST_CASE("a slice wraps around only along the axes it spans its pod's whole side",
          "[ici][topology]") {
    // The pod's torus closes each full row and column of chips; a rectangle cut out of it keeps
    // those wrap-around links only along an axis as long as the pod's (docs/pods.md).
    struct Case {
        const char* config;
        int nx, ny;
        bool wrap_x, wrap_y;
    };
    for (const Case& c :
         {Case{"tpu_v3_8.json", 2, 2, true, true},  // a board of its own
          Case{"tpu_v3_32.json", 4, 4, false, false}, Case{"tpu_v3_512.json", 16, 16, false, false},
          Case{"tpu_v3_1024.json", 16, 32, false, true},
          Case{"tpu_v3_2048.json", 32, 32, true, true}, Case{"tpu_v2_256.json", 8, 16, false, true},
          Case{"tpu_v2_512.json", 16, 16, true, true}}) {
        INFO(c.config);
        const TpuConfig cfg = load_config(test::config_path(c.config));
        REQUIRE(cfg.board.chips_x == c.nx);
        REQUIRE(cfg.board.chips_y == c.ny);
        REQUIRE(cfg.board.wraps(0) == c.wrap_x);
        REQUIRE(cfg.board.wraps(1) == c.wrap_y);
        const Topology t(cfg.board, cfg.chip);
        REQUIRE(t.wraps(0) == c.wrap_x);
        REQUIRE(t.wraps(1) == c.wrap_y);
        // Link directions: 2 per pair of neighbours in a line of n, 2 more to close a ring.
        const auto along = [](int n, bool wrap) { return 2 * (n - 1) + (wrap && n > 1 ? 2 : 0); };
        const std::size_t links =
            static_cast<std::size_t>(along(c.nx, c.wrap_x) * c.ny + along(c.ny, c.wrap_y) * c.nx);
        REQUIRE(t.links().size() == links);
        // From the first to the last chip of row 0: one hop back round the ring, or across.
        const auto route = t.route(0, t.chip_at(c.nx - 1, 0));
        REQUIRE(route.size() == static_cast<std::size_t>(c.wrap_x ? 1 : c.nx - 1));
        const auto column = t.route(0, t.chip_at(0, c.ny - 1));
        REQUIRE(column.size() == static_cast<std::size_t>(c.wrap_y ? 1 : c.ny - 1));
    }
    // What-ifs: the slice as a pod of its own is a torus; wrap-around off leaves a mesh.
    const auto v3_32 = test::config_path("tpu_v3_32.json");
    const TpuConfig own = load_config(v3_32, {"board.pod_chips_x=0", "board.pod_chips_y=0"});
    REQUIRE(own.board.wraps(0));
    REQUIRE(own.board.wraps(1));
    const TpuConfig off =
        load_config(test::config_path("tpu_v3_2048.json"), {"board.wraparound=false"});
    REQUIRE_FALSE(off.board.wraps(0));
    REQUIRE_FALSE(off.board.wraps(1));
    // A slice cannot be longer than its pod: the key that was set is named.
    try {
        load_config(v3_32, {"board.pod_chips_y=2"});
        FAIL("expected an error");
    } catch (const InputError& e) {
        REQUIRE(e.where() == "/board/pod_chips_y");
    }
    try {
        load_config(test::config_path("tpu_v3_2048.json"), {"board.chips_x=64"});
        FAIL("expected an error");
    } catch (const InputError& e) {
        REQUIRE(e.where() == "/board/chips_x");
        REQUIRE_THAT(e.what(), Catch::Contains("board.pod_chips_x (32)"));
    }
}
