#pragma once
// Core cycles <-> SystemC time in integer arithmetic, for the loosely-timed DMA path (one
// annotated delay each way per DMA chunk, millions per training step). sim_time.h's cycles()
// and to_cycles() go through doubles and the simcontext on every call; these give the same
// values, bit for bit, and fall back to them where that is not plain to see.
#include <systemc>

#include "tpusim/common/sim_time.h"
#include "tpusim/common/types.h"

namespace tpusim {

class CycleTicks {
 public:
    // SystemC time units per core cycle (1 ns): read once, when first needed (the time
    // resolution is fixed by then).
    sc_dt::uint64 per_cycle() {
        if (per_cycle_ == 0) {
            one_ = cycles(1);
            per_cycle_ = one_.value();
        }
        return per_cycle_;
    }

    // = cycles(n): sc_time(n, SC_NS) is n * per_cycle units exactly while n * per_cycle is an
    // integer a double holds exactly (below 2^52; per_cycle is a power of ten), and so is
    // one cycle times n (sc_time's inline *=, where from_value is a library call).
    sc_core::sc_time time(Cycle n) {
        const sc_dt::uint64 p = per_cycle();
        if (p == 0 || n >= kExact / p) return cycles(n);
        sc_core::sc_time t = one_;
        t *= static_cast<double>(n);
        return t;
    }

    // = to_cycles(t) for a whole number of cycles below 2^40 (its double rounding is exact
    // there); anything else through to_cycles itself.
    // SystemC's default resolution (1 ps, 1000 units per cycle) divides by a constant, which
    // the compiler turns into a multiply: no 64-bit division per call.
    Cycle of(const sc_core::sc_time& t) {
        const sc_dt::uint64 p = per_cycle();
        const sc_dt::uint64 v = t.value();
        const sc_dt::uint64 q = p == kDefaultPerCycle ? v / kDefaultPerCycle : p == 0 ? 0 : v / p;
        if (p == 0 || q * p != v || q >= kExactCycles) return to_cycles(t);
        return q;
    }

    // = now_cycles().
    Cycle now() { return of(sc_core::sc_time_stamp()); }

 private:
    static constexpr sc_dt::uint64 kExact = sc_dt::uint64{1} << 52;
    static constexpr sc_dt::uint64 kExactCycles = sc_dt::uint64{1} << 40;
    static constexpr sc_dt::uint64 kDefaultPerCycle = 1000;
    sc_dt::uint64 per_cycle_ = 0;
    sc_core::sc_time one_;  // one cycle
};

}  // namespace tpusim
