#pragma once
// Timeline in Chrome trace-event JSON (loads in the Perfetto UI and chrome://tracing): one
// process per core / chip / link group, one thread (track) per unit. Spans are recorded in
// core cycles and converted to microseconds when written.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tpusim/common/types.h"

namespace tpusim {

class Timeline {
 public:
    // A disabled timeline records nothing (callers need not check).
    explicit Timeline(double clock_mhz, bool enabled = true,
                      std::size_t max_events = 4'000'000);

    bool enabled() const { return enabled_; }
    // A track handle for (process, thread), e.g. ("core 0", "MXU 1"). Idempotent.
    std::uint32_t track(const std::string& process, const std::string& thread);
    // A complete event [start, end) on a track; `name` is interned.
    void span(std::uint32_t track, std::string_view name, Cycle start, Cycle end);

    std::size_t events() const { return events_.size(); }
    std::size_t dropped() const { return dropped_; }
    void write(std::ostream& out) const;
    // Throws InputError if the file cannot be written.
    void write_file(const std::string& path) const;

 private:
    struct Event {
        std::uint32_t track, name;
        Cycle start, end;
    };
    struct Track {
        std::uint32_t pid, tid;
        std::string process, thread;
    };
    std::uint32_t intern(std::string_view s);

    double clock_mhz_;
    bool enabled_;
    std::size_t max_events_;
    std::size_t dropped_ = 0;
    std::vector<Event> events_;
    std::vector<Track> tracks_;
    std::vector<std::string> processes_;
    std::vector<std::string> names_;
    std::unordered_map<std::string, std::uint32_t> name_ids_;
};

}  // namespace tpusim
