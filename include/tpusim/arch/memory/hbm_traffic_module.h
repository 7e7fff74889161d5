#pragma once
// HbmTrafficGen: the synthetic streams of HbmTraffic (hbm_traffic.h) as a TLM-2.0 initiator,
// for `tpusim bench hbm` to drive the BurstHbm that `tpusim run --set sim.hbm_model=burst`
// binds the DMA engines to. Per requesting core, outstanding_per_core SC_THREADs each issue the
// core's next transaction when their last one has completed (BurstHbm's b_transport blocks
// until then), as run_hbm_traffic does on the plain HbmSystem.
#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>
#include <systemc>
#include <tlm>

#include "tpusim/arch/memory/hbm_traffic.h"

namespace tpusim {

class HbmTrafficGen : public sc_core::sc_module {
 public:
    tlm_utils::simple_initiator_socket<HbmTrafficGen> hbm_out;

    // Contract: `map` outlives the module (the target BurstHbm's address map).
    HbmTrafficGen(sc_core::sc_module_name name, const HbmTraffic& traffic,
                  const HbmAddressMap& map);
    // The core cycle of the last completion (0 before the simulation has run).
    Cycle last_cycle() const { return last_; }
    // The run's figures from the HBM's counters, as run_hbm_traffic reports them.
    HbmTrafficResult result(const HbmSystem& hbm, double core_clock_mhz) const;

 private:
    void worker(std::size_t stream);

    HbmTraffic traffic_;
    HbmTrafficStreams streams_;
    Cycle last_ = 0;
};

}  // namespace tpusim
