#pragma once
// A progress line on stderr for long runs: what has been done, how far (%) and the estimated
// time left. On a terminal one line is rewritten in place ("\r"); elsewhere (a file, a CI
// log) each update is a whole line, less often. Silent for work that ends within a few
// seconds.
#include <chrono>
#include <cstdio>
#include <string>

namespace tpusim {

class ProgressLine {
 public:
    // `quiet_seconds`: nothing is printed before that much wall time has passed.
    explicit ProgressLine(bool enabled, std::FILE* out = stderr, double quiet_seconds = 3.0);
    ~ProgressLine();  // ends a rewritten line with a newline

    // `what` describes the state ("simulated 1.234 ms"); `fraction` in [0, 1] is how much is
    // done, negative when unknown (no % and no ETA). Throttled: cheap to call often.
    void update(const std::string& what, double fraction);
    void finish();
    double elapsed_seconds() const;

 private:
    bool enabled_;
    std::FILE* out_;
    double quiet_seconds_;
    bool tty_;
    bool printed_ = false;
    std::chrono::steady_clock::time_point t0_, last_;
};

}  // namespace tpusim
