// CycleTicks (integer cycles <-> SystemC time on the annotated DMA path) gives what
// sim_time.h's cycles() / to_cycles() give, for every value: whole cycles, fractions of one,
// and values past the ranges its integer paths take.
#include "tpusim/arch/memory/cycle_ticks.h"

#include <catch2/catch.hpp>
#include <random>

using namespace tpusim;

TEST_CASE("cycle ticks: the same sc_time and cycles as cycles() and to_cycles()", "[dma]") {
    CycleTicks ticks;
    std::mt19937_64 rng(19);
    // Whole cycles of every magnitude up to 2^62, and the edges of the integer paths.
    std::vector<Cycle> ns = {0,
                             1,
                             2,
                             999,
                             1000,
                             1001,
                             (Cycle{1} << 40) - 1,
                             Cycle{1} << 40,
                             (Cycle{1} << 52) / 1000 - 1,
                             (Cycle{1} << 52) / 1000,
                             (Cycle{1} << 52) / 1000 + 1};
    for (int bits = 1; bits <= 62; ++bits) {
        for (int i = 0; i < 200; ++i) ns.push_back(rng() >> (64 - bits));
    }
    for (const Cycle n : ns) {
        const sc_core::sc_time t = ticks.time(n);
        REQUIRE(t == cycles(n));
        REQUIRE(ticks.of(t) == to_cycles(t));
    }
    // Times that are not whole cycles (any value in the resolution's units).
    for (int bits = 1; bits <= 62; ++bits) {
        for (int i = 0; i < 200; ++i) {
            const sc_core::sc_time t = sc_core::sc_time::from_value(rng() >> (64 - bits));
            REQUIRE(ticks.of(t) == to_cycles(t));
        }
    }
}
