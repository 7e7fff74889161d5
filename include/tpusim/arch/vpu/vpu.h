#pragma once
// Vector unit timing: a VLIW core's vector slots (2 VALU, 1 vector load, 1 vector store), the
// transcendental unit (EUP) and the cross-lane unit (XLU), driven by a stream of vector
// instructions. Plain C++ (no SystemC): the sc_module wrapper is in vpu_module.h.
#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include "tpusim/common/types.h"
#include "tpusim/config/memory_config.h"
#include "tpusim/config/vpu_config.h"
#include "tpusim/program/vector_isa.h"

namespace tpusim {

struct VpuCounters {
    std::uint64_t instructions = 0;
    std::array<std::uint64_t, kVUnits> issued{};       // instructions per unit (EUP ops: Eup)
    std::array<std::uint64_t, kVUnits> busy_cycles{};  // slot-cycles held, summed over slots
    Bytes vmem_bytes_loaded = 0;
    Bytes vmem_bytes_stored = 0;

    VpuCounters& operator+=(const VpuCounters& o);
    VpuCounters& operator-=(const VpuCounters& o);
    VpuCounters scaled(std::uint64_t n) const;  // n times these counts
};

// Contract: the bundles a compiler's list scheduler packs from the program. Instructions are
// placed in program order, each in the earliest cycle
//  - not before the cycle of the instruction `schedule_window_instrs` places older (1 makes
//    issue strictly in order),
//  - where a slot of its unit is free for its whole occupancy (the op's issue interval;
//    vector loads and stores: ceil(bytes / VMEM port bytes per cycle); an EUP op also needs
//    a VALU slot for its one push cycle),
//  - with its sources ready (RAW: producer issue + latency) and its result landing after the
//    previous write (WAW) and after the last read (WAR) of its destination (reads at issue).
// Several instructions share a cycle (one bundle) up to the slot counts. A store completes
// when its port occupancy ends. `finish_cycle()` is when every instruction has completed.
class VpuTiming {
 public:
    VpuTiming(const VpuConfig& vpu, const VmemConfig& vmem);

    // Places one instruction; returns its issue cycle. Throws std::invalid_argument for a
    // vreg outside [0, vregs).
    Cycle issue(const VInstr& in);
    void run(const VectorProgram& prog);
    // No later instruction issues before cycle `t` (the VPU was handed a program at `t`).
    void advance_to(Cycle t);

    // Earliest cycle any later instruction may issue in (rises with the window).
    Cycle front_cycle() const { return front_; }
    Cycle finish_cycle() const { return finish_; }
    const VpuCounters& counters() const { return counters_; }

    // The machine state relative to front_cycle() (everything that can still delay a later
    // instruction). Two equal states behave identically from then on, shifted by the
    // difference of their front cycles: the fast path uses this to prove that a loop has
    // reached its steady state.
    std::vector<std::int64_t> relative_state() const;

    // Slot occupancy and latency of an instruction under this config.
    Cycle occupancy(const VInstr& in) const;
    Cycle latency(const VInstr& in) const;

 private:
    const VpuOpTiming& timing(VOp op) const;
    bool fits(std::size_t unit, Cycle t, Cycle occ) const;
    void reserve(std::size_t unit, Cycle t, Cycle occ);
    void move_front(Cycle t);

    VpuConfig vpu_;
    std::int64_t load_bpc_, store_bpc_;
    std::array<std::int64_t, kVUnits> slots_{};
    // Per unit: slots in use in each cycle from front_ on (index 0 is front_).
    std::array<std::deque<std::uint8_t>, kVUnits> used_;
    std::vector<Cycle> ready_;      // per vreg: when the last write lands
    std::vector<Cycle> last_read_;  // per vreg: issue cycle of the last reader
    std::deque<Cycle> window_;      // issue cycles of the last schedule_window_instrs - 1
    Cycle front_ = 0;
    Cycle finish_ = 0;
    VpuCounters counters_;
};

}  // namespace tpusim
