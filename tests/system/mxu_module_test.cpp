// The SystemC Mxu module, driven as the TensorCore drives it (matmul instructions through its
// UnitIf export): both fidelities tell the same completions, the PE fidelity's results are
// bit-exact, the issuer's counters receive the blocks' work, and a traced PE Mxu writes a VCD.
// One elaboration per TEST_CASE (each runs in its own process).
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "../test_util.h"
#include "tpusim/arch/core/core_stats.h"
#include "tpusim/arch/mxu/mxu.h"
#include "tpusim/arch/mxu/mxu_numerics.h"
#include "tpusim/common/sim_time.h"

namespace tpusim {
namespace {

struct BlockData {
    Instr in;
    Cycle gap = 0;  // cycles before it is issued
    std::vector<float> a, b;
    std::vector<float> c;  // pe fidelity's results
};

// Issues the same blocks to several MXUs at the same cycles, like a sequencer would: each when
// its MXU is not full. Records every completion, per MXU in issue order.
class BlockIssuer : public sc_core::sc_module, public UnitDoneIf {
 public:
    sc_core::sc_vector<sc_core::sc_port<UnitIf>> mxu_out;

    SC_HAS_PROCESS(BlockIssuer);
    BlockIssuer(sc_core::sc_module_name name, std::vector<Mxu*> mxus,
                std::vector<BlockData>& blocks, CoreStats* stats)
        : sc_module(name),
          mxu_out("mxu_out", mxus.size()),
          done_(mxus.size()),
          mxus_(std::move(mxus)),
          blocks_(blocks),
          stats_(stats) {
        for (std::size_t j = 0; j < mxus_.size(); ++j) mxu_out[j].bind(mxus_[j]->core_in);
        SC_THREAD(issue);
    }
    const std::vector<UnitDone>& done(std::size_t mxu) const { return done_[mxu]; }

 private:
    void issue() {
        for (BlockData& b : blocks_) {
            wait(cycles(b.gap));
            const MatmulInstr& mm = b.in.mm();
            b.c.assign(static_cast<std::size_t>(mm.m * mm.n), 0.0f);
            for (std::size_t j = 0; j < mxus_.size(); ++j) {
                while (mxu_out[j]->full(b.in)) wait(mxu_out[j]->freed(b.in));
                // Only the PE model computes numbers; the tile model has none.
                if (mxus_[j]->fidelity() == MxuFidelity::Pe) {
                    mxus_[j]->compute_next({b.a.data(), mm.k, b.b.data(), mm.n, b.c.data(), mm.n});
                }
                mxu_out[j]->issue(b.in, UnitRequest{UnitReply{this, j}, Issuer{0, 0, stats_}});
            }
        }
    }
    void done(std::uint64_t tag, const UnitDone& d) override { done_[tag].push_back(d); }

