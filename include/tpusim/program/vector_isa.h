#pragma once
// The vector instruction set the program layer lowers vector ops to and the VPU executes:
// opcodes, the bundle slot (unit) each issues on, and one instruction.
#include <array>
#include <cstdint>
#include <vector>

#include "tpusim/common/types.h"

namespace tpusim {

enum class VOp : std::uint8_t {
    Add,
    Sub,
    Logic,  // add timing class (Logic: and / xor / shift on 32-bit ints)
    Mul,
    Fma,
    Max,
    Min,
    Cmp,
    Select,
    Splat,  // cmp_select class; Splat: scalar register -> every element
    Exp,
    Log,
    Rsqrt,
    Recip,
    Tanh,  // transcendental unit (EUP)
    Cvt,   // bf16 <-> f32 unpack / pack
    Load,
    Store,  // vector load / store against VMEM
    Reduce,
    Broadcast,
    Transpose,  // cross-lane unit
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

}  // namespace tpusim
