// IciNetwork's cache of lowered collectives (LoweringCache): a kept lowering equals a fresh
// one for every field of the spec, the budget evicts the least recently used, and the engine
// runs a shared lowering as it runs fresh copies.
#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#include "../completion_log.h"
#include "../test_util.h"
#include "tpusim/arch/ici/ici_engine.h"
#include "tpusim/arch/ici/ici_network.h"
#include "tpusim/common/error.h"
#include "tpusim/config/tpu_config.h"

using namespace tpusim;

namespace {

struct CacheSlice {
    explicit CacheSlice(const std::string& name)
        : cfg(load_config(test::config_path(name))), topo(cfg.board, cfg.chip) {}
    TpuConfig cfg;
    Topology topo;
};

bool same_lowering(const LoweredCollective& a, const LoweredCollective& b) {
    if (a.name != b.name || a.setup_us != b.setup_us || a.streams.size() != b.streams.size())
        return false;
    for (std::size_t s = 0; s < a.streams.size(); ++s) {
        const Schedule &x = a.streams[s], &y = b.streams[s];
        if (x.name != y.name || x.element_bytes != y.element_bytes ||
            x.cores.size() != y.cores.size())
            return false;
        for (std::size_t c = 0; c < x.cores.size(); ++c) {
            const CoreSchedule &p = x.cores[c], &q = y.cores[c];
            if (p.core != q.core || p.steps.size() != q.steps.size()) return false;
            for (std::size_t k = 0; k < p.steps.size(); ++k) {
                const Step &u = p.steps[k], &v = q.steps[k];
                if (u.recv_bytes != v.recv_bytes || u.reduce != v.reduce ||
                    u.sends.size() != v.sends.size())
                    return false;
                for (std::size_t t = 0; t < u.sends.size(); ++t) {
                    const Transfer &e = u.sends[t], &f = v.sends[t];
                    if (e.dst != f.dst || e.bytes != f.bytes || e.dst_step != f.dst_step ||
                        e.prefer_sign != f.prefer_sign)
                        return false;
                }
            }
        }
    }
    return true;
}

std::size_t lowered_steps(const LoweredCollective& c) {
    std::size_t n = 0;
    for (const Schedule& s : c.streams)
        for (const CoreSchedule& cs : s.cores) n += cs.steps.size();
    return n;
}

CollectiveSpec cached_all_reduce(Bytes bytes) {
    CollectiveSpec s;
    s.bytes = bytes;
    return s;
}

}  // namespace

TEST_CASE("a kept lowering is the fresh one, and every field of the spec tells specs apart",
          "[ici][lowering_cache]") {
    CacheSlice v("tpu_v3_32.json");
    LoweringCache cache(v.topo, v.cfg.ici);
    const CollectiveSpec base = cached_all_reduce(3 * kMiB + 5);
    // The spec with one field changed, for every field lower_collective reads.
    std::vector<CollectiveSpec> specs{base};
    auto with = [&](auto change) {
        CollectiveSpec s = base;
        change(s);
        specs.push_back(s);
    };
    with([](CollectiveSpec& s) { s.bytes += 1; });
    with([](CollectiveSpec& s) { s.element_bytes = 2; });
    with([](CollectiveSpec& s) { s.kind = CollectiveKind::ReduceScatter; });
    with([](CollectiveSpec& s) { s.group = {0, 1, 2, 3, 4, 5, 6, 7}; });
    with([](CollectiveSpec& s) { s.group = {0, 1, 2, 3, 4, 5, 6, 9}; });
    with([](CollectiveSpec& s) { s.algorithm = AllReduceAlgorithm::Ring; });
    with([](CollectiveSpec& s) { s.algorithm = AllReduceAlgorithm::Torus2d; });
    with([](CollectiveSpec& s) { s.pieces = 3; });
    with([](CollectiveSpec& s) {
        s.kind = CollectiveKind::CollectivePermute;
        s.pairs = {{0, 2}, {2, 0}};
    });
    with([](CollectiveSpec& s) {
        s.kind = CollectiveKind::CollectivePermute;
        s.pairs = {{0, 3}, {3, 0}};
    });
    // Twice over: the first pass lowers each, the second finds each kept.
    std::vector<std::shared_ptr<const LoweredCollective>> kept;
    for (int pass = 0; pass < 2; ++pass) {
        for (std::size_t i = 0; i < specs.size(); ++i) {
            const auto low = cache.lowered(specs[i]);
            CHECK(same_lowering(*low, lower_collective(specs[i], v.topo, v.cfg.ici)));
            if (pass == 0) {
                kept.push_back(low);
            } else {
                CHECK(low == kept[i]);
            }
        }
    }
    CHECK(cache.hits() == specs.size());
    CHECK(cache.size() == specs.size());
    // Distinct specs never came back as one lowering.
    for (std::size_t i = 0; i < kept.size(); ++i)
        for (std::size_t j = i + 1; j < kept.size(); ++j) CHECK(kept[i] != kept[j]);
}

