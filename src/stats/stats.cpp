#include "tpusim/stats/stats.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace tpusim {

StatGroup::StatGroup(std::string name, std::string description)
    : name_(std::move(name)), description_(std::move(description)) {}

StatGroup::StatGroup(std::string name, const StatGroup& original,
                     const std::map<const StatGroup*, std::string>& names)
    : name_(std::move(name)),
      description_(original.description_),
      entries_(original.entries_),
      original_(original.original_ ? original.original_ : &original) {
    for (const StatGroup* child : original.children_) {
        const auto it = names.find(child);
        child_copies_.push_back(std::make_unique<StatGroup>(
            it == names.end() ? child->name_ : it->second, *child, names));
        children_.push_back(child_copies_.back().get());
    }
}

void StatGroup::counter(std::string name, const std::uint64_t& value, std::string unit,
                        std::string description) {
    entries_.push_back({std::move(name), std::move(unit), std::move(description), &value, {}});
}

void StatGroup::formula(std::string name, std::function<double()> f, std::string unit,
                        std::string description) {
    entries_.push_back(
        {std::move(name), std::move(unit), std::move(description), nullptr, std::move(f)});
}

void StatGroup::add_child(const StatGroup& child) { children_.push_back(&child); }

nlohmann::json StatGroup::to_json() const {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& e : entries_) {
        if (e.counter) {
            j[e.name] = *e.counter;
        } else {
            const double v = e.formula();
            j[e.name] = std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
        }
    }
    for (const auto* c : children_) j[c->name()] = c->to_json();
    return j;
}

void StatGroup::describe(nlohmann::json& out, const std::string& prefix) const {
    const std::string p = prefix.empty() ? name_ : prefix + "." + name_;
    for (const auto& e : entries_) {
        out[p + "." + e.name] = {{"unit", e.unit}, {"description", e.description}};
    }
    for (const auto* c : children_) c->describe(out, p);
}

double StatGroup::lookup(const std::string& path) const {
    const auto dot = path.find('.');
    if (dot == std::string::npos) {
        for (const auto& e : entries_) {
            if (e.name == path) return e.counter ? static_cast<double>(*e.counter) : e.formula();
        }
    } else {
        const std::string head = path.substr(0, dot);
        for (const auto* c : children_) {
            if (c->name() == head) return c->lookup(path.substr(dot + 1));
        }
    }
    throw std::out_of_range("no statistic " + path + " in " + name_);
}

std::unordered_map<const StatGroup*, std::uint64_t> StatGroup::multiplicities() const {
    std::unordered_map<const StatGroup*, std::uint64_t> out;
    count_copies(out);
    return out;
}

void StatGroup::count_copies(std::unordered_map<const StatGroup*, std::uint64_t>& out) const {
    ++out[original_ ? original_ : this];
    for (const auto* c : children_) c->count_copies(out);
}

std::vector<const std::uint64_t*> StatGroup::counters() const {
    std::vector<const std::uint64_t*> out;
    collect_counters(out);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

void StatGroup::collect_counters(std::vector<const std::uint64_t*>& out) const {
    for (const Entry& e : entries_)
        if (e.counter) out.push_back(e.counter);
    for (const auto* c : children_) c->collect_counters(out);
}

}  // namespace tpusim
