// Program layer, vector ops: chunking, lane tiles, statistics kernels, on-chip operands,
// result arrays. Expected bytes are derived from the config and XLA's TPU layouts.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "../test_util.h"
#include "op_spec_util.h"
#include "tpusim/common/error.h"
#include "tpusim/program/from_trace.h"
#include "tpusim/program/lowering.h"
#include "tpusim/trace/trace.h"

using namespace tpusim;
using test::totals;
using test::Totals;
using test::vector_spec;

namespace {

TpuConfig v3() { return load_config(test::config_path("tpu_v3_8.json")); }

}  // namespace

TEST_CASE("vector ops are chunked in whole rows and every element is processed once",
          "[lowering]") {
    const TpuConfig cfg = v3();
    const Program p =
        lower_ops({vector_spec("sm", VectorOp::Softmax, 1000, 4096, 1, true)}, cfg, {}, "t");
    const Totals t = totals(p.cores[0]);
    // XLA's softmax is three kernels: max (reads x), exp-sum (reads x, writes e = exp(x -
    // max), which XLA does not recompute), then the quotient (reads e, writes the result).
    CHECK(xla_statistics_passes(VectorOp::Softmax) == 2);
    CHECK(t.dma_in == 3 * 1000ull * 4096 * 4);
    CHECK(t.dma_out == 2 * 1000ull * 4096 * 4);
    // Each statistics kernel (reduce_max, then reduce_sum) and the op's own body cover every
    // element once, in that order.
    std::map<VectorOp, std::uint64_t> elems;
    std::vector<VectorOp> order;
    for (const auto& in : p.cores[0].instrs) {
        if (in.unit != Unit::Vpu) continue;
        CHECK(in.vec().cols == 4096);
        elems[in.vec().op] += static_cast<std::uint64_t>(in.vec().rows * in.vec().cols);
        if (order.empty() || order.back() != in.vec().op) order.push_back(in.vec().op);
    }
    CHECK(elems[VectorOp::Softmax] == 1000ull * 4096);
    CHECK(elems[VectorOp::ReduceMax] == 1000ull * 4096);
    CHECK(elems[VectorOp::ReduceSum] == 1000ull * 4096);
    CHECK(order ==
          std::vector<VectorOp>{VectorOp::ReduceMax, VectorOp::ReduceSum, VectorOp::Softmax});
}

TEST_CASE("softmax of bf16 scores into f32 stores its exponentials in f32", "[lowering]") {
    // XLA converts the bf16 input and computes e = exp(x - max) in f32: the exp-sum kernel
    // reads x (2 B) and writes e (4 B), the max kernel reads x (2 B), the quotient reads e
    // (4 B) and writes the f32 result (4 B).
    const TpuConfig cfg = v3();
    OpSpec sm = vector_spec("sm", VectorOp::Softmax, 1024, 4096, 1, true);
    sm.in_bytes = 2;
    const Totals t = totals(lower_ops({sm}, cfg, {}, "t").cores[0]);
    const std::uint64_t n = 1024ull * 4096;
    CHECK(t.dma_in == n * (2 + 2 + 4));
    CHECK(t.dma_out == n * (4 + 4));
}

TEST_CASE("a row normalisation's kernels run one after the other", "[lowering]") {
    // XLA's separate fusions: no load of a kernel is issued before the previous kernel's
    // last VPU instruction (the statistic it needs) has been waited for.
    const TpuConfig cfg = v3();
    const Program p =
        lower_ops({vector_spec("ln", VectorOp::Layernorm, 4096, 1024, 1, true)}, cfg, {}, "t");
    const auto& ins = p.cores[0].instrs;
    std::vector<std::size_t> last_of_pass;  // index of each statistics kernel's last VPU instr
    std::optional<VectorOp> cur;
    for (std::size_t k = 0; k < ins.size(); ++k) {
        if (ins[k].unit != Unit::Vpu) continue;
        if (cur && ins[k].vec().op != *cur) last_of_pass.push_back(k);
        cur = ins[k].vec().op;
    }
    REQUIRE(last_of_pass.size() == 1);  // reduce_sum (mean, variance) -> layernorm
    // Every DMA that follows a kernel's last VPU instruction waits on it, directly or
    // through an earlier DMA; the first load of the next kernel names it.
    std::size_t boundary = 0;
    for (std::size_t k = 0; k < ins.size(); ++k) {
        if (ins[k].unit == Unit::Vpu && ins[k].vec().op == VectorOp::Layernorm) break;
        if (ins[k].unit == Unit::Vpu) boundary = k;
    }
    bool named = false;
    for (std::size_t k = boundary + 1; k < ins.size() && !named; ++k) {
        if (ins[k].unit != Unit::Dma) continue;
        for (auto w : ins[k].waits) named = named || w == boundary;
        break;
    }
    CHECK(named);
}

