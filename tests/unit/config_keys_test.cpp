// Keys that decide results are read (lowering.*), and a key nothing reads is an error.
// Expected counts are derived from the tiling rules of docs/program.md and the config.
#include <algorithm>
#include <catch2/catch.hpp>

#include "../test_util.h"
#include "tpusim/common/error.h"
#include "tpusim/program/lowering.h"
#include "tpusim/trace/trace.h"

using namespace tpusim;

namespace {

TpuConfig v3(std::vector<std::string> sets = {}) {
    return load_config(test::config_path("tpu_v3_8.json"), sets);
}

std::vector<const Instr*> on_unit(const Program& p, Unit u) {
    std::vector<const Instr*> out;
    for (const auto& in : p.cores[0].instrs) {
        if (in.unit == u) out.push_back(&in);
    }
    return out;
}

}  // namespace

TEST_CASE("lowering.matmul_max_tile_m bounds the matmul M tile", "[lowering][config]") {
    // 4096 x 768 x 1024 bf16 on v3: the 1024 x 768 x 1024 tile needs 2 stages x (A 1.5 MiB +
    // B 1.5 MiB + f32 accumulator 4 MiB) = 14 MiB <= 0.45 x 2 x 16 MiB, so no shrinking: one K
    // step, one N block, 4096 / tm M blocks, each one MatmulInstr per MXU (2).
    OpSpec mm;
    mm.id = "mm";
    mm.kind = OpKind::Matmul;
    mm.m = 4096;
    mm.k = 768;
    mm.n = 1024;
    for (std::int64_t tm : {1024, 256}) {
        const TpuConfig cfg = v3({"lowering.matmul_max_tile_m=" + std::to_string(tm)});
        const Program p = lower_ops({mm}, cfg, {}, "t");
        const auto mxu = on_unit(p, Unit::Mxu);
        CHECK(mxu.size() == static_cast<std::size_t>(4096 / tm * 2));
        for (const Instr* in : mxu) CHECK(in->mm().m == tm);
    }
}

TEST_CASE("lowering.vector_chunk_bytes sets the rows of a vector chunk", "[lowering][config]") {
    // 4096 x 1024 f32 gelu: a row is 4 KiB in + 4 KiB out = 8 KiB, so a chunk of B bytes holds
    // B / 8 KiB rows (a multiple of the 8 sublanes): 1 MiB -> 128 rows, 256 KiB -> 32 rows.
    OpSpec v;
    v.id = "v";
    v.kind = OpKind::Vector;
    v.vop = VectorOp::Gelu;
    v.rows = 4096;
    v.cols = 1024;
    v.in_bytes = v.out_bytes = 4;
    v.vector_inputs = 1;
    for (std::int64_t bytes : {1 << 20, 1 << 18}) {
        const TpuConfig cfg = v3({"lowering.vector_chunk_bytes=" + std::to_string(bytes)});
        const std::int64_t rows = bytes / 8192;
        const Program p = lower_ops({v}, cfg, {}, "t");
        const auto vpu = on_unit(p, Unit::Vpu);
        CHECK(vpu.size() == static_cast<std::size_t>(4096 / rows));
        for (const Instr* in : vpu) CHECK(in->vec().rows == rows);
    }
}

TEST_CASE("host keys that no model reads are errors, not silent no-ops", "[config]") {
    CHECK_THROWS_AS(v3({"host.dispatch_overhead_us=10"}), InputError);
    CHECK_NOTHROW(v3({"host.vcpus=2"}));  // read by `tpusim train`
    CHECK_NOTHROW(v3({"host.pcie_bandwidth_gbps=32"}));
}
