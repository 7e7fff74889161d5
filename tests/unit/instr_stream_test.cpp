// Streamed programs (sim.stream_above_instructions): the instructions a core reads from a
// stream lowered on demand are the ones the held program has, and the stream holds only a
// bounded window of them while its readers release what they have passed.
#include <catch2/catch.hpp>

#include "../test_util.h"
#include "op_spec_util.h"
#include "tpusim/program/lowering.h"

using namespace tpusim;

namespace {

using test::matmul_spec;

OpSpec vector(const char* id, VectorOp op, std::int64_t rows, std::int64_t cols, bool fused,
              std::size_t dep) {
    OpSpec s = test::vector_spec(id, op, rows, cols);
    s.in_bytes = s.out_bytes = 2;
    s.fused = fused;
    s.deps = {dep};
    return s;
}

// A layer's worth of op kinds: a matmul with a fused GELU, a matmul on its result, an unfused
// row-wise softmax and an all-reduce.
std::vector<OpSpec> ops() {
    std::vector<OpSpec> v{
        matmul_spec("a", 4096, 1024, 1024), vector("g", VectorOp::Gelu, 4096, 1024, true, 0),
        matmul_spec("b", 4096, 1024, 1024), vector("s", VectorOp::Softmax, 4096, 1024, false, 2)};
    v[2].deps = {1};
    v[3].rowwise = true;
    OpSpec ar;
    ar.id = "ar";
    ar.kind = OpKind::AllReduce;
    ar.bytes = 1 << 20;
    ar.replica_groups = {{0, 1}};
    ar.deps = {3};
    v.push_back(ar);
    return v;
}

bool same(const Instr& a, const Instr& b) {
    if (a.unit != b.unit || a.op != b.op || a.waits != b.waits) return false;
    switch (a.unit) {
        case Unit::Dma: {
            const DmaDescriptor &x = a.dma(), &y = b.dma();
            return x.dir == y.dir && x.hbm_addr == y.hbm_addr && x.vmem_addr == y.vmem_addr &&
                   x.rows == y.rows && x.row_bytes == y.row_bytes && x.hbm_stride == y.hbm_stride &&
                   x.vmem_stride == y.vmem_stride;
        }
        case Unit::Mxu:
            return a.mm().mxu == b.mm().mxu && a.mm().m == b.mm().m && a.mm().k == b.mm().k &&
                   a.mm().n == b.mm().n;
        case Unit::Vpu:
            return a.vec().op == b.vec().op && a.vec().rows == b.vec().rows &&
                   a.vec().cols == b.vec().cols && a.vec().in_bytes == b.vec().in_bytes &&
                   a.vec().out_bytes == b.vec().out_bytes;
        case Unit::Ici:
            return a.coll->kind == b.coll->kind && a.coll->bytes == b.coll->bytes &&
                   a.coll->group == b.coll->group && a.coll->instance == b.coll->instance;
        case Unit::Host:
            return a.host().to_device == b.host().to_device && a.host().bytes == b.host().bytes;
    }
    return false;
}

}  // namespace

TEST_CASE("a streamed program reads the same instructions as the held one", "[lowering]") {
    TpuConfig cfg = load_config(test::config_path("tpu_v3_8.json"));
    LoweringOptions o;
    o.cores = 2;
    const Program held = lower_ops(ops(), cfg, o, "t");
    cfg.sim.stream_above_instructions = 0;
    const Program streamed = lower_ops(ops(), cfg, o, "t");
    REQUIRE(held.cores.size() == 2);
    REQUIRE(streamed.cores.size() == 2);
    CHECK_FALSE(held.cores[0].instrs.streamed());
    REQUIRE(streamed.cores[0].instrs.streamed());
    CHECK(streamed.cores[1].instrs.same_as(streamed.cores[0].instrs));  // still shared
    for (std::size_t i = 0; i < held.ops.size(); ++i) {
        CHECK(streamed.ops[i].hbm_bytes == held.ops[i].hbm_bytes);
        CHECK(streamed.ops[i].fused_into == held.ops[i].fused_into);
    }
    const SharedInstrs& h = held.cores[0].instrs;
    const SharedInstrs& s = streamed.cores[0].instrs;
    REQUIRE(s.size() == h.size());
    REQUIRE(h.size() > 100);
    // Two readers (the two cores) at their own positions, the second lagging.
    const std::size_t r0 = s.add_reader(), r1 = s.add_reader();
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < h.size(); ++i) {
        if (!same(s[i], h[i])) ++mismatches;
        s.release(r0, i + 1);
        if (i >= 10) {
            if (!same(s[i - 10], h[i - 10])) ++mismatches;
            s.release(r1, i - 9);
        }
    }
    CHECK(mismatches == 0);
    CHECK_THROWS_AS(s[0], std::logic_error);  // released by both readers: freed
    CHECK_THROWS_AS(s.begin(), std::logic_error);
    CHECK(h.resident() == h.size());
}

TEST_CASE("a stream holds a bounded window, not the whole program", "[lowering]") {
    TpuConfig cfg = load_config(test::config_path("tpu_v3_8.json"));
    cfg.sim.stream_above_instructions = 1000;
    // m = 2^26 rows: 2^16 tiles of four instructions each (A in, one pass on each of the two
    // MXUs, each on half of the rows of the one-column weight tile, result out).
    const Program p = lower_ops({matmul_spec("tall", std::int64_t{1} << 26, 1, 1)}, cfg, {}, "t");
    const SharedInstrs& s = p.cores[0].instrs;
    REQUIRE(s.streamed());
    CHECK(s.size() == 4 * (std::size_t{1} << 16) + 1);
    const std::size_t r = s.add_reader();
    std::size_t most = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        (void)s[i];
        s.release(r, i + 1);
        if (i % 4096 == 0) most = std::max(most, s.resident());
    }
    CHECK(most <= (std::size_t{1} << 16) + 1);  // the window, not 262,145 instructions
}
