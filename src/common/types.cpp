#include "tpusim/common/types.h"

#include <cmath>

namespace tpusim {

Cycle ClockDomain::from(const ClockDomain& other, Cycle c) const {
    // c / f_other * f_this, rounded up; exact when the ratio is rational in MHz units.
    const long double v = static_cast<long double>(c) * mhz_ / other.mhz_;
    const long double r = std::ceil(v - 1e-9L);
    return r < 0 ? 0 : static_cast<Cycle>(r);
}

}  // namespace tpusim
