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
//
// The tree is the one source of a report's figures: its JSON, and every total over the board
// (multiplicities()). A group that stands for several (a chip that SPMD symmetry did not
// simulate runs as a simulated one does) is a copy: it reads the original's members under its
// own name, so the report lists it and each total counts the original once per copy.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <unordered_map>
#include <vector>

namespace tpusim {

class StatGroup {
 public:
    explicit StatGroup(std::string name, std::string description = "");
    // A copy of `original` named `name`: the same counters and formulas (read when the report is
    // written, not a snapshot) and copies of its children, each under its own name or the one
    // `names` gives it. Contract: `original` and its children outlive the copy.
    StatGroup(std::string name, const StatGroup& original,
              const std::map<const StatGroup*, std::string>& names = {});
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

    // For each original group of this tree, how many groups report its figures: itself and
    // its copies. A total over the tree counts an original's counters that many times.
    std::unordered_map<const StatGroup*, std::uint64_t> multiplicities() const;
    // Every counter of this tree, each once (a copy's are its original's), sorted by address:
    // what loop reuse snapshots at trip boundaries and charges for the trips it skips.
    std::vector<const std::uint64_t*> counters() const;

 private:
    struct Entry {
        std::string name, unit, description;
        const std::uint64_t* counter = nullptr;
        std::function<double()> formula;
    };
    std::string name_, description_;
    std::vector<Entry> entries_;
    std::vector<const StatGroup*> children_;
    void count_copies(std::unordered_map<const StatGroup*, std::uint64_t>& out) const;
    void collect_counters(std::vector<const std::uint64_t*>& out) const;

    const StatGroup* original_ = nullptr;  // a copy's original; nullptr for an original
    std::vector<std::unique_ptr<StatGroup>> child_copies_;  // a copy's children
};

}  // namespace tpusim
