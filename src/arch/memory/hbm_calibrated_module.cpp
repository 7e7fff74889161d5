#include "tpusim/arch/memory/hbm_calibrated_module.h"

#include <algorithm>

#include "tpusim/arch/memory/hbm_module.h"
#include "tpusim/common/threads.h"

namespace tpusim {

CalibratedHbm::CalibratedHbm(sc_core::sc_module_name name, const HbmConfig& hbm,
                             double core_clock_mhz, std::int64_t cores_per_chip,
                             const HbmCalibration& cal)
    : sc_module(name),
      target_in("target_in"),
      model_(hbm, core_clock_mhz, cores_per_chip, cal),
      capacity_(hbm.capacity_bytes()) {
    target_in.bind(*this);
}

CalibratedHbm::CalibratedHbm(sc_core::sc_module_name name, const HbmConfig& hbm,
                             double core_clock_mhz, std::int64_t cores_per_chip)
    : sc_module(name),
      target_in("target_in"),
      model_(hbm, core_clock_mhz, cores_per_chip,
             measure_hbm(hbm, core_clock_mhz, cores_per_chip, worker_threads() > 1)),
      capacity_(hbm.capacity_bytes()) {
    target_in.bind(*this);
}

void CalibratedHbm::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
    const Cycle now = ticks_.now();
    const Cycle start = now + ticks_.of(delay);
    Bytes bytes = trans.get_data_length();
    int requester = -1;
    Addr extent = trans.get_address() + bytes;
    if (const auto* ext = trans.get_extension<HbmAccessExtension>()) {
        bytes = model_.bytes_moved(trans.get_address(), ext->rows, ext->row_bytes, ext->stride);
        requester = ext->requester;
        extent = trans.get_address() +
                 static_cast<Addr>(std::max<std::int64_t>(ext->rows - 1, 0)) * ext->stride +
                 ext->row_bytes;
    }
    const Cycle end =
        model_.transfer(trans.get_address(), bytes, trans.is_write(), requester, start);
    delay = ticks_.time(end - now);
    trans.set_response_status(extent > capacity_ ? tlm::TLM_ADDRESS_ERROR_RESPONSE
                                                 : tlm::TLM_OK_RESPONSE);
}

tlm::tlm_sync_enum CalibratedHbm::nb_transport_fw(tlm::tlm_generic_payload& trans,
                                                  tlm::tlm_phase& phase, sc_core::sc_time& delay) {
    b_transport(trans, delay);
    phase = tlm::END_RESP;
    return tlm::TLM_COMPLETED;
}

bool CalibratedHbm::get_direct_mem_ptr(tlm::tlm_generic_payload& /*trans*/, tlm::tlm_dmi& /*dmi*/) {
    return false;
}

unsigned int CalibratedHbm::transport_dbg(tlm::tlm_generic_payload& /*trans*/) { return 0; }

}  // namespace tpusim
