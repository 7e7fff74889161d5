#include "tpusim/common/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace tpusim {

namespace {

// After the quiet start: every second on a terminal, every 10 s in a log.
constexpr double kTtyInterval = 1.0;
constexpr double kLogInterval = 10.0;

std::string duration_text(double s) {
    if (s < 90) return fmt::format("{:.0f} s", s);
    if (s < 5400) return fmt::format("{:.0f} min", s / 60);
    return fmt::format("{:.1f} h", s / 3600);
}

}  // namespace

ProgressLine::ProgressLine(bool enabled, std::FILE* out, double quiet_seconds)
    : enabled_(enabled),
      out_(out),
      quiet_seconds_(quiet_seconds),
      tty_(isatty(fileno(out)) != 0),
      t0_(std::chrono::steady_clock::now()),
      last_(t0_) {}

ProgressLine::~ProgressLine() { finish(); }

double ProgressLine::elapsed_seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

void ProgressLine::update(const std::string& what, double fraction) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - t0_).count();
    const double since = std::chrono::duration<double>(now - last_).count();
    if (elapsed < quiet_seconds_ || (printed_ && since < (tty_ ? kTtyInterval : kLogInterval))) {
        return;
    }
    std::string line = fmt::format("[tpusim] {}", what);
    if (fraction >= 0) {
        line += fmt::format(", {:.1f}% done", 100.0 * fraction);
    }
    line += fmt::format(", {} elapsed", duration_text(elapsed));
    if (fraction > 0.01 && fraction < 1) {
        line += fmt::format(", about {} left", duration_text(elapsed * (1 - fraction) / fraction));
    }
    if (tty_) {
        std::fputs(("\r" + line + "\033[K").c_str(), out_);
    } else {
        std::fputs((line + "\n").c_str(), out_);
    }
    std::fflush(out_);
    printed_ = true;
    last_ = now;
}

void ProgressLine::finish() {
    if (printed_ && tty_) std::fputs("\n", out_);
    printed_ = false;
}

}  // namespace tpusim
