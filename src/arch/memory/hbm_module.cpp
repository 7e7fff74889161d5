#include "tpusim/arch/memory/hbm_module.h"

#include "tpusim/common/error.h"
#include "tpusim/common/sim_time.h"

namespace tpusim {

BurstHbm::BurstHbm(sc_core::sc_module_name name, const HbmConfig& cfg, double core_clock_mhz,
                   std::uint32_t cores_per_chip)
    : sc_module(name), target_in("target_in"), hbm_(cfg, core_clock_mhz, cores_per_chip) {
    target_in.register_b_transport(this, &BurstHbm::b_transport);
    SC_HAS_PROCESS(BurstHbm);
    SC_THREAD(run);
}

void BurstHbm::b_transport(int /*id*/, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
    sc_core::wait(delay);
    delay = sc_core::SC_ZERO_TIME;
    HbmRequest r;
    r.addr = trans.get_address();
    r.bytes = trans.get_data_length();
    r.is_write = trans.is_write();
    if (const auto* ext = trans.get_extension<HbmAccessExtension>()) {
        r.rows = ext->rows;
        r.bytes = ext->row_bytes;
        r.stride = ext->stride;
        r.requester = ext->requester;
    }
    r.tag = next_tag_++;
    try {
        hbm_.submit(r, now_cycles());
    } catch (const InputError&) {
        trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return;
    }
    sc_core::sc_event done;
    waiting_[r.tag] = &done;
    arrival_.notify(sc_core::SC_ZERO_TIME);
    sc_core::wait(done);
    trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

void BurstHbm::run() {
    for (;;) {
        const Cycle now = now_cycles();
        hbm_.advance_to(now);
        for (const HbmCompletion& c : hbm_.take_completions()) {
            const auto it = waiting_.find(c.tag);
            if (it == waiting_.end()) continue;
            it->second->notify(sc_core::SC_ZERO_TIME);
            waiting_.erase(it);
        }
        const Cycle next = hbm_.run_to_next_completion();
        if (next == kNever) {
            sc_core::wait(arrival_);
        } else if (next > now) {
            sc_core::wait(cycles(next - now), arrival_);
        }
        // next <= now: a request completed within this cycle; collect it at once.
    }
}

}  // namespace tpusim
