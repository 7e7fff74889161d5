#pragma once
// sim.hbm_model = "calibrated": the chip's HBM as calibrated transfer queues
// (hbm_calibrated.h) behind one DMA export per core of the chip. A transfer's completion is
// known when it is submitted and delivered at its cycle.
#include <cstdint>
#include <memory>
#include <queue>
#include <systemc>
#include <vector>

#include "tpusim/arch/core/core_ports.h"
#include "tpusim/arch/memory/hbm_calibrated.h"
#include "tpusim/config/hbm_config.h"
#include "tpusim/stats/stats.h"

namespace tpusim {

class CalibratedHbm : public sc_core::sc_module {
 public:
    // core_in[i]: the DMA path of the chip's i-th core.
    sc_core::sc_vector<sc_core::sc_export<DmaIf>> core_in;

    SC_HAS_PROCESS(CalibratedHbm);
    CalibratedHbm(sc_core::sc_module_name name, const HbmConfig& hbm, double core_clock_mhz,
                  std::int64_t cores_per_chip);
    ~CalibratedHbm() override;
    void transfer(int core_on_chip, const DmaDescriptor& d, ReplyTo reply);
    StatGroup& stats() { return model_.stats(); }

 private:
    struct CorePort : DmaIf {
        CalibratedHbm* hbm = nullptr;
        int core = 0;
        void transfer(const DmaDescriptor& d, ReplyTo reply) override {
            hbm->transfer(core, d, reply);
        }
    };
    void deliver();
    HbmCalibratedModel model_;
    std::vector<std::unique_ptr<CorePort>> ports_;
    std::uint64_t next_seq_ = 1;  // submission order: equal cycles complete in it
    struct Due {
        Cycle t;
        std::uint64_t seq;
        ReplyTo reply;
        bool operator>(const Due& o) const { return t != o.t ? t > o.t : seq > o.seq; }
    };
    std::priority_queue<Due, std::vector<Due>, std::greater<Due>> due_;
    sc_core::sc_event_queue due_q_;
};

}  // namespace tpusim