TEST_CASE("a vector op's rows occupy whole lane tiles in HBM; reductions keep their columns",
          "[lowering]") {
    const TpuConfig cfg = v3();
    const auto lanes = static_cast<std::uint64_t>(cfg.vpu.lanes);  // 128
    // 4096 x 32 f32 layernorm: XLA's {1,0:T(8,128)} layout pads each 32-wide row to one
    // 128-lane tile, so each of the three reads of x and the write of y moves 4096 x 128 x 4 B.
    const Program p =
        lower_ops({vector_spec("ln", VectorOp::Layernorm, 4096, 32, 1, true)}, cfg, {}, "t");
    const Totals t = totals(p.cores[0]);
    const std::uint64_t padded = 4096ull * lanes * 4;
    CHECK(t.dma_in ==
          (1 + static_cast<std::uint64_t>(xla_statistics_passes(VectorOp::Layernorm))) * padded);
    CHECK(t.dma_out == padded);
    // The VPU is handed the logical shape (its loop already covers whole tiles): the two
    // statistics kernels and the normalisation, 4096 x 32 each.
    CHECK(t.vec_elems == 3 * 4096ull * 32);
    // An elementwise op: 200 columns pad to 2 tiles (256 lanes) in and out.
    const Totals e =
        totals(lower_ops({vector_spec("r", VectorOp::Relu, 512, 200)}, cfg, {}, "t").cores[0]);
    CHECK(e.dma_in == 512ull * 2 * lanes * 4);
    CHECK(e.dma_out == 512ull * 2 * lanes * 4);
    // reduce_sum: `cols` may be the major dimension (rows and cols swapped) or a pooling
    // window, so its columns are moved as given; the result is one value per row.
    const Totals r =
        totals(lower_ops({vector_spec("s", VectorOp::ReduceSum, 512, 49, 1, true)}, cfg, {}, "t")
                   .cores[0]);
    CHECK(r.dma_in == 512ull * 49 * 4);
    CHECK(r.dma_out == 512ull * 4);
}

TEST_CASE("a vector op's on-chip inputs (vmem_operands) move no bytes", "[lowering]") {
    const TpuConfig cfg = v3();
    const std::uint64_t full = 512ull * 256 * 4;
    // add of two 512 x 256 f32 arrays: both read, the result written.
    const Totals both =
        totals(lower_ops({vector_spec("a", VectorOp::Add, 512, 256, 2)}, cfg, {}, "t").cores[0]);
    CHECK(both.dma_in == 2 * full);
    // The second input already on chip: one stream in, the same VPU work, the same write.
    OpSpec one = vector_spec("a", VectorOp::Add, 512, 256, 2);
    one.vmem_inputs = 0b10;
    const Totals half = totals(lower_ops({one}, cfg, {}, "t").cores[0]);
    CHECK(half.dma_in == full);
    CHECK(half.dma_out == both.dma_out);
    CHECK(half.vec_elems == both.vec_elems);
    // A reduction whose only input is on chip reads nothing and still writes its result.
    OpSpec red = vector_spec("s", VectorOp::ReduceSum, 512, 256, 1, true);
    red.vmem_inputs = 0b1;
    const Totals r = totals(lower_ops({red}, cfg, {}, "t").cores[0]);
    CHECK(r.dma_in == 0);
    CHECK(r.dma_out == 512ull * 4);
    CHECK(r.vec_elems == 512ull * 256);
}

