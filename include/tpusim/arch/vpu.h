#pragma once
// Vector unit timing: a VLIW core's vector slots (2 VALU, 1 vector load, 1 vector store) and
// the cross-lane unit, driven by a stream of vector instructions. Plain C++ (no SystemC): the
// sc_module wrapper is in vpu_module.h.
#include <array>
#include <cstdint>
#include <vector>

#include "tpusim/common/types.h"
#include "tpusim/config/memory_config.h"
#include "tpusim/config/vpu_config.h"

namespace tpusim {

enum class VOp : std::uint8_t {
    Add, Sub, Logic,           // add timing class (Logic: and / xor / shift on 32-bit ints)
    Mul, Fma, Max, Min,
    Cmp, Select, Splat,        // cmp_select class; Splat: scalar register -> every element
    Exp, Log, Rsqrt, Recip, Tanh,  // transcendental unit (EUP)
    Cvt,                       // bf16 <-> f32 unpack / pack
    Load, Store,               // vector load / store against VMEM
    Reduce, Broadcast, Transpose,  // cross-lane unit
};
const char* vop_name(VOp op);

// The bundle slots / units an instruction issues on. An Eup instruction also takes a Valu
// slot for its push cycle.
enum class VUnit : std::uint8_t { Valu, Vld, Vst, Xlu, Eup };
inline constexpr std::size_t kVUnits = 5;
VUnit vop_unit(VOp op);
const char* vunit_name(VUnit u);

// One vector instruction. Registers are physical vreg numbers (-1: none). Load and Store move
// `bytes` between VMEM address `addr` and one vreg (Store reads src[0]).
struct VInstr {
    VOp op = VOp::Add;
    std::int16_t dst = -1;
    std::array<std::int16_t, 3> src{{-1, -1, -1}};
    Addr addr = 0;
    std::uint32_t bytes = 0;
};

struct VectorProgram {
    std::vector<VInstr> instrs;
};

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

// Contract: instructions issue in program order, several per cycle (one bundle), each at the
// earliest cycle not before the previous instruction's issue cycle where
//  - a slot of its unit is free (a slot is held for the op's issue interval; vector loads and
//    stores hold their slot for ceil(bytes / VMEM port bytes per cycle) cycles; an EUP op
//    holds an EUP unit for its interval and a VALU slot for one push cycle),
//  - its source vregs are ready (RAW: producer issue + producer latency),
//  - its result lands no earlier than the previous write of its destination (WAW).
// Reads happen at issue, so in-order issue makes WAR safe. Stores complete when their port
// occupancy ends. `finish_cycle()` is when every issued instruction has completed.
class VpuTiming {
 public:
    VpuTiming(const VpuConfig& vpu, const VmemConfig& vmem);

    // Issues one instruction; returns its issue cycle. Throws std::invalid_argument for a
    // vreg outside [0, vregs).
    Cycle issue(const VInstr& in);
    void run(const VectorProgram& prog);
    // No later instruction issues before cycle `t` (the VPU was handed a program at `t`).
    void advance_to(Cycle t);

    Cycle issue_cycle() const { return cur_; }  // issue cycle of the last instruction
    Cycle finish_cycle() const { return finish_; }
    const VpuCounters& counters() const { return counters_; }

    // The machine state relative to the current issue cycle (everything that can still
    // delay a future instruction). Two equal states behave identically from then on, shifted
    // by the difference of their issue cycles: the fast path uses this to prove a loop has
    // reached its steady state.
    std::vector<std::int64_t> relative_state() const;

    // Slot occupancy and latency of an instruction under this config.
    Cycle occupancy(const VInstr& in) const;
    Cycle latency(const VInstr& in) const;

 private:
    const VpuOpTiming& timing(VOp op) const;

    VpuConfig vpu_;
    std::int64_t load_bpc_, store_bpc_;
    std::array<std::vector<Cycle>, kVUnits> slot_free_;  // per slot: first free cycle
    std::vector<Cycle> ready_;                          // per vreg: result ready cycle
    Cycle cur_ = 0;
    Cycle finish_ = 0;
    VpuCounters counters_;
};

}  // namespace tpusim
