#include "tpusim/arch/host/host_link_module.h"

#include "tpusim/arch/core/core_stats.h"
#include "tpusim/common/sim_time.h"

namespace tpusim {

HostLinkModule::HostLinkModule(sc_core::sc_module_name name, const HostConfig& cfg,
                               double core_clock_mhz, int chip)
    : sc_module(name), link_(cfg, core_clock_mhz, chip) {
    core_in.bind(*this);
}

void HostLinkModule::issue(const Instr& in, const UnitRequest& req) {
    const Cycle now = now_cycles();
    const Cycle end = link_.transfer(in.host().bytes, in.host().to_device, now);
    if (CoreStats* s = req.issuer.stats) s->host_busy_cycles += end - now;
    req.reply(UnitDone{now, end, end - now});
}

}  // namespace tpusim