TEST_CASE("an optimizer op writes every one of its results", "[lowering]") {
    // adam writes p, m and v; sgd_momentum p and the momentum; lamb m, v and the update: each
    // a full array of the op's elements, each written once, side by side in the op's buffer.
    const auto j = nlohmann::json::parse(R"({"format": "tpusim.trace", "version": 1,
        "name": "t", "cores": 1, "ops": [
        {"id": "a", "kind": "vector", "op": "adam", "rows": 512, "cols": 256, "dtype": "f32"},
        {"id": "s", "kind": "vector", "op": "sgd_momentum", "rows": 512, "cols": 256,
         "dtype": "f32"},
        {"id": "l", "kind": "vector", "op": "lamb", "rows": 512, "cols": 256, "dtype": "f32"},
        {"id": "next", "kind": "vector", "op": "relu", "rows": 512, "cols": 256,
         "dtype": "f32", "deps": ["a"]}]})");
    const Trace t = parse_trace(j, "t.json", 8);
    const Program p = lower_trace(t, v3());
    const std::uint64_t full = 512ull * 256 * 4;
    const std::array<std::uint64_t, 3> outputs = {3, 2, 3};
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        std::uint64_t in = 0, out = 0;
        std::set<Addr> starts;
        Addr lo = ~Addr{0}, hi = 0;
        for (const Instr& x : p.cores[0].instrs) {
            if (x.unit != Unit::Dma || x.op != i) continue;
            if (x.dma().to_vmem()) {
                in += x.dma().bytes();
                continue;
            }
            out += x.dma().bytes();
            CHECK(starts.insert(x.dma().hbm_addr).second);  // no tile written twice
            lo = std::min(lo, x.dma().hbm_addr);
            hi = std::max(hi, x.dma().hbm_extent());
        }
        INFO(t.ops[i].id);
        CHECK(in == static_cast<std::uint64_t>(op_bytes_in(t.ops[i])));
        CHECK(out == outputs[i] * full);
        CHECK(out == static_cast<std::uint64_t>(op_bytes_out(t.ops[i])));
        CHECK(hi - lo == out);  // one contiguous buffer, the results one after another
    }
}

TEST_CASE("a norm gradient writes dgamma and dbeta after dx", "[lowering]") {
    // layernorm_grad (unfused) and batchnorm_grad (fused into the matmul that makes dy) sum
    // dgamma and dbeta over every row in VMEM; both rows of sums go to HBM after dx, once.
    const auto j = nlohmann::json::parse(R"({"format": "tpusim.trace", "version": 1,
        "name": "t", "cores": 1, "ops": [
        {"id": "ln", "kind": "vector", "op": "layernorm_grad", "rows": 512, "cols": 256,
         "dtype": "f32"},
        {"id": "mm", "kind": "matmul", "m": 512, "k": 256, "n": 256},
        {"id": "bn", "kind": "vector", "op": "batchnorm_grad", "rows": 512, "cols": 256,
         "deps": ["mm"], "fused": true}]})");
    const Trace t = parse_trace(j, "t.json", 8);
    const Program p = lower_trace(t, v3());
    for (std::size_t op : {std::size_t{0}, std::size_t{2}}) {
        std::uint64_t out = 0;
        for (const Instr& x : p.cores[0].instrs) {
            if (x.unit != Unit::Dma || x.op != op || x.dma().to_vmem()) continue;
            out += x.dma().bytes();
        }
        INFO(t.ops[op].id);
        const std::uint64_t elem = op == 0 ? 4 : 2;
        CHECK(out == (512ull + 2) * 256 * elem);  // dx, then one row each of dgamma and dbeta
        CHECK(out == static_cast<std::uint64_t>(op_bytes_out(t.ops[op])));
    }
}

