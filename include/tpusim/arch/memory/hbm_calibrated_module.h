#pragma once
// sim.hbm_model = "calibrated": the chip's HBM as calibrated transfer queues
// (hbm_calibrated.h) behind a TLM-2.0 target socket that the DMA engines of every core of the
// chip bind to, as they bind to the burst-level BurstHbm. Loosely timed: b_transport takes
// the transaction's start as annotated delay, answers with its completion as annotated delay
// and never waits (the DMA engines run in DmaEngine::HbmTiming::Annotated). A transaction that
// reaches past the capacity is timed on the last half and answered with
// TLM_ADDRESS_ERROR_RESPONSE.
//
// The module is its own forward interface: an initiator's b_transport is one virtual call
// (a DMA chunk each, millions per training step), where a multi_passthrough socket would
// route it through its callback binders. Any number of initiators bind to target_in; the
// target never calls back (no backward path in the loosely-timed protocol it serves).
#include <cstdint>
#include <systemc>
#include <tlm>

#include "tpusim/arch/memory/cycle_ticks.h"
#include "tpusim/arch/memory/hbm_calibrated.h"
#include "tpusim/config/hbm_config.h"
#include "tpusim/stats/stats.h"

namespace tpusim {

class CalibratedHbm : public sc_core::sc_module, public tlm::tlm_fw_transport_if<> {
 public:
    // Any number of initiators (the DMA engines of the chip's cores) bind here.
    tlm::tlm_target_socket<32, tlm::tlm_base_protocol_types, 0> target_in;

    // `cal`: the calibration of this config, shared by the board's chips (Simulator's
    // HbmCalibrationCache).
    CalibratedHbm(sc_core::sc_module_name name, const HbmConfig& hbm, double core_clock_mhz,
                  std::int64_t cores_per_chip, const HbmCalibration& cal);
    // A chip on its own (a test rig): measures its calibration.
    CalibratedHbm(sc_core::sc_module_name name, const HbmConfig& hbm, double core_clock_mhz,
                  std::int64_t cores_per_chip);
    StatGroup& stats() { return model_.stats(); }
    HbmCalibratedModel& model() { return model_; }

    // tlm_fw_transport_if. nb_transport_fw completes at once (TLM_COMPLETED, as b_transport);
    // no DMI, no debug transport (timing only: payloads carry no data).
    void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) override;
    tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                       sc_core::sc_time& delay) override;
    bool get_direct_mem_ptr(tlm::tlm_generic_payload& trans, tlm::tlm_dmi& dmi) override;
    unsigned int transport_dbg(tlm::tlm_generic_payload& trans) override;

 private:
    HbmCalibratedModel model_;
    Bytes capacity_;
    CycleTicks ticks_;
};

}  // namespace tpusim
