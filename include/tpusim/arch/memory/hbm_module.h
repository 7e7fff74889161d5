#pragma once
// SystemC wrapper of one chip's HBM: a TLM-2.0 target (blocking transport) in front of the
// plain C++ HbmSystem. Timing only: payloads carry no data (the data pointer is unused).
//
// Speed contract: one SystemC wake-up per completed transaction, never one per burst or per
// command. Callers hand over large transactions (a DMA chunk, typically 64 KiB); a single
// SC_THREAD runs the controller ahead to the next completion and notifies that caller. Many
// callers may be blocked in b_transport at once; their bursts interleave in the controller.
#include <tlm_utils/multi_passthrough_target_socket.h>

#include <cstdint>
#include <systemc>
#include <tlm>
#include <unordered_map>

#include "tpusim/arch/memory/hbm_system.h"
#include "tpusim/config/hbm_config.h"

namespace tpusim {

// Optional on a payload: a 2-D strided access and the requesting TensorCore (for the
// local/remote half). Without it a payload is one contiguous row of data_length bytes with
// no locality accounting.
struct HbmAccessExtension : tlm::tlm_extension<HbmAccessExtension> {
    std::int64_t rows = 1;
    Bytes row_bytes = 0;
    Bytes stride = 0;
    int requester = -1;

    tlm::tlm_extension_base* clone() const override { return new HbmAccessExtension(*this); }
    void copy_from(const tlm::tlm_extension_base& e) override {
        *this = static_cast<const HbmAccessExtension&>(e);
    }
};

class BurstHbm : public sc_core::sc_module {
 public:
    // Any number of initiators (DMA engines of both cores) bind here.
    tlm_utils::multi_passthrough_target_socket<BurstHbm> target_in;

    BurstHbm(sc_core::sc_module_name name, const HbmConfig& cfg, double core_clock_mhz,
             std::uint32_t cores_per_chip);

    HbmSystem& system() { return hbm_; }
    StatGroup& stats() { return hbm_.stats(); }

 private:
    void b_transport(int id, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
    void run();

    HbmSystem hbm_;
    sc_core::sc_event arrival_;
    std::unordered_map<std::uint64_t, sc_core::sc_event*> waiting_;
    std::uint64_t next_tag_ = 0;
};

}  // namespace tpusim
