#include "tpusim/arch/host/host_link_module.h"

#include "tpusim/common/sim_time.h"

namespace tpusim {

HostLinkModule::HostLinkModule(sc_core::sc_module_name name, const HostConfig& cfg,
                               double core_clock_mhz, int chip)
    : sc_module(name), link_(cfg, core_clock_mhz, chip) {
    core_in.bind(*this);
}

void HostLinkModule::transfer(const HostInstr& h, ReplyTo reply) {
    reply(link_.transfer(h.bytes, h.to_device, now_cycles()));
}

}  // namespace tpusim
