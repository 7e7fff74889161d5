#pragma once
// The chip's host link as the module its cores' host_out ports are bound to: infeed and
// outfeed transfers timed by HostLink (host_link.h), first come, first served.
#include <systemc>

#include "tpusim/arch/core/core_ports.h"
#include "tpusim/arch/host/host_link.h"
#include "tpusim/config/board_config.h"

namespace tpusim {

class HostLinkModule : public sc_core::sc_module, public HostIf {
 public:
    sc_core::sc_export<HostIf> core_in{"core_in"};

    HostLinkModule(sc_core::sc_module_name name, const HostConfig& cfg, double core_clock_mhz,
                   int chip);
    void transfer(const HostInstr& h, ReplyTo reply) override;
    const HostLink& link() const { return link_; }

 private:
    HostLink link_;
};

}  // namespace tpusim
