// IciEventQueue: events leave in (when, rank, seq) order, exactly as from a heap of events,
// whatever the mix of pushes and pops (events pushed while a tick is being drained included,
// at a rank below the one that left last: the early heap), with every event at rank 0
// (ici.tick_order = fifo) or at ranks 0..8 (by_link), and ticks a few cycles apart (as on a
// symmetric fabric: many events per key) or spread over up to 2^40 ticks (every bucket of
// the radix heap, and spreads that move events down many levels). The ICI model's cycles
// depend on this order where events share a tick.
#include <catch2/catch.hpp>
#include <functional>
#include <queue>
#include <random>
#include <vector>

#include "tpusim/arch/ici/ici_fabric.h"

using namespace tpusim;

TEST_CASE("ICI event queue: same order as a heap of (when, rank, seq)", "[ici][queue]") {
    std::mt19937_64 rng(GENERATE(1u, 2u, 3u));
    const bool ranked = GENERATE(false, true);
    const bool wide = GENERATE(false, true);
    IciEventQueue q;
    std::priority_queue<IciEvent, std::vector<IciEvent>, std::greater<IciEvent>> ref;
    std::uint64_t seq = 0;
    Tick now = 0;
    std::size_t popped = 0;
    auto push = [&](Tick when, std::uint32_t id) {
        const auto rank = static_cast<std::uint8_t>(ranked ? rng() % IciEventQueue::kRanks : 0);
        q.push(when, 1, id, 0, 0, rank);
        ref.push(IciEvent{when, seq++, 1, rank, id, 0, 0});
    };
    std::uint32_t next_id = 0;
    for (int round = 0; round < 20000; ++round) {
        const auto r = rng() % 10;
        if (r < 6 || q.empty()) {
            // Few distinct ticks, as on a symmetric fabric: now, or a little later.
            const Tick later = (rng() % 3 == 0) ? 0
                               : wide           ? rng() % (Tick{1} << (1 + rng() % 40))
                                                : rng() % 5 * 1024 + rng() % 2;
            push(now + later, next_id++);
        } else {
            REQUIRE(q.size() == ref.size());
            REQUIRE(q.top().when == ref.top().when);
            const IciEvent e = q.pop();
            REQUIRE(e.a == ref.top().a);
            REQUIRE(e.when == ref.top().when);
            ref.pop();
            now = e.when;
            ++popped;
        }
    }
    while (!q.empty()) {
        REQUIRE(q.pop().a == ref.top().a);
        ref.pop();
        ++popped;
    }
    CHECK(ref.empty());
    CHECK(popped == next_id);
}