TEST_CASE("a saved dropout mask is written beside y and read by the gradient", "[lowering]") {
    // d: 512 x 256 bf16, unfused; f: the same dropout fused into the matmul that makes its
    // input. Each writes y and the mask; g reads dy and d's mask (not d's y).
    const auto j = nlohmann::json::parse(R"({"format": "tpusim.trace", "version": 1,
        "name": "t", "cores": 1, "ops": [
        {"id": "x", "kind": "vector", "op": "relu", "rows": 512, "cols": 256},
        {"id": "d", "kind": "vector", "op": "dropout", "rows": 512, "cols": 256,
         "mask": "saved", "deps": ["x"]},
        {"id": "mm", "kind": "matmul", "m": 512, "k": 256, "n": 256},
        {"id": "f", "kind": "vector", "op": "dropout", "rows": 512, "cols": 256,
         "mask": "saved", "deps": ["mm"], "fused": true},
        {"id": "dy", "kind": "vector", "op": "relu", "rows": 512, "cols": 256, "deps": ["f"]},
        {"id": "g", "kind": "vector", "op": "dropout_grad", "rows": 512, "cols": 256,
         "mask": "saved", "deps": ["dy", "d"]},
        {"id": "mm2", "kind": "matmul", "m": 512, "k": 256, "n": 256},
        {"id": "f2", "kind": "vector", "op": "dropout", "rows": 512, "cols": 256,
         "mask": "saved", "deps": ["mm2"], "fused": true},
        {"id": "a2", "kind": "vector", "op": "relu", "rows": 512, "cols": 256, "deps": ["f2"],
         "fused": true},
        {"id": "g2", "kind": "vector", "op": "dropout_grad", "rows": 512, "cols": 256,
         "mask": "saved", "deps": ["a2", "f2"]}]})");
    const Program p = lower_trace(parse_trace(j, "t.json", 8), v3());
    const Addr full = 512 * 256 * 2, mask_bytes = 512 * 256;  // bf16 y; pred mask
    struct Range {
        Addr lo = ~Addr{0}, hi = 0;
        std::uint64_t bytes = 0;
    };
    auto range = [&](std::size_t op, bool reads, Addr from, Addr to) {
        Range r;
        for (const Instr& x : p.cores[0].instrs) {
            if (x.unit != Unit::Dma || x.op != op || x.dma().to_vmem() != reads) continue;
            if (x.dma().hbm_addr < from || x.dma().hbm_addr >= to) continue;
            r.lo = std::min(r.lo, x.dma().hbm_addr);
            r.hi = std::max(r.hi, x.dma().hbm_extent());
            r.bytes += x.dma().bytes();
        }
        return r;
    };
    const Addr all = ~Addr{0};
    for (std::size_t op : {std::size_t{1}, std::size_t{3}}) {
        const Range w = range(op, false, 0, all);
        INFO(op);
        CHECK(w.bytes == full + mask_bytes);  // y and the mask, each once
        CHECK(w.hi - w.lo == full + mask_bytes);
    }
    const Range d = range(1, false, 0, all);
    const Range mask = range(5, true, d.lo + full, d.hi);  // g's reads of d's mask array
    CHECK(mask.bytes == mask_bytes);
    CHECK(mask.lo == d.lo + full);
    CHECK(range(5, true, d.lo, d.lo + full).bytes == 0);       // nothing of d's y
    CHECK(range(5, true, 0, all).bytes == full + mask_bytes);  // dy and the mask
    // f2's y goes on chip to its fused consumer alone: only the mask is written, and g2's
    // read of it does not make y a result to store.
    const Range f2 = range(7, false, 0, all);
    CHECK(f2.bytes == mask_bytes);
    CHECK(range(9, true, f2.lo, f2.hi).bytes == mask_bytes);
}

