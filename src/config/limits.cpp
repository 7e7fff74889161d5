#include <fmt/format.h>

#include <cmath>

#include "tpusim/config/visitor.h"

namespace tpusim {

std::string Limits::violation(double v, bool integer) const {
    const bool has_min = std::isfinite(min);
    const bool has_max = std::isfinite(max);
    auto num = [&](double x) {
        return integer ? fmt::format("{}", static_cast<long long>(x)) : fmt::format("{}", x);
    };
    std::string expected;
    if (power_of_two) {
        expected = "a power of two";
        if (pow2_why != nullptr) expected += fmt::format(" ({})", pow2_why);
    } else if (integer) {
        expected = "an integer";
    } else {
        expected = "a number";
    }
    if (has_min && has_max) {
        expected += fmt::format(" in [{}, {}]", num(min), num(max));
    } else if (has_min) {
        expected += fmt::format(" {} {}", min_exclusive ? ">" : ">=", num(min));
    } else if (has_max) {
        expected += fmt::format(" <= {}", num(max));
    }
    bool ok = std::isfinite(v);
    if (ok && has_min) ok = min_exclusive ? v > min : v >= min;
    if (ok && has_max) ok = v <= max;
    if (ok && power_of_two) {
        ok = v >= 1 && std::floor(v) == v &&
             (static_cast<unsigned long long>(v) & (static_cast<unsigned long long>(v) - 1)) == 0;
    }
    return ok ? std::string() : expected;
}

}  // namespace tpusim
