#pragma once
// The chip's host link as the unit its cores issue infeed and outfeed instructions to (their
// host_out ports are bound to core_in, UnitIf; never full): transfers timed by HostLink
// (host_link.h), first come, first served; the requests of one delta cycle in the order of
// their cores (at its end, whichever core process the scheduler ran first: SPMD symmetry
// needs each chip to order its cores' requests alike).
#include <systemc>
#include <vector>

#include "tpusim/arch/core/unit_if.h"
#include "tpusim/arch/host/host_link.h"
#include "tpusim/config/board_config.h"

namespace tpusim {

class HostLinkModule : public sc_core::sc_module, public UnitIf {
 public:
    sc_core::sc_export<UnitIf> core_in{"core_in"};

    HostLinkModule(sc_core::sc_module_name name, const HostConfig& cfg, double core_clock_mhz,
                   int chip);
    // UnitIf: a host instruction (HostInstr).
    bool full(const Instr&) const override { return false; }
    const sc_core::sc_event& freed(const Instr&) const override { return never_; }
    void issue(const Instr& in, const UnitRequest& req) override;
    std::string track_name() const override { return "host"; }
    const HostLink& link() const { return link_; }

 private:
    // Serves the delta cycle's requests in the update phase (a primitive channel's update()).
    struct Serve : sc_core::sc_prim_channel {
        HostLinkModule* owner = nullptr;
        void update() override;
    };
    struct Waiting {
        const Instr* in = nullptr;
        UnitRequest req;
    };
    void serve();
    HostLink link_;
    std::vector<Waiting> waiting_;
    Serve serve_;
    sc_core::sc_event never_;  // never notified: the link is never full
};

}  // namespace tpusim