TEST_CASE("vector-op chunks are whole VPU row groups", "[lowering]") {
    const TpuConfig cfg = v3();
    auto chunk_rows = [&](const OpSpec& s) {
        std::set<std::int64_t> rows;
        const Program p = lower_ops({s}, cfg, {}, "t");
        for (const auto& in : p.cores[0].instrs) {
            if (in.unit == Unit::Vpu) rows.insert(in.vec().rows);
        }
        return rows;
    };
    const auto sub = cfg.vpu.sublanes;  // 8
    // f32 rows of 65536 columns: 256 KiB in + 256 KiB out, so lowering.vector_chunk_bytes
    // (1 MiB) holds 2 rows; a VPU row group is 8 rows (one vreg per 128 columns), and a
    // double-buffered 8-row chunk (8 MiB) fits the 16 MiB VMEM, so chunks are 8 rows.
    CHECK(chunk_rows(vector_spec("w", VectorOp::Relu, 64, 65536)) == std::set<std::int64_t>{sub});
    // bf16: a packed tile holds 16 rows (two f32 vregs per 128 columns), so 1 MiB /
    // (20 KiB in + 20 KiB out) = 25 rows becomes 16, not 24 (a group and a half).
    OpSpec b = vector_spec("b", VectorOp::Relu, 64, 10240);
    b.in_bytes = b.out_bytes = 2;
    CHECK(chunk_rows(b) == std::set<std::int64_t>{2 * sub});
}

TEST_CASE("an op that cannot fit VMEM is a located error", "[lowering]") {
    TpuConfig cfg = load_config(test::config_path("tpu_v3_8.json"), {"vmem.capacity_mib=1"});
    try {
        lower_ops({vector_spec("wide", VectorOp::Layernorm, 8, 1 << 20, 1, true)}, cfg, {},
                  "trace.json");
        FAIL("expected an InputError");
    } catch (const InputError& e) {
        CHECK(e.file() == "trace.json");
        CHECK(e.where() == "op \"wide\"");
        CHECK_THAT(e.what_only(), Catch::Contains("VMEM"));
    }
}

TEST_CASE("8-bit arrays move one byte per element", "[lowering]") {
    // u8 images converted to bf16 on the chip, an s8 add with a fused s8 relu, and a matmul
    // whose lhs is s8: every array moves at its own element size, as the trace layer counts
    // it (op_bytes), while the VPU works on the 8-bit data widened (vpu_element_bytes).
    const auto j = nlohmann::json::parse(R"({"format": "tpusim.trace", "version": 1,
        "name": "t", "cores": 1, "ops": [
        {"id": "c", "kind": "vector", "op": "convert", "rows": 512, "cols": 256,
         "dtype": "u8", "out_dtype": "bf16"},
        {"id": "a", "kind": "vector", "op": "add", "rows": 512, "cols": 256, "dtype": "s8"},
        {"id": "r", "kind": "vector", "op": "relu", "rows": 512, "cols": 256, "dtype": "s8",
         "deps": ["a"], "fused": true},
        {"id": "m", "kind": "matmul", "m": 256, "k": 256, "n": 256, "lhs_dtype": "s8"}]})");
    const Trace t = parse_trace(j, "t.json", 8);
    const Program p = lower_trace(t, v3());
    const std::uint64_t n = 512 * 256;
    auto moved = [&](std::size_t op, bool reads) {
        std::uint64_t b = 0;
        for (const Instr& x : p.cores[0].instrs)
            if (x.unit == Unit::Dma && x.op == op && x.dma().to_vmem() == reads)
                b += x.dma().bytes();
        return b;
    };
    CHECK(moved(0, true) == n);                    // u8 in
    CHECK(moved(0, false) == 2 * n);               // bf16 out
    CHECK(moved(1, true) == 2 * n);                // two s8 operands
    CHECK(moved(1, false) == 0);                   // on chip to its fused relu
    CHECK(moved(2, false) == n);                   // the relu's s8 result
    CHECK(moved(3, true) == 256 * 256 * (1 + 2));  // s8 lhs, bf16 rhs, each read once
    CHECK(moved(3, false) == 256 * 256 * 2);
    // The same figures as the trace layer's per-op bytes.
    for (std::size_t i = 0; i < 4; ++i) {
        INFO(t.ops[i].id);
        if (i == 1 || i == 2) continue;  // the fused pair's bytes are counted together
        CHECK(moved(i, true) + moved(i, false) ==
              static_cast<std::uint64_t>(op_bytes_in(t.ops[i]) + op_bytes_out(t.ops[i])));
    }
}
