#pragma once
// SystemC time convention: one SystemC nanosecond is one core-clock cycle. Every model counts
// integer cycles (Cycle); only reports convert to seconds, through the core clock in the
// config. Other clock domains (HBM, ICI) convert into core cycles with ClockDomain::from,
// rounding up, before they touch SystemC time.
#include <systemc>

#include "tpusim/common/types.h"

namespace tpusim {

inline sc_core::sc_time cycles(Cycle n) {
    return sc_core::sc_time(static_cast<double>(n), sc_core::SC_NS);
}

// A SystemC duration (an annotated delay) in core cycles.
inline Cycle to_cycles(const sc_core::sc_time& t) {
    return static_cast<Cycle>(t.to_seconds() * 1e9 + 0.5);
}

// The current simulation time in core cycles.
inline Cycle now_cycles() {
    return static_cast<Cycle>(sc_core::sc_time_stamp().to_seconds() * 1e9 + 0.5);
}

}  // namespace tpusim
