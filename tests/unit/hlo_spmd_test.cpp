// The SPMD partitioning pass (docs/hlo.md, "SPMD and collectives"): shardings as XLA writes
// them, the per-device module of a data-parallel and a tensor-parallel program against the
// global one, modules already partitioned left alone, fallbacks and bad shardings.
#include "trace/hlo/hlo_spmd.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>
#include <string>

#include "hlo_test_util.h"
#include "tpusim/common/error.h"
#include "tpusim/trace/hlo.h"

using namespace tpusim;

namespace {

std::string data(const std::string& name) {
    return (std::filesystem::path(TPUSIM_SOURCE_DIR) / "tests/data/hlo" / name).string();
}

std::vector<std::int64_t> ints_of(const HloInstr& in, const char* name) {
    std::vector<std::int64_t> out;
    const HloAttr* a = in.attr(name);
    if (!a) return out;
    std::string v(a->value);
    for (char& c : v)
        if (c < '0' || c > '9') c = ' ';
    std::istringstream is(v);
    for (std::int64_t x; is >> x;) out.push_back(x);
    return out;
}

std::int64_t product(const std::vector<std::int64_t>& v) {
    std::int64_t p = 1;
    for (std::int64_t x : v) p *= x;
    return p;
}

const HloInstr& operand_of(const HloComputation& c, const HloInstr& in, std::size_t k) {
    return c.instrs[static_cast<std::size_t>(in.operands.at(k).instr)];
}

// Matrix FLOPs of the module's dots as written: 2 x result elements x contracted elements.
std::int64_t dot_flops(const HloModule& m) {
    std::int64_t f = 0;
    for (const auto& c : m.computations)
        for (const auto& in : c.instrs) {
            if (in.op != HloOpcode::Dot) continue;
            const HloShape& l = operand_of(c, in, 0).shape;
            std::int64_t k = 1;
            for (std::int64_t d : ints_of(in, "lhs_contracting_dims"))
                k *= l.dims[static_cast<std::size_t>(d)];
            f += 2 * product(in.shape.dims) * k;
        }
    return f;
}

// Matrix FLOPs of the imported trace (what tpusim runs on one core).
std::int64_t trace_matmul_flops(const Trace& t) {
    std::int64_t f = 0;
    for (const auto& op : t.ops)
        if (op.kind == OpKind::Matmul)
            f += 2 * op.matmul.batch * op.matmul.m * op.matmul.k * op.matmul.n;
    return f;
}

int count_op(const HloModule& m, HloOpcode op) {
    int n = 0;
    for (const auto& c : m.computations)
        for (const auto& in : c.instrs) n += in.op == op ? 1 : 0;
    return n;
}

const HloInstr& entry_root(const HloModule& m) {
    const HloComputation& e = m.computations[static_cast<std::size_t>(m.entry)];
    return e.instrs[static_cast<std::size_t>(e.root)];
}

std::int64_t partitions(const HloModule& m) {
    return std::stoll(std::string(m.attr("num_partitions")->value));
}

}  // namespace

