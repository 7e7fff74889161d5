#pragma once
// Basic quantities. Time in every model is an integer count of cycles of a named clock
// domain; conversion between domains goes through the frequencies in the config.
#include <cstdint>

namespace tpusim {

using Cycle = std::uint64_t;  // cycles of the core clock unless the name says otherwise
using Bytes = std::uint64_t;
using Addr = std::uint64_t;

inline constexpr Bytes kKiB = 1024;
inline constexpr Bytes kMiB = 1024 * kKiB;
inline constexpr Bytes kGiB = 1024 * kMiB;

// A clock domain: converts cycles to seconds and between domains. Frequencies come from the
// config; the conversion rounds up so that a transfer never completes before it could.
class ClockDomain {
 public:
  explicit ClockDomain(double mhz) : mhz_(mhz) {}
  double mhz() const { return mhz_; }
  double seconds(Cycle c) const { return static_cast<double>(c) / (mhz_ * 1e6); }
  double microseconds(Cycle c) const { return static_cast<double>(c) / mhz_; }
  // Cycles of this domain that cover `c` cycles of `other` (rounded up).
  Cycle from(const ClockDomain& other, Cycle c) const;

 private:
  double mhz_;
};

inline bool is_power_of_two(std::uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }
inline std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }
inline std::uint64_t round_up(std::uint64_t a, std::uint64_t b) { return ceil_div(a, b) * b; }

}  // namespace tpusim
