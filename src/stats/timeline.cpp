#include "tpusim/stats/timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <ostream>

#include "tpusim/common/error.h"

namespace tpusim {

Timeline::Timeline(double clock_mhz, bool enabled, std::size_t max_events)
    : clock_mhz_(clock_mhz), enabled_(enabled), max_events_(max_events) {}

std::uint32_t Timeline::track(const std::string& process, const std::string& thread) {
    for (std::uint32_t i = 0; i < tracks_.size(); ++i) {
        if (tracks_[i].process == process && tracks_[i].thread == thread) return i;
    }
    bool kept = true;
    if (!limits_.cores.empty() && process.rfind("core ", 0) == 0) {
        const std::int64_t core = std::strtoll(process.c_str() + 5, nullptr, 10);
        kept = std::find(limits_.cores.begin(), limits_.cores.end(), core) != limits_.cores.end();
    }
    tracks_.push_back({process, thread, kept});
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

void Timeline::span(std::uint32_t track, std::string_view name, Cycle start, Cycle end,
                    bool capped) {
    if (!enabled_) return;
    end = std::max(start, end);
    if (!tracks_[track].kept || end < limits_.from || start > limits_.to) {
        ++filtered_;
        return;
    }
    start = std::max(start, limits_.from);
    end = std::min(end, limits_.to);
    if (capped && events_.size() >= max_events_) {
        ++dropped_;
        return;
    }
    events_.push_back({track, intern(name), start, end});
}

void Timeline::counter(const std::string& process, std::string_view name, Cycle at, double value) {
    if (!enabled_) return;
    if (at > limits_.to) {
        ++filtered_;
        return;
    }
    auto pit = std::find(counter_procs_.begin(), counter_procs_.end(), process);
    if (pit == counter_procs_.end()) pit = counter_procs_.insert(pit, process);
    const auto proc = static_cast<std::uint32_t>(pit - counter_procs_.begin());
    const std::uint32_t id = intern(name);
    // A sample before the window holds at its start: the latest such one is kept there.
    at = std::max(at, limits_.from);
    for (auto it = counters_.rbegin(); it != counters_.rend(); ++it) {
        if (it->process != proc || it->name != id) continue;
        if (it->at == at) {
            it->value = value;
            return;
        }
        break;
    }
    counters_.push_back({proc, id, at, value});
}

std::int64_t Timeline::to_ns(Cycle c) const {
    return static_cast<std::int64_t>(std::llround(static_cast<double>(c) * 1000.0 / clock_mhz_));
}

void Timeline::write(std::ostream& out) const {
    // Events by track, then start; at equal starts the longer first.
    std::vector<std::uint32_t> order(events_.size());
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
        const Event& x = events_[a];
        const Event& y = events_[b];
        if (x.track != y.track) return x.track < y.track;
        if (x.start != y.start) return x.start < y.start;
        if (x.end != y.end) return x.end > y.end;
        return a < b;
    });
    // Interval partitioning: each span goes to the first thread of its track that is free
    // at its start (in nanoseconds, the unit written), so no thread holds overlapping slices.
    std::vector<std::uint32_t> lane(events_.size(), 0);
    std::vector<std::uint32_t> lanes(tracks_.size(), 0);
    {
        std::vector<std::int64_t> lane_end;
        std::uint32_t cur = ~0u;
        for (std::uint32_t i : order) {
            const Event& e = events_[i];
            if (e.track != cur) {
                cur = e.track;
                lane_end.clear();
            }
            const std::int64_t s = to_ns(e.start);
            std::uint32_t l = 0;
            while (l < lane_end.size() && lane_end[l] > s) ++l;
            if (l == lane_end.size()) lane_end.push_back(0);
            lane_end[l] = to_ns(e.end);
            lane[i] = l;
            lanes[cur] = std::max<std::uint32_t>(lanes[cur], l + 1);
        }
    }
    // Only processes and threads that carry events are declared; pids in the order the
    // processes were first named, tids unique over the file.
    std::vector<std::string> procs;
    std::vector<std::uint32_t> track_pid(tracks_.size(), 0), track_tid(tracks_.size(), 0);
    auto q = [](const std::string& s) { return nlohmann::json(s).dump(); };
    out << "{\"traceEvents\":[\n";
    bool first = true;
    auto sep = [&]() {
        if (!first) out << ",\n";
        first = false;
    };
    std::uint32_t next_tid = 1;
    for (std::uint32_t t = 0; t < tracks_.size(); ++t) {
        if (lanes[t] == 0) continue;
        auto pit = std::find(procs.begin(), procs.end(), tracks_[t].process);
        if (pit == procs.end()) {
            procs.push_back(tracks_[t].process);
            pit = procs.end() - 1;
            const auto pid = static_cast<std::uint32_t>(procs.size());
            sep();
            out << fmt::format(
                R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":{}}}}})", pid,
                q(*pit));
            sep();
            out << fmt::format(
                R"({{"ph":"M","name":"process_sort_index","pid":{},"args":{{"sort_index":{}}}}})",
                pid, pid);
        }
        track_pid[t] = static_cast<std::uint32_t>(pit - procs.begin()) + 1;
        track_tid[t] = next_tid;
        for (std::uint32_t l = 0; l < lanes[t]; ++l) {
            const std::string name =
                l == 0 ? tracks_[t].thread : fmt::format("{} #{}", tracks_[t].thread, l + 1);
            sep();
            out << fmt::format(
                R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})",
                track_pid[t], next_tid, q(name));
            sep();
            out << fmt::format(
                R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
                track_pid[t], next_tid, next_tid);
            ++next_tid;
        }
    }
    // Counter processes (the power track): declared after the units' processes.
    std::vector<std::uint32_t> counter_pid(counter_procs_.size(), 0);
    for (const Counter& c : counters_) {
        if (counter_pid[c.process] != 0) continue;
        auto pit = std::find(procs.begin(), procs.end(), counter_procs_[c.process]);
        if (pit == procs.end()) {
            procs.push_back(counter_procs_[c.process]);
            const auto pid = static_cast<std::uint32_t>(procs.size());
            sep();
            out << fmt::format(
                R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":{}}}}})", pid,
                q(procs.back()));
            sep();
            out << fmt::format(
                R"({{"ph":"M","name":"process_sort_index","pid":{},"args":{{"sort_index":{}}}}})",
                pid, pid);
            pit = procs.end() - 1;
        }
        counter_pid[c.process] = static_cast<std::uint32_t>(pit - procs.begin()) + 1;
    }
    std::vector<std::string> quoted;
    quoted.reserve(names_.size());
    for (const auto& n : names_) quoted.push_back(q(n));
    // Microseconds with exactly three decimals: whole nanoseconds, no float rounding.
    auto us = [](std::int64_t ns) { return fmt::format("{}.{:03}", ns / 1000, ns % 1000); };
    for (std::uint32_t i : order) {
        const Event& e = events_[i];
        const std::int64_t s = to_ns(e.start);
        sep();
        out << fmt::format(
            R"({{"ph":"X","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{"start_cycle":{},"end_cycle":{}}}}})",
            quoted[e.name], track_pid[e.track], track_tid[e.track] + lane[i], us(s),
            us(to_ns(e.end) - s), e.start, e.end);
    }
    for (const Counter& c : counters_) {
        sep();
        out << fmt::format(R"({{"ph":"C","name":{},"pid":{},"ts":{},"args":{{{}:{:.6g}}}}})",
                           quoted[c.name], counter_pid[c.process], us(to_ns(c.at)), quoted[c.name],
                           c.value);
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