TEST_CASE("the lowering cache keeps the most recently used within its budget of steps",
          "[ici][lowering_cache]") {
    CacheSlice v("tpu_v3_32.json");
    const CollectiveSpec a = cached_all_reduce(kMiB), b = cached_all_reduce(2 * kMiB),
                         c = cached_all_reduce(4 * kMiB);
    const std::size_t one = lowered_steps(lower_collective(a, v.topo, v.cfg.ici));
    REQUIRE(one == lowered_steps(lower_collective(b, v.topo, v.cfg.ici)));
    LoweringCache cache(v.topo, v.cfg.ici, 2 * one);  // room for two
    const auto la = cache.lowered(a);
    cache.lowered(b);
    CHECK(cache.lowered(a) == la);  // a is now the most recently used: b goes next
    cache.lowered(c);
    CHECK(cache.size() == 2);
    CHECK(cache.steps() == 2 * one);
    CHECK(cache.hits() == 1);
    CHECK(cache.lowered(a) == la);  // kept
    CHECK(cache.hits() == 2);
    const auto lb = cache.lowered(b);  // lowered again: equal to a fresh one
    CHECK(cache.hits() == 2);
    CHECK(same_lowering(*lb, lower_collective(b, v.topo, v.cfg.ici)));

    LoweringCache small(v.topo, v.cfg.ici, one - 1);  // none fits
    CHECK(same_lowering(*small.lowered(a), lower_collective(a, v.topo, v.cfg.ici)));
    CHECK(small.size() == 0);
    CHECK(small.steps() == 0);
    // A bad spec throws as lower_collective does and leaves nothing behind.
    CollectiveSpec bad = a;
    bad.group = {0, 0};
    CHECK_THROWS_AS(cache.lowered(bad), InputError);
    CHECK(cache.size() == 2);
}

TEST_CASE("the engine runs one shared lowering started twice as two fresh copies",
          "[ici][lowering_cache]") {
    CacheSlice v("tpu_v3_32.json");
    const AnalyticalReductionCost cost(v.cfg.vpu, v.cfg.hbm, v.cfg.chip);
    const CollectiveSpec spec = cached_all_reduce(5 * kMiB);
    // Overlapping (they share links and reduction units), then once more after both.
    const Cycle starts[] = {0, 700, 40000000};
    std::vector<Cycle> ends[2];
    Bytes link_bytes[2] = {0, 0};
    for (int shared = 0; shared < 2; ++shared) {
        IciEngine engine(v.topo, v.cfg.ici, v.cfg.chip.clock_mhz, cost);
        test::CompletionLog log;
        const auto low =
            std::make_shared<const LoweredCollective>(lower_collective(spec, v.topo, v.cfg.ici));
        for (std::size_t i = 0; i < 3; ++i) {
            if (i == 2) engine.run_until(starts[i]);
            if (shared) {
                engine.start(low, starts[i], log.to(i));
            } else {
                engine.start(lower_collective(spec, v.topo, v.cfg.ici), starts[i], log.to(i));
            }
        }
        engine.run();
        for (std::size_t i = 0; i < 3; ++i) ends[shared].push_back(log.at.at(i));
        for (std::size_t l = 0; l < v.topo.links().size(); ++l)
            link_bytes[shared] += engine.fabric().link_bytes(l);
        CHECK(engine.in_flight() == 0);
    }
    CHECK(ends[1] == ends[0]);
    CHECK(link_bytes[1] == link_bytes[0]);
    // The first two share links and reduction units: each takes longer than the third, alone.
    CHECK(ends[0][0] - starts[0] > ends[0][2] - starts[2]);
    CHECK(ends[0][1] - starts[1] > ends[0][2] - starts[2]);
    CHECK(link_bytes[0] > 0);
}