TEST_CASE("spmd: shardings as XLA writes them", "[hlo][spmd]") {
    const HloModule m = parse_hlo(
        "HloModule m, num_partitions=8\nENTRY e { ROOT p = f32[] parameter(0) }", "t.hlo");
    using K = hlo_spmd::Sharding::Kind;
    auto parse = [&](const char* s) { return hlo_spmd::parse_sharding(s, m, 0, 8); };
    CHECK(parse("{replicated}").kind == K::Replicated);
    CHECK(parse("{maximal device=3}").device == 3);
    CHECK(parse("{manual}").kind == K::Manual);
    auto iota = parse("{devices=[8,1]<=[8]}");
    CHECK(iota.tile == std::vector<std::int64_t>{8, 1});
    CHECK(iota.devices == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
    // iota(8) reshaped to [2,4], transposed: element (i, j) of the [4,2] result is 4j + i.
    auto t = parse("{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}");
    CHECK(t.tile == std::vector<std::int64_t>{4, 1});
    CHECK(t.replicate == 2);
    CHECK(t.devices == std::vector<std::int64_t>{0, 4, 1, 5, 2, 6, 3, 7});
    auto list =
        parse("{devices=[2,1,4]0,2,4,6,1,3,5,7 last_tile_dim_replicate metadata={op_name=\"x\"}}");
    CHECK(list.replicate == 4);
    CHECK(list.devices == std::vector<std::int64_t>{0, 2, 4, 6, 1, 3, 5, 7});
    auto tuple = parse("{{replicated}, {devices=[1,8]<=[8]}}");
    REQUIRE(tuple.kind == K::Tuple);
    CHECK(tuple.elements[1].tile == std::vector<std::int64_t>{1, 8});
    // Shardy's form: dimension 0 over the axis 'data'; over 'y' of a 2x4 mesh, 'x' copies.
    auto mesh = parse("{mesh['data'=8], [{'data'}, {}]}");
    CHECK(mesh.tile == std::vector<std::int64_t>{8, 1});
    CHECK(mesh.devices == iota.devices);
    auto y = parse("{mesh['x'=2,'y'=4], [{'y'}, {}]}");
    CHECK(y.tile == std::vector<std::int64_t>{4, 1});
    CHECK(y.replicate == 2);
    CHECK(y.devices == t.devices);
    CHECK(parse("{mesh[], replicated}").kind == K::Replicated);
    CHECK(parse("{mesh['data'=8], manual}").kind == K::Manual);
    CHECK(parse("{mesh['x'=8], [{'x':(1)2}]}").kind == K::Other);
    CHECK_THROWS_AS(parse("{mesh['x'=4], [{'x'}]}"), InputError);        // 4 devices, not 8
    CHECK_THROWS_AS(parse("{mesh['x'=8], [{'z'}]}"), InputError);        // no axis z
    CHECK_THROWS_AS(parse("{devices=[4,1]<=[4]}"), InputError);          // 4 devices, not 8
    CHECK_THROWS_AS(parse("{devices=[2,2]0,1,2}"), InputError);          // 3 ids for 4 tiles
    CHECK_THROWS_AS(parse("{devices=[8]0,1,2,3,4,5,6,6}"), InputError);  // 6 twice
    CHECK_THROWS_AS(parse("{devices=[8]<=[8]T(1,0)}"), InputError);      // not a permutation
    CHECK_THROWS_AS(parse("{maximal device=9}"), InputError);
    CHECK_THROWS_AS(parse("{devices=[8;1]<=[8]}"), InputError);
}

TEST_CASE("spmd: a data-parallel MLP step is 1/8 of the global work per device", "[hlo][spmd]") {
    const HloModule g = read_hlo(data("spmd/mlp_dp8_train_step.hlo"));
    REQUIRE(spmd_state(g) == SpmdState::Global);
    HloImportStats st;
    const HloModule p = spmd_partition(g, &st);
    CHECK(spmd_state(p) == SpmdState::Partitioned);
    const std::int64_t n = partitions(g);
    CHECK(partitions(p) == n);
    // The batch is divided: per-device matrix FLOPs are the global ones over the devices.
    CHECK(dot_flops(g) % n == 0);
    CHECK(dot_flops(p) * n == dot_flops(g));
    // One all-reduce per weight gradient (a dot whose result has a weight's shape: it sums
    // over the tiled batch) and one for the loss (a reduce over the batch).
    const HloComputation& e = g.computations[static_cast<std::size_t>(g.entry)];
    int grads = 0;
    for (const auto& in : e.instrs)
        if (in.op == HloOpcode::Dot)
            for (const auto& w : e.instrs)
                if (w.op == HloOpcode::Parameter && w.shape.dims == in.shape.dims &&
                    w.attr("sharding")->value == "{replicated}")
                    ++grads;
    REQUIRE(grads == 2);
    CHECK(count_op(p, HloOpcode::AllReduce) == grads + count_op(g, HloOpcode::Reduce));
    CHECK(count_op(p, HloOpcode::AllGather) == 0);
    CHECK(st.spmd_partitioned);
    CHECK(st.spmd_collectives_inserted == grads + 1);
    CHECK(st.spmd_fallbacks == 0);
    // What tpusim runs per core: the trace of the partitioned module against the global one.
    HloImportOptions off;
    off.spmd_partitioner = false;
    const Trace whole = hlo_to_trace(g, off, 8);
    HloImportStats ts;
    const Trace part = hlo_to_trace(g, HloImportOptions{}, 8, &ts);
    CHECK(ts.spmd_partitioned);
    CHECK(trace_matmul_flops(part) * n == trace_matmul_flops(whole));
    // The written module is not partitioned again.
    const HloModule again = parse_hlo(print_hlo(p), "again.hlo");
    HloImportStats as;
    const Trace t2 = hlo_to_trace(again, HloImportOptions{}, 8, &as);
    CHECK_FALSE(as.spmd_partitioned);
    CHECK(trace_matmul_flops(t2) == trace_matmul_flops(part));
}

TEST_CASE("spmd: the MLP step in Shardy's form partitions the same", "[hlo][spmd]") {
    const HloModule a = spmd_partition(read_hlo(data("spmd/mlp_dp8_train_step.hlo")));
    const HloModule g = read_hlo(data("spmd/mlp_dp8_train_step_shardy.hlo"));
    REQUIRE(spmd_state(g) == SpmdState::Global);
    const HloModule b = spmd_partition(g);
    CHECK(dot_flops(b) == dot_flops(a));
    CHECK(count_op(b, HloOpcode::AllReduce) == count_op(a, HloOpcode::AllReduce));
    CHECK(entry_root(b).shape.elements.size() == entry_root(a).shape.elements.size());
}

TEST_CASE("spmd: a Megatron pair of dots gets one all-reduce", "[hlo][spmd]") {
    const HloModule g = read_hlo(data("spmd/megatron_tp8_mlp.hlo"));
    HloImportStats st;
    const HloModule p = spmd_partition(g, &st);
    CHECK(count_op(p, HloOpcode::AllReduce) == 1);
    CHECK(st.spmd_collectives_inserted == 1);
    CHECK(dot_flops(p) * partitions(g) == dot_flops(g));
    // The hidden activation is split along its features: 4096 / 8 per device.
    for (const auto& in : p.computations[static_cast<std::size_t>(p.entry)].instrs)
        if (in.name == "tanh.5") CHECK(in.shape.dims == std::vector<std::int64_t>{64, 4096 / 8});
}

TEST_CASE("spmd: partial sums wanted tiled are one reduce-scatter", "[hlo][spmd]") {
    const HloModule g = read_hlo(data("spmd/megatron_tp8_reduce_scatter.hlo"));
    HloImportStats st;
    const HloModule p = spmd_partition(g, &st);
    CHECK(count_op(p, HloOpcode::ReduceScatter) == 1);
    CHECK(count_op(p, HloOpcode::AllReduce) == 0);
    CHECK(st.spmd_collectives_inserted == 1);
    const auto& out = entry_root(g).shape.dims;
    CHECK(entry_root(p).shape.dims == std::vector<std::int64_t>{out[0] / partitions(g), out[1]});
}

TEST_CASE("spmd: a loop keeps its batch-tiled state and its replicated counter", "[hlo][spmd]") {
    const HloModule g = read_hlo(data("spmd/while_dp8.hlo"));
    HloImportStats st;
    const HloModule p = spmd_partition(g, &st);
    CHECK(st.spmd_collectives_inserted == 0);
    CHECK(dot_flops(p) * partitions(g) == dot_flops(g));
    const HloComputation& body =
        p.computations[static_cast<std::size_t>(p.find_computation("body.1"))];
    const HloInstr& state = body.instrs[0];
    REQUIRE(state.shape.tuple);
    CHECK(state.shape.elements[0].dims.empty());
    CHECK(state.shape.elements[1].dims == std::vector<std::int64_t>{512 / 8, 256});
    // The loop still has its trip count (the condition reads the replicated counter).
    HloImportStats ts;
    hlo_to_trace(g, HloImportOptions{}, 8, &ts);
    CHECK(ts.while_trips == 4);
}

TEST_CASE("spmd: a scan's stacked buffer is tiled around its loop", "[hlo][spmd]") {
    const HloModule g = read_hlo(data("spmd/scan_dp8.hlo"));
    HloImportStats st;
    const HloModule p = spmd_partition(g, &st);
    CHECK(st.spmd_collectives_inserted == 0);
    CHECK(st.spmd_fallbacks == 0);
    CHECK(count_op(p, HloOpcode::AllGather) == 0);
    const HloComputation& body =
        p.computations[static_cast<std::size_t>(p.find_computation("body.1"))];
    const HloShape& gbuf = entry_root(g).shape;
    REQUIRE(body.instrs[0].shape.tuple);
    CHECK(body.instrs[0].shape.elements[3].dims ==
          std::vector<std::int64_t>{gbuf.dims[0], gbuf.dims[1] / partitions(g), gbuf.dims[2]});
    CHECK(dot_flops(p) * partitions(g) == dot_flops(g));
}

TEST_CASE("spmd: XLA's own partitioner test inputs", "[hlo][spmd]") {
    {  // TiledToTiledEven: an all-to-all, s32[8,1] per device
        const HloModule p = spmd_partition(read_hlo(data("spmd/xla_tiled_to_tiled_even.hlo")));
        CHECK(count_op(p, HloOpcode::AllToAll) == 1);
        CHECK(entry_root(p).shape.dims == std::vector<std::int64_t>{8, 1});
    }
    {  // EinsumOutputLHSNonContractingDimPartitioned: the lhs sliced, no communication
        const HloModule p =
            spmd_partition(read_hlo(data("spmd/xla_einsum_output_lhs_noncontracting.hlo")));
        CHECK(entry_root(p).shape.dims == std::vector<std::int64_t>{32, 12, 39296});
        CHECK(count_op(p, HloOpcode::DynamicSlice) >= 1);
        CHECK(count_op(p, HloOpcode::AllGather) + count_op(p, HloOpcode::AllReduce) == 0);
    }
    {  // EinsumContractingDimsPartitionedResultPartiallySliced: partial sums, then a slice
        const HloModule p =
            spmd_partition(read_hlo(data("spmd/xla_einsum_contracting_partially_sliced.hlo")));
        CHECK(entry_root(p).shape.dims == std::vector<std::int64_t>{16, 128});
        CHECK(count_op(p, HloOpcode::AllReduce) == 1);
    }
    {  // ConvolutionLhsTiledRhsReplicated: spatial tiling is outside the rules (XLA exchanges
       // halos): a warning, the convolution replicated, the result sliced as annotated
        HloImportStats st;
        const HloModule p =
            spmd_partition(read_hlo(data("spmd/xla_conv_lhs_spatial_tiled.hlo")), &st);
        CHECK(st.spmd_fallbacks == 1);
        REQUIRE(st.warnings.size() == 1);
        CHECK(st.warnings[0].find("xla_conv_lhs_spatial_tiled.hlo:") != std::string::npos);
        CHECK(entry_root(p).shape.dims == std::vector<std::int64_t>{128, 56, 112, 64});
    }
}

TEST_CASE("spmd: outside the rules, values are replicated with a located warning", "[hlo][spmd]") {
    const HloModule g = read_hlo(data("spmd/fallback_2d_tiling.hlo"));
    HloImportStats st;
    const HloModule p = spmd_partition(g, &st);
    CHECK(st.spmd_fallbacks == 2);  // the 2-D tiled weight, the sort along the tiled batch
    REQUIRE(st.warnings.size() == 2);
    for (const auto& w : st.warnings)
        CHECK(w.rfind("tests/data/hlo/spmd/fallback_2d_tiling.hlo:", std::string::npos) !=
              std::string::npos);
    // The replicated program: the dot runs whole on every device.
    CHECK(dot_flops(p) == dot_flops(g));
    CHECK(entry_root(p).shape.dims == entry_root(g).shape.dims);
}

TEST_CASE("spmd: bad shardings are located errors", "[hlo][spmd]") {
    for (const char* f : {"spmd_device_count.hlo", "spmd_sharding_text.hlo"}) {
        const HloModule g = read_hlo(
            (std::filesystem::path(TPUSIM_SOURCE_DIR) / "tests/data/hlo_bad" / f).string());
        try {
            spmd_partition(g);
            FAIL("no error for " << f);
        } catch (const InputError& e) {
            CHECK(std::string(e.what()).find(std::string(f) + ":5:") != std::string::npos);
        }
    }
}

TEST_CASE("spmd: modules already partitioned, or not sharded, pass unchanged", "[hlo][spmd]") {
    // XLA's partitioned output keeps its shardings: its collectives say it is partitioned.
    const HloModule llama = read_hlo(data("xla_repo_models_preopt/hlo_llama3_8b_cp_bf16_1x4.hlo"));
    CHECK(spmd_state(llama) == SpmdState::Partitioned);
    // JAX's seed modules (Shardy's shardings) hold their all-reduces: after partitioning, or
    // a per-replica region (before optimizations). The MaxText step names no num_partitions
    // (one device).
    for (const char* f : {"jax_seed_workloads/lstm_imdb_dp8.after_spmd_partitioning.hlo",
                          "jax_seed_workloads/lstm_imdb_dp8.before_optimizations.hlo"})
        CHECK(spmd_state(read_hlo(data(f))) == SpmdState::Partitioned);
    CHECK(spmd_state(read_hlo(data("xla_repo_models_preopt/"
                                   "nv_maxtext_1n1g_jit_train_step_before_optimization.hlo"))) ==
          SpmdState::NotSharded);
    HloImportOptions opts;
    opts.fusion = false;
    opts.call_inliner = false;  // the other pass that would rewrite it (its shard_map call)
    const HloModule lstm =
        read_hlo(data("jax_seed_workloads/lstm_imdb_dp8.after_spmd_partitioning.hlo"));
    CHECK(print_hlo(hlo_after_passes(lstm, opts)) == print_hlo(lstm));
}

TEST_CASE("spmd: --hlo-passes names the pass", "[hlo][spmd]") {
    HloImportOptions o;
    apply_hlo_passes("fusion", o);
    CHECK_FALSE(o.spmd_partitioner);
    apply_hlo_passes("spmd-partitioner", o);
    CHECK(o.spmd_partitioner);
    CHECK(hlo_pass_names().find("spmd-partitioner") != std::string::npos);
}
