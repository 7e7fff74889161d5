#include "tpusim/arch/memory/hbm_calibrated_module.h"

#include <algorithm>

#include "tpusim/arch/memory/hbm_module.h"

namespace tpusim {

CalibratedHbm::CalibratedHbm(sc_core::sc_module_name name, const HbmConfig& hbm,
                             double core_clock_mhz, std::int64_t cores_per_chip)
    : sc_module(name),
      target_in("target_in"),
      model_(hbm, core_clock_mhz, cores_per_chip),
      capacity_(hbm.capacity_bytes()) {
    target_in.register_b_transport(this, &CalibratedHbm::b_transport);
}

void CalibratedHbm::b_transport(int /*id*/, tlm::tlm_generic_payload& trans,
                                sc_core::sc_time& delay) {
    const Cycle now = ticks_.now();
    const Cycle start = now + ticks_.of(delay);
    Bytes bytes = trans.get_data_length();
    int requester = -1;
    Addr extent = trans.get_address() + bytes;
    if (const auto* ext = trans.get_extension<HbmAccessExtension>()) {
        bytes = static_cast<Bytes>(ext->rows) * ext->row_bytes;
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

}  // namespace tpusim
