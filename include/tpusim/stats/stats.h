#pragma once
// Statistics. A component keeps its counters as plain integer members and registers each one
// once, with a name, unit and description; the hot path is `++busy_cycles_`. Ratios are
// formulas evaluated only when the report is written.
//
//   StatGroup stats_{"mxu0", "matrix unit 0"};
//   std::uint64_t busy_cycles_ = 0;
//   ...
//   stats_.counter("busy_cycles", busy_cycles_, "cycles", "cycles with a tile in the array");
//   stats_.formula("utilization", [this] { return ...; }, "fraction", "busy / elapsed");
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tpusim {

class StatGroup {
 public:
    explicit StatGroup(std::string name, std::string description = "");
    StatGroup(const StatGroup&) = delete;
    StatGroup& operator=(const StatGroup&) = delete;

    // Contract: `value` outlives this group (it is a member of the same component).
    void counter(std::string name, const std::uint64_t& value, std::string unit,
                 std::string description);
    void formula(std::string name, std::function<double()> f, std::string unit,
                 std::string description);
    // Contract: `child` outlives this group; it appears under its own name.
    void add_child(const StatGroup& child);

    const std::string& name() const { return name_; }
    // {"counter": value, ..., "child": {...}}
    nlohmann::json to_json() const;
    // Flat {"group.child.counter": {"unit": ..., "description": ...}} for documentation.
    void describe(nlohmann::json& out, const std::string& prefix = "") const;
    // Value of a counter or formula by dotted path relative to this group ("mxu0.busy_cycles").
    double lookup(const std::string& path) const;

 private:
    struct Entry {
        std::string name, unit, description;
        const std::uint64_t* counter = nullptr;
        std::function<double()> formula;
    };
    std::string name_, description_;
    std::vector<Entry> entries_;
    std::vector<const StatGroup*> children_;
};

}  // namespace tpusim
