// Address mapping and rejection of bad HBM parameters.
#include <catch2/catch.hpp>
#include <random>

#include "../test_util.h"
#include "tpusim/arch/memory/hbm_address.h"
#include "tpusim/common/error.h"
#include "tpusim/config/tpu_config.h"

using namespace tpusim;

TEST_CASE("the address map follows the configured field order and splits the chip by core",
          "[hbm]") {
    const TpuConfig cfg = load_config(test::config_path("tpu_v3_8.json"));
    const HbmConfig& h = cfg.hbm;
    const auto cores = static_cast<std::uint32_t>(cfg.chip.cores_per_chip);
    const HbmAddressMap map(h, cores);
    const Bytes bb = static_cast<Bytes>(h.burst_bytes());
    CHECK(map.burst_bytes() == bb);
    CHECK(map.capacity_bytes() == h.capacity_bytes());
    CHECK(map.owner_bytes() * cores == h.capacity_bytes());

    // "...-pc-ch-st": the stack field is least significant. Each core owns stacks / cores
    // stacks, so the first burst after 0 is in the core's next stack.
    const std::uint32_t ch_per_core = static_cast<std::uint32_t>(h.channels()) / cores;
    const std::uint32_t stacks_per_core = static_cast<std::uint32_t>(h.stacks) / cores;
    CHECK(map.decode(0).channel == 0);
    CHECK(map.decode(bb).channel == ch_per_core / stacks_per_core);
    CHECK(map.decode(bb * stacks_per_core).channel == 1);
    CHECK(map.decode(bb * ch_per_core).pseudo_channel == 1);
    // Next above pc: bank group, then column.
    const Bytes per_pc_step = bb * ch_per_core * static_cast<Bytes>(h.pseudo_channels);
    CHECK(map.decode(per_pc_step).bank_group == 1);
    CHECK(map.decode(per_pc_step * static_cast<Bytes>(h.bank_groups)).column == 1);
    // The second half belongs to core 1 and to the upper half of the channels.
    const HbmLocation hi = map.decode(map.owner_bytes());
    CHECK(hi.owner == 1);
    CHECK(hi.channel == ch_per_core);
    CHECK(map.is_local(0, 0));
    CHECK_FALSE(map.is_local(0, map.owner_bytes() + 5));

    // decode/encode round trip on random burst addresses.
    std::mt19937_64 rng(42);
    for (int i = 0; i < 1000; ++i) {
        const Addr a = (rng() % h.capacity_bytes()) / bb * bb;
        CHECK(map.encode(map.decode(a)) == a);
    }
}

TEST_CASE("a different mapping string moves the fields", "[hbm]") {
    TpuConfig cfg = load_config(test::config_path("tpu_v3_8.json"),
                                {"hbm.address_mapping=ro-ba-bg-pc-ch-st-co"});
    const HbmAddressMap map(cfg.hbm, 2);
    // Column lowest: consecutive bursts stay in one row of one bank.
    const Bytes bb = map.burst_bytes();
    CHECK(map.decode(bb).column == 1);
    CHECK(map.decode(bb).channel == 0);
    CHECK(map.decode(static_cast<Bytes>(cfg.hbm.row_bytes)).channel != 0);
}

TEST_CASE("bad HBM parameters are rejected with the offending key", "[hbm]") {
    const std::string v3 = test::config_path("tpu_v3_8.json");
    auto rejects = [&](const std::string& set, const std::string& pointer) {
        try {
            load_config(v3, {set});
            FAIL("accepted " << set);
        } catch (const InputError& e) {
            CHECK(e.where() == pointer);
        }
    };
    rejects("hbm.timing.tREFI=200", "/hbm/timing/tREFI");
    rejects("hbm.timing.tRAS=5", "/hbm/timing/tRAS");
    rejects("hbm.timing.burst_length=3", "/hbm/timing/burst_length");
    rejects("hbm.address_mapping=ro-ba-bg-co-pc-ch", "/hbm/address_mapping");
    rejects("hbm.address_mapping=ro-ba-bg-co-pc-ch-ch", "/hbm/address_mapping");
    rejects("hbm.stacks=3", "/hbm/stacks");
    rejects("hbm.write_drain_low=0.9", "/hbm/write_drain_low");
    rejects("hbm.timing.tCL=0", "/hbm/timing/tCL");
}
