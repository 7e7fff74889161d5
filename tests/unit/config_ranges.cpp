// Every numeric config key has a physical range (finite at both ends), so no value can make a
// run hang or print "inf"; the configs' own values and the defaults lie inside it; quoted
// figures stay with the hardware they were quoted for.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "../test_util.h"
#include "config_expect.h"
#include "tpusim/config/tpu_config.h"
#include "tpusim/config/visitor.h"

using tpusim::ConfigVisitor;
using tpusim::Limits;
using tpusim::load_config;
using tpusim::TpuConfig;

namespace {

// Collects (dotted key, limits, value) of every numeric key.
class RangeLister : public ConfigVisitor {
 public:
    struct Key {
        std::string name;
        Limits lim;
        double value;
    };
    std::vector<Key> keys;
    void value(const char* key, std::int64_t& v, Limits lim, const char*, const char*) override {
        keys.push_back({prefix_ + key, lim, static_cast<double>(v)});
    }
    void value(const char* key, double& v, Limits lim, const char*, const char*) override {
        keys.push_back({prefix_ + key, lim, v});
    }
    void value(const char*, bool&, const char*) override {}
    void value(const char*, std::string&, const std::vector<std::string>&, const char*) override {}

 protected:
    bool begin_section(const char* key, const char*) override {
        stack_.push_back(prefix_);
        prefix_ += std::string(key) + ".";
        return true;
    }
    void end_section() override {
        prefix_ = stack_.back();
        stack_.pop_back();
    }

 private:
    std::string prefix_;
    std::vector<std::string> stack_;
};

}  // namespace

TEST_CASE("config: every numeric key has a finite physical range", "[config][ranges]") {
    TpuConfig cfg;
    RangeLister l;
    cfg.visit(l);
    REQUIRE(l.keys.size() > 50);
    for (const auto& k : l.keys) {
        INFO(k.name);
        CHECK(std::isfinite(k.lim.min));
        CHECK(std::isfinite(k.lim.max));
        CHECK(k.lim.violation(k.value, false).empty());  // the default is inside
    }
}

TEST_CASE("config: values outside the range are located errors, not hangs", "[config][ranges]") {
    const std::string v3 = tpusim::test::config_path("tpu_v3_8.json");
    for (const char* bad : {"chip.clock_mhz=1e308", "chip.clock_mhz=1e-4", "chip.clock_mhz=0",
                            "hbm.data_rate_mtps=1e9", "ici.link_bandwidth_gbps=1e-9",
                            "host.pcie_bandwidth_gbps=1e300", "hbm.tREFI=100000000"}) {
        INFO(bad);
        CHECK_THROWS_AS(load_config(v3, {bad}), tpusim::InputError);
    }
    // The ends of the clock range are accepted.
    CHECK(load_config(v3, {"chip.clock_mhz=1"}).chip.clock_mhz == 1.0);
    CHECK(load_config(v3, {"chip.clock_mhz=10000"}).chip.clock_mhz == 10000.0);
}

TEST_CASE("config: a quoted figure only for the hardware it was quoted for", "[config][quoted]") {
    const std::string v3 = tpusim::test::config_path("tpu_v3_8.json");
    // The board file's own hardware: the quote stands, whatever the simulation detail.
    CHECK(load_config(v3).board.quoted_peak_tflops == 420.0);
    CHECK(load_config(v3, {"sim.mxu_fidelity=pe"}).board.quoted_peak_tflops == 420.0);
    // Other hardware (README's what-if, another clock, a compat file): no quote, and why.
    const TpuConfig mxu256 = load_config(v3, {"mxu.rows=256", "mxu.cols=256"});
    CHECK(mxu256.board.quoted_peak_tflops == 0.0);
    CHECK_THAT(mxu256.board.quoted_note, Catch::Matchers::Contains("mxu.cols, mxu.rows"));
    CHECK(load_config(v3, {"chip.clock_mhz=800"}).board.quoted_peak_tflops == 0.0);
    CHECK(load_config(tpusim::test::config_path("compat/scalesim_ws.json"))
              .board.quoted_peak_tflops == 0.0);
    // The memory quote depends on HBM only.
    CHECK(mxu256.board.quoted_memory_gb == 128.0);
    CHECK(load_config(v3, {"hbm.stacks=2"}).board.quoted_memory_gb == 0.0);
    // A quote set after the change applies to the changed hardware.
    CHECK(load_config(v3, {"mxu.rows=256", "board.quoted_peak_tflops=900"})
              .board.quoted_peak_tflops == 900.0);
}
