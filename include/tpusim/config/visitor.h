#pragma once
// Every config struct lists its fields once, in a `visit(ConfigVisitor&)` member:
//
//   void visit(ConfigVisitor& v) {
//       v.value("rows", rows, Limits::power_of_two(), "PEs", "rows of the systolic array");
//   }
//
// Loading (with unknown-key and type checks), range validation, `--set` overrides, the
// `config --dump` output and the key table in docs/config.md are all visitors over that one
// list, so a parameter is declared in exactly one place with its default, unit and meaning.
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace tpusim {

struct Limits {
    double min = -std::numeric_limits<double>::infinity();
    double max = std::numeric_limits<double>::infinity();
    bool min_exclusive = false;
    bool power_of_two = false;
    // Why a power of two is needed (the hardware structure that takes the value as a bit
    // field), said in the error; null when no reason is recorded.
    const char* pow2_why = nullptr;

    static Limits any() { return {}; }
    static Limits positive() { return {0, std::numeric_limits<double>::infinity(), true, false}; }
    static Limits non_negative() {
        return {0, std::numeric_limits<double>::infinity(), false, false};
    }
    static Limits at_least(double lo) {
        return {lo, std::numeric_limits<double>::infinity(), false, false};
    }
    static Limits range(double lo, double hi) { return {lo, hi, false, false}; }
    static Limits pow2(const char* why = nullptr) {
        return {1, std::numeric_limits<double>::infinity(), false, true, why};
    }
    static Limits pow2_max(double hi, const char* why = nullptr) {
        return {1, hi, false, true, why};
    }
    // Fraction in [0, 1].
    static Limits fraction() { return {0, 1, false, false}; }

    // Empty when `v` is acceptable, else what was expected ("a power of two >= 1").
    std::string violation(double v, bool integer) const;
};

class ConfigVisitor {
 public:
    virtual ~ConfigVisitor() = default;
    virtual void value(const char* key, std::int64_t& v, Limits lim, const char* unit,
                       const char* doc) = 0;
    virtual void value(const char* key, double& v, Limits lim, const char* unit,
                       const char* doc) = 0;
    virtual void value(const char* key, bool& v, const char* doc) = 0;
    // A string; when `choices` is not empty the value must be one of them.
    virtual void value(const char* key, std::string& v, const std::vector<std::string>& choices,
                       const char* doc) = 0;

    // An enum class whose enumerators 0 .. N-1 are named `names` (a string in the config file
    // and on the command line). The string overload validates; the enum only ever holds a
    // named enumerator.
    template <class E, std::size_t N>
    void choice(const char* key, E& v, const std::array<const char*, N>& names, const char* doc) {
        const std::vector<std::string> choices(names.begin(), names.end());
        std::string s = names[static_cast<std::size_t>(v)];
        value(key, s, choices, doc);
        for (std::size_t i = 0; i < N; ++i) {
            if (s == names[i]) v = static_cast<E>(i);
        }
    }

    template <class S>
    void section(const char* key, S& s, const char* doc) {
        if (begin_section(key, doc)) {
            s.visit(*this);
            end_section();
        }
    }

 protected:
    // Returns false to skip the section's fields (e.g. absent from a JSON file).
    virtual bool begin_section(const char* key, const char* doc) = 0;
    virtual void end_section() = 0;
};

// A visitor that knows each key's dotted name ("mxu.rows"): the section bookkeeping shared by
// the visitors that list keys (the key table, `config --keys --json`).
class DottedKeyVisitor : public ConfigVisitor {
 protected:
    std::string dotted(const char* key) const {
        return prefix_.empty() ? std::string(key) : prefix_.back() + "." + key;
    }
    bool begin_section(const char* key, const char*) override {
        prefix_.push_back(dotted(key));
        return true;
    }
    void end_section() override { prefix_.pop_back(); }

 private:
    std::vector<std::string> prefix_;
};

}  // namespace tpusim
