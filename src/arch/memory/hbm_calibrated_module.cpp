#include "tpusim/arch/memory/hbm_calibrated_module.h"

#include "tpusim/common/sim_time.h"

namespace tpusim {

CalibratedHbm::CalibratedHbm(sc_core::sc_module_name name, const HbmConfig& hbm,
                             double core_clock_mhz, std::int64_t cores_per_chip)
    : sc_module(name),
      core_in("core_in", static_cast<std::size_t>(cores_per_chip)),
      model_(hbm, core_clock_mhz, cores_per_chip) {
    for (std::int64_t c = 0; c < cores_per_chip; ++c) {
        ports_.push_back(std::make_unique<CorePort>());
        ports_.back()->hbm = this;
        ports_.back()->core = static_cast<int>(c);
        core_in[static_cast<std::size_t>(c)].bind(*ports_.back());
    }
    SC_METHOD(deliver);
    sensitive << due_q_;
    dont_initialize();
}

CalibratedHbm::~CalibratedHbm() = default;

void CalibratedHbm::transfer(int core_on_chip, const DmaDescriptor& d, ReplyTo reply) {
    const Cycle now = now_cycles();
    const Cycle t = model_.transfer(d.hbm_addr, d.bytes(), !d.to_vmem(), core_on_chip, now);
    due_.push({t, next_seq_++, reply});
    due_q_.notify(cycles(t - now));
}

void CalibratedHbm::deliver() {
    const Cycle now = now_cycles();
    while (!due_.empty() && due_.top().t <= now) {
        const ReplyTo reply = due_.top().reply;
        due_.pop();
        reply(now);
    }
}

}  // namespace tpusim
