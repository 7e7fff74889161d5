#include "tpusim/stats/timeline.h"

#include <algorithm>
#include <fstream>
#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tpusim/common/error.h"

namespace tpusim {

Timeline::Timeline(double clock_mhz, bool enabled, std::size_t max_events)
    : clock_mhz_(clock_mhz), enabled_(enabled), max_events_(max_events) {}

std::uint32_t Timeline::track(const std::string& process, const std::string& thread) {
    for (std::uint32_t i = 0; i < tracks_.size(); ++i) {
        if (tracks_[i].process == process && tracks_[i].thread == thread) return i;
    }
    auto pit = std::find(processes_.begin(), processes_.end(), process);
    std::uint32_t pid = static_cast<std::uint32_t>(pit - processes_.begin());
    if (pit == processes_.end()) processes_.push_back(process);
    std::uint32_t tid = 0;
    for (const auto& t : tracks_) tid += t.pid == pid;
    tracks_.push_back({pid, tid, process, thread});
    return static_cast<std::uint32_t>(tracks_.size() - 1);
}

std::uint32_t Timeline::intern(std::string_view s) {
    auto it = name_ids_.find(std::string(s));
    if (it != name_ids_.end()) return it->second;
    names_.emplace_back(s);
    const auto id = static_cast<std::uint32_t>(names_.size() - 1);
    name_ids_.emplace(names_.back(), id);
    return id;
}

void Timeline::span(std::uint32_t track, std::string_view name, Cycle start, Cycle end) {
    if (!enabled_) return;
    if (events_.size() >= max_events_) {
        ++dropped_;
        return;
    }
    events_.push_back({track, intern(name), start, std::max(start, end)});
}

void Timeline::write(std::ostream& out) const {
    // Streamed by hand: a timeline can hold millions of events.
    auto us = [&](Cycle c) { return static_cast<double>(c) / clock_mhz_; };
    auto q = [](const std::string& s) { return nlohmann::json(s).dump(); };
    out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    bool first = true;
    auto sep = [&]() {
        if (!first) out << ",\n";
        first = false;
    };
    for (std::uint32_t p = 0; p < processes_.size(); ++p) {
        sep();
        out << fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":{}}}}})",
                           p, q(processes_[p]));
        sep();
        out << fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"args":{{"sort_index":{}}}}})",
                           p, p);
    }
    for (const auto& t : tracks_) {
        sep();
        out << fmt::format(
            R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", t.pid,
            t.tid, q(t.thread));
        sep();
        out << fmt::format(
            R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
            t.pid, t.tid, t.tid);
    }
    std::vector<std::string> quoted;
    quoted.reserve(names_.size());
    for (const auto& n : names_) quoted.push_back(q(n));
    for (const auto& e : events_) {
        const Track& t = tracks_[e.track];
        sep();
        out << fmt::format(R"({{"ph":"X","name":{},"pid":{},"tid":{},"ts":{:.4f},"dur":{:.4f},"args":{{"start_cycle":{},"end_cycle":{}}}}})",
                           quoted[e.name], t.pid, t.tid, us(e.start), us(e.end - e.start),
                           e.start, e.end);
    }
    out << "\n],\"otherData\":{\"clock_mhz\":" << clock_mhz_ << ",\"dropped_events\":" << dropped_
        << "}}\n";
}

void Timeline::write_file(const std::string& path) const {
    std::ofstream out(path);
    if (!out) throw InputError(path, "", "cannot write timeline file");
    write(out);
    if (!out) throw InputError(path, "", "error while writing timeline file");
}

}  // namespace tpusim
