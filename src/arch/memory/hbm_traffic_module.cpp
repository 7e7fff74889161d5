// sc_spawn (outstanding_per_core threads per stream) needs SystemC's dynamic processes.
#define SC_INCLUDE_DYNAMIC_PROCESSES

#include "tpusim/arch/memory/hbm_traffic_module.h"

#include <algorithm>

#include "tpusim/arch/memory/hbm_module.h"
#include "tpusim/common/sim_time.h"

namespace tpusim {

HbmTrafficGen::HbmTrafficGen(sc_core::sc_module_name name, const HbmTraffic& traffic,
                             const HbmAddressMap& map)
    : sc_module(name), hbm_out("hbm_out"), traffic_(traffic), streams_(traffic, map) {
    for (std::size_t i = 0; i < streams_.size(); ++i) {
        for (int k = 0; k < traffic_.outstanding_per_core; ++k) {
            sc_core::sc_spawn([this, i] { worker(i); }, sc_core::sc_gen_unique_name("stream"));
        }
    }
}

void HbmTrafficGen::worker(std::size_t stream) {
    tlm::tlm_generic_payload p;
    HbmAccessExtension ext;
    while (streams_.wants_more(stream)) {
        const HbmRequest r = streams_.next(stream);
        ext.rows = 1;
        ext.row_bytes = r.bytes;
        ext.stride = r.bytes;
        ext.requester = r.requester;
        p.set_command(r.is_write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
        p.set_address(r.addr);
        p.set_data_ptr(nullptr);  // timing only
        p.set_data_length(static_cast<unsigned>(r.bytes));
        p.set_streaming_width(p.get_data_length());
        p.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        p.set_extension(&ext);
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        hbm_out->b_transport(p, delay);  // returns when the transaction has completed
        p.clear_extension(&ext);
        last_ = std::max(last_, now_cycles());
    }
}

HbmTrafficResult HbmTrafficGen::result(const HbmSystem& hbm, double core_clock_mhz) const {
    return traffic_result(hbm, last_, core_clock_mhz);
}

}  // namespace tpusim