    std::vector<std::vector<UnitDone>> done_;
    std::vector<Mxu*> mxus_;
    std::vector<BlockData>& blocks_;
    CoreStats* stats_;
};

std::vector<BlockData> random_blocks(const MxuConfig& cfg, std::size_t count, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> val(-4.0f, 4.0f);
    auto pick = [&](std::int64_t lo, std::int64_t hi) {
        return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
    };
    std::vector<BlockData> blocks(count);
    for (BlockData& b : blocks) {
        b.in.unit = Unit::Mxu;
        b.in.mm() = MatmulInstr{0, pick(1, 60), pick(1, 3 * cfg.rows), pick(1, 3 * cfg.cols)};
        b.gap = static_cast<Cycle>(pick(0, 1) ? 0 : pick(1, 80));
        b.a.resize(static_cast<std::size_t>(b.in.mm().m * b.in.mm().k));
        b.b.resize(static_cast<std::size_t>(b.in.mm().k * b.in.mm().n));
        for (float& v : b.a) v = val(rng);
        for (float& v : b.b) v = val(rng);
    }
    return blocks;
}

TEST_CASE("mxu module: tile and pe fidelities tell the same completions", "[mxu]") {
    MxuConfig cfg;
    cfg.rows = 16;
    cfg.cols = 8;
    cfg.weight_load_rows_per_cycle = 2;
    cfg.input_latency_cycles = 2;
    cfg.accumulator_latency_cycles = 1;
    cfg.result_pop_latency_cycles = 3;
    std::vector<BlockData> blocks = random_blocks(cfg, 12, 0x5eed0101);
    const std::int64_t depth = 2;
    Mxu tile("tile", cfg, MxuFidelity::Tile, depth);
    Mxu pe("pe", cfg, MxuFidelity::Pe, depth);
    CoreStats stats("core0");
    BlockIssuer issuer("issuer", {&tile, &pe}, blocks, &stats);
    sc_core::sc_start();
    REQUIRE(issuer.done(0).size() == blocks.size());
    REQUIRE(issuer.done(1).size() == blocks.size());
    std::uint64_t passes = 0, useful = 0;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
        INFO("block " << i);
        const UnitDone& t = issuer.done(0)[i];
        CHECK(t == issuer.done(1)[i]);
        CHECK(t.start < t.end);
        CHECK(t.busy > 0);
        if (i > 0) CHECK(t.end > issuer.done(0)[i - 1].end);  // blocks run in order
        const BlockData& b = blocks[i];
        const MatmulInstr& mm = b.in.mm();
        std::vector<float> ref(b.c.size());
        mxu_reference_gemm(cfg.rows, mm.m, mm.k, mm.n, b.a.data(), mm.k, b.b.data(), mm.n,
                           ref.data(), mm.n);
        CHECK(std::memcmp(ref.data(), b.c.data(), ref.size() * sizeof(float)) == 0);
        passes += mxu_gemm_tiles(cfg, mm.m, mm.k, mm.n).size();
        useful += static_cast<std::uint64_t>(mm.m * mm.k * mm.n);
    }
    // Both MXUs counted into the same issuer's counters.
    CHECK(stats.mxu_passes == 2 * passes);
    CHECK(stats.mxu_useful_macs == 2 * useful);
}

TEST_CASE("mxu module: pe fidelity writes a VCD waveform of the array", "[mxu]") {
    MxuConfig cfg;
    cfg.rows = 8;
    cfg.cols = 8;
    test::TempDir dir;
    const std::string base = dir.path("mxu_wave");
    std::vector<BlockData> blocks(2);
    for (BlockData& b : blocks) {
        b.in.unit = Unit::Mxu;
        b.in.mm() = MatmulInstr{0, 10, 8, 8};
        b.a.assign(80, 2.0f);
        b.b.assign(64, 1.0f);
    }
    Mxu pe("pe", cfg, MxuFidelity::Pe, 2);
    BlockIssuer issuer("issuer", {&pe}, blocks, nullptr);
    sc_core::sc_trace_file* tf = sc_core::sc_create_vcd_trace_file(base.c_str());
    tf->set_time_unit(1, sc_core::SC_NS);
    pe.trace(tf, 8);
    sc_core::sc_start();
    sc_core::sc_close_vcd_trace_file(tf);
    REQUIRE(issuer.done(0).size() == 2);
    std::ifstream in(base + ".vcd");
    std::stringstream text;
    text << in.rdbuf();
    const std::string vcd = text.str();
    // SystemC writes the dotted names as nested scopes: mxu > pe_7_7 > lhs, psum.
    CHECK(vcd.find("$scope module pe_0_0 $end") != std::string::npos);
    CHECK(vcd.find("$scope module pe_7_7 $end") != std::string::npos);
    CHECK(vcd.find(" psum ") != std::string::npos);
    // Every result is 8 x (1 x 2) = 16: the bottom-right PE's partial sum reaches it.
    CHECK(blocks[1].c == std::vector<float>(80, 16.0f));
    // The waveform runs to the first block's last result (one pass: the block's end).
    CHECK(vcd.find("\n#" + std::to_string(issuer.done(0)[0].end) + "\n") != std::string::npos);
}

}  // namespace
}  // namespace tpusim
