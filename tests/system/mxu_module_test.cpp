// The SystemC Mxu module: both fidelities, driven by the same sequencer-like thread, give the
// same stage events and pass timings; the PE fidelity's results are bit-exact; it writes a VCD.
// One elaboration per TEST_CASE (each runs in its own process).
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "../test_util.h"
#include "tpusim/arch/mxu/mxu.h"
#include "tpusim/arch/mxu/mxu_numerics.h"
#include "tpusim/common/sim_time.h"

namespace tpusim {
namespace {

struct PassData {
    MxuPass pass;
    Cycle push_gap, stream_gap;  // cycles before push_weights, then before stream_lhs
    std::vector<float> w, x, out;
};

// Records the cycle of every stage event of one MXU.
class Monitor : public sc_core::sc_module {
 public:
    SC_HAS_PROCESS(Monitor);
    Monitor(sc_core::sc_module_name name, Mxu& mxu) : sc_module(name), mxu_(mxu) {
        SC_THREAD(watch);
    }
    std::vector<Cycle> events;

 private:
    void watch() {
        for (;;) {
            wait(mxu_.weights_loaded_event() | mxu_.lhs_consumed_event() | mxu_.results_event());
            events.push_back(now_cycles());
        }
    }
    Mxu& mxu_;
};

// Issues the same passes to several MXUs at the same cycles, like a sequencer would.
class Sequencer : public sc_core::sc_module {
 public:
    SC_HAS_PROCESS(Sequencer);
    Sequencer(sc_core::sc_module_name name, std::vector<Mxu*> mxus, std::vector<PassData>& passes)
        : sc_module(name), mxus_(std::move(mxus)), passes_(passes) {
        SC_THREAD(issue);
    }
    bool finished = false;

 private:
    void issue() {
        for (PassData& p : passes_) {
            wait(cycles(p.push_gap));
            p.out.assign(static_cast<std::size_t>(p.pass.m * p.pass.n), -1.0f);
            std::vector<Mxu::PassId> ids;
            for (Mxu* m : mxus_) ids.push_back(m->push_weights(p.pass, p.w.data(), p.pass.n));
            wait(cycles(p.stream_gap));
            for (std::size_t j = 0; j < mxus_.size(); ++j) {
                // Only the PE model writes results; the tile model has no numbers.
                const bool pe = mxus_[j]->fidelity() == MxuFidelity::pe;
                mxus_[j]->stream_lhs(ids[j], p.x.data(), p.pass.k, pe ? p.out.data() : nullptr,
                                     p.pass.n);
            }
        }
        for (Mxu* m : mxus_) m->wait_done(passes_.size() - 1);
        finished = true;
    }
    std::vector<Mxu*> mxus_;
    std::vector<PassData>& passes_;
};

TEST_CASE("mxu module: tile and pe fidelities give the same events and timings", "[mxu]") {
    MxuConfig cfg;
    cfg.rows = 16;
    cfg.cols = 8;
    cfg.weight_load_rows_per_cycle = 2;
    cfg.input_latency_cycles = 2;
    cfg.accumulator_latency_cycles = 1;
    cfg.result_pop_latency_cycles = 3;
    std::mt19937_64 rng(0x5eed0101);
    std::uniform_real_distribution<float> val(-4.0f, 4.0f);
    auto pick = [&](std::int64_t lo, std::int64_t hi) {
        return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
    };
    std::vector<PassData> passes(12);
    for (PassData& p : passes) {
        p.pass = {pick(1, cfg.rows), pick(1, cfg.cols), pick(1, 60)};
        p.push_gap = static_cast<Cycle>(pick(0, 1) ? 0 : pick(1, 50));
        p.stream_gap = static_cast<Cycle>(pick(0, 1) ? 0 : pick(1, 30));
        p.w.resize(static_cast<std::size_t>(p.pass.k * p.pass.n));
        p.x.resize(static_cast<std::size_t>(p.pass.m * p.pass.k));
        for (float& v : p.w) v = val(rng);
        for (float& v : p.x) v = val(rng);
    }
    Mxu tile("tile", cfg, MxuFidelity::tile);
    Mxu pe("pe", cfg, MxuFidelity::pe);
    Sequencer seq("seq", {&tile, &pe}, passes);
    Monitor tile_events("tile_events", tile), pe_events("pe_events", pe);
    sc_core::sc_start();
    REQUIRE(seq.finished);
    for (std::size_t i = 0; i < passes.size(); ++i) {
        INFO("pass " << i);
        CHECK(tile.timing(i) == pe.timing(i));
        const PassData& p = passes[i];
        std::vector<float> ref(p.out.size());
        mxu_reference_gemm(cfg.rows, p.pass.m, p.pass.k, p.pass.n, p.x.data(), p.pass.k, p.w.data(),
                           p.pass.n, ref.data(), p.pass.n);
        CHECK(std::memcmp(ref.data(), p.out.data(), ref.size() * sizeof(float)) == 0);
    }
    CHECK(tile_events.events.size() >= passes.size());
    CHECK(tile_events.events == pe_events.events);
    CHECK(tile.tile_model().passes() == passes.size());
}

TEST_CASE("mxu module: pe fidelity writes a VCD waveform of the array", "[mxu]") {
    MxuConfig cfg;
    cfg.rows = 8;
    cfg.cols = 8;
    test::TempDir dir;
    const std::string base = dir.path("mxu_wave");
    std::vector<PassData> passes(2);
    for (PassData& p : passes) {
        p.pass = {8, 8, 10};
        p.push_gap = p.stream_gap = 0;
        p.w.assign(64, 1.0f);
        p.x.assign(80, 2.0f);
    }
    Mxu pe("pe", cfg, MxuFidelity::pe);
    Sequencer seq("seq", {&pe}, passes);
    sc_core::sc_trace_file* tf = sc_core::sc_create_vcd_trace_file(base.c_str());
    tf->set_time_unit(1, sc_core::SC_NS);
    pe.trace(tf, 8);
    sc_core::sc_start();
    sc_core::sc_close_vcd_trace_file(tf);
    REQUIRE(seq.finished);
    std::ifstream in(base + ".vcd");
    std::stringstream text;
    text << in.rdbuf();
    const std::string vcd = text.str();
    // SystemC writes the dotted names as nested scopes: mxu > pe_7_7 > lhs, psum.
    CHECK(vcd.find("$scope module pe_0_0 $end") != std::string::npos);
    CHECK(vcd.find("$scope module pe_7_7 $end") != std::string::npos);
    CHECK(vcd.find(" psum ") != std::string::npos);
    // Every result is 8 x (1 x 2) = 16: the bottom-right PE's partial sum reaches it.
    CHECK(passes[1].out == std::vector<float>(80, 16.0f));
    CHECK(vcd.find("\n#" + std::to_string(pe.timing(0).results_end) + "\n") != std::string::npos);
}

}  // namespace
}  // namespace tpusim
