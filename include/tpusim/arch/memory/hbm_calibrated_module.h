#pragma once
// sim.hbm_model = "calibrated": the chip's HBM as calibrated transfer queues
// (hbm_calibrated.h) behind a TLM-2.0 target socket that the DMA engines of every core of the
// chip bind to, as they bind to the burst-level HbmModule. Loosely timed: b_transport takes
// the transaction's start as annotated delay, answers with its completion as annotated delay
// and never waits (the DMA engines run in DmaEngine::HbmTiming::annotated). A transaction that
// reaches past the capacity is timed on the last half and answered with
// TLM_ADDRESS_ERROR_RESPONSE.
#include <tlm_utils/multi_passthrough_target_socket.h>

#include <cstdint>
#include <systemc>
#include <tlm>

#include "tpusim/arch/memory/cycle_ticks.h"
#include "tpusim/arch/memory/hbm_calibrated.h"
#include "tpusim/config/hbm_config.h"
#include "tpusim/stats/stats.h"

namespace tpusim {

class CalibratedHbm : public sc_core::sc_module {
 public:
    // Any number of initiators (the DMA engines of the chip's cores) bind here.
    tlm_utils::multi_passthrough_target_socket<CalibratedHbm> target_in;

    CalibratedHbm(sc_core::sc_module_name name, const HbmConfig& hbm, double core_clock_mhz,
                  std::int64_t cores_per_chip);
    StatGroup& stats() { return model_.stats(); }
    HbmCalibratedModel& model() { return model_; }

 private:
    void b_transport(int id, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
    HbmCalibratedModel model_;
    Bytes capacity_;
    CycleTicks ticks_;
};

}  // namespace tpusim
