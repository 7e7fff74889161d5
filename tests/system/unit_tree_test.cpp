// The module a benchmark or a test drives is the module a run instantiates: the subtree of each
// unit under a core in the tree `tpusim info --modules` prints (Simulator::module_tree) equals
// the tree of the unit built alone, as `tpusim bench mxu` and the system tests build it, and the
// core reaches each unit through a port of its own.
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "../test_util.h"
#include "arch/vpu/vpu_module.h"
#include "sim/board.h"
#include "tpusim/arch/memory/dma_engine.h"
#include "tpusim/arch/mxu/mxu.h"
#include "tpusim/config/tpu_config.h"
#include "tpusim/sim/simulator.h"

using namespace tpusim;

namespace {

// The lines of `tree` at or below `root`, indentation dropped and `root` cut off the names
// ("mxu_0.core_in  (sc_export)" -> ".core_in  (sc_export)").
std::vector<std::string> subtree(const std::string& tree, const std::string& root) {
    std::vector<std::string> out;
    std::istringstream in(tree);
    std::string line;
    while (std::getline(in, line)) {
        const std::string name = line.substr(line.find_first_not_of(' '));
        if (name.compare(0, root.size(), root) != 0) continue;
        const std::string rest = name.substr(root.size());
        if (rest.compare(0, 2, "  ") == 0 || rest[0] == '.') out.push_back(rest);
    }
    return out;
}

}  // namespace

TEST_CASE("bench and run build the same module for every unit of a core", "[system][modules]") {
    const TpuConfig cfg = load_config(test::config_path("tpu_v3_8.json"));
    Simulator sim(cfg, RunOptions{});
    const std::string run_tree = sim.module_tree();
    const std::string core = "board.chip0.core0";

    const std::int64_t depth = cfg.sequencer.unit_queue_depth;
    Mxu mxu("mxu_0", cfg.mxu, cfg.sim.mxu_fidelity, depth);  // as bench mxu builds it
    Vpu vpu("vpu", cfg.vpu, cfg.vmem, depth);
    DmaEngine dma("dma", cfg.dma, 0, cfg.hbm.capacity_bytes(), DmaEngine::HbmTiming::Annotated);
    for (const sc_core::sc_module* unit :
         std::vector<const sc_core::sc_module*>{&mxu, &vpu, &dma}) {
        const std::string name = unit->basename();
        INFO(name);
        const std::vector<std::string> alone = subtree(module_tree(*unit), name);
        REQUIRE(alone.size() > 1);  // the module and its core_in export at least
        CHECK(subtree(run_tree, core + "." + name) == alone);
    }
    // One port per unit on the core, the MXU port bound once per MXU.
    for (const char* port : {"dma_out", "mxu_out", "vpu_out", "ici_out", "host_out"}) {
        INFO(port);
        CHECK(subtree(run_tree, core + "." + port) == std::vector<std::string>{"  (sc_port)"});
    }
    CHECK(subtree(run_tree, core + ".mxu_1") == subtree(module_tree(mxu), "mxu_0"));
}
