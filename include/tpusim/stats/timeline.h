#pragma once
// Timeline in Chrome trace-event JSON (loads in the Perfetto UI and chrome://tracing): one
// process per core / chip / link group, one named track per unit. Spans are recorded in core
// cycles and converted to whole nanoseconds when written.
//
// Contract (what Perfetto's JSON importer needs, docs/program.md "Timeline"): slices on one
// thread never partially overlap. A unit whose work overlaps itself (several DMA descriptors
// in flight, two collectives on one core) is written as several threads of one track ("DMA",
// "DMA #2", ...): each span goes to the first of them that is free at its start, so every
// thread's slices are disjoint. Every boundary is a whole number of nanoseconds (one rounding
// per cycle count, so back-to-back spans meet exactly), and only processes and threads that
// carry events are declared.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tpusim/common/types.h"

namespace tpusim {

// What a timeline keeps: the cores whose tracks it records (empty: every core; processes
// that are not a core, such as ICI links, are always kept) and a window of simulated time,
// spans clipped to it.
struct TimelineLimits {
    std::vector<std::int64_t> cores;
    Cycle from = 0, to = ~Cycle{0};
    std::size_t max_events = 4'000'000;  // spans past it are dropped (dropped())
};

class Timeline {
 public:
    // A disabled timeline records nothing (callers need not check).
    explicit Timeline(double clock_mhz, bool enabled = true, std::size_t max_events = 4'000'000);

    bool enabled() const { return enabled_; }
    // Before the first track() call.
    void limit(const TimelineLimits& l) {
        limits_ = l;
        max_events_ = l.max_events;
    }
    // Spans left out by the limits (other cores, outside the window).
    std::size_t filtered() const { return filtered_; }
    // A track handle for (process, thread), e.g. ("core 0", "MXU 1"). Idempotent.
    std::uint32_t track(const std::string& process, const std::string& thread);
    // A complete event [start, end) on a track; `name` is interned. Spans on one track may
    // overlap (see the contract above). An uncapped span (a summary track written after the
    // run, such as the critical path's kernels) is kept past max_events, within the limits'
    // cores and window.
    void span(std::uint32_t track, std::string_view name, Cycle start, Cycle end,
              bool capped = true);

    // A counter sample: from cycle `at` on, `name` in process `process` has `value` (until its
    // next sample), e.g. the power track ("power", "W per chip"). Kept within the window of
    // the limits, whatever the cores.
    void counter(const std::string& process, std::string_view name, Cycle at, double value);

    std::size_t events() const { return events_.size(); }
    std::size_t dropped() const { return dropped_; }
    // Cycle -> whole nanoseconds, rounded to nearest; monotonic, so disjoint spans stay so.
    std::int64_t to_ns(Cycle c) const;
    void write(std::ostream& out) const;
    // Throws InputError if the file cannot be written.
    void write_file(const std::string& path) const;

 private:
    struct Event {
        std::uint32_t track, name;
        Cycle start, end;
    };
    struct Counter {
        std::uint32_t process, name;
        Cycle at;
        double value;
    };
    struct Track {
        std::string process, thread;
        bool kept = true;  // within limits_.cores
    };
    std::uint32_t intern(std::string_view s);

    double clock_mhz_;
    bool enabled_;
    std::size_t max_events_;
    std::size_t dropped_ = 0, filtered_ = 0;
    TimelineLimits limits_;
    std::vector<Event> events_;
    std::vector<Counter> counters_;
    std::vector<std::string> counter_procs_;
    std::vector<Track> tracks_;
    std::vector<std::string> names_;
    std::unordered_map<std::string, std::uint32_t> name_ids_;
};

}  // namespace tpusim
