#include "tpusim/arch/host/host_link_module.h"

#include <algorithm>

#include "tpusim/arch/core/core_stats.h"
#include "tpusim/common/sim_time.h"

namespace tpusim {

HostLinkModule::HostLinkModule(sc_core::sc_module_name name, const HostConfig& cfg,
                               double core_clock_mhz, int chip)
    : sc_module(name), link_(cfg, core_clock_mhz, chip) {
    core_in.bind(*this);
    serve_.owner = this;
}

void HostLinkModule::issue(const Instr& in, const UnitRequest& req) {
    waiting_.push_back(Waiting{&in, req});
    serve_.request_update();
}

void HostLinkModule::Serve::update() { owner->serve(); }

void HostLinkModule::serve() {
    // The requests of one delta cycle, first come first served by issuing core (the order in
    // which the scheduler ran the cores' processes is not the hardware's).
    std::stable_sort(waiting_.begin(), waiting_.end(), [](const Waiting& a, const Waiting& b) {
        return a.req.issuer.core < b.req.issuer.core;
    });
    const Cycle now = now_cycles();
    for (const Waiting& w : waiting_) {
        const Cycle end = link_.transfer(w.in->host().bytes, w.in->host().to_device, now);
        if (CoreStats* s = w.req.issuer.stats) s->host_busy_cycles += end - now;
        w.req.reply(UnitDone{now, end, end - now});
    }
    waiting_.clear();
}

}  // namespace tpusim
