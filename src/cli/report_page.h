#pragma once
// The run report as the HTML page reads it (report_page.cpp): typed reads with located errors,
// the kernel rows (the report's `kernels`, or its ops grouped by kernel) and the per-core roofs.
// The page is drawn in report_html.cpp, its charts in report_charts.cpp.
#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tpusim/common/error.h"
#include "tpusim/common/json_io.h"

namespace tpusim::cli {

// Not an anonymous namespace: the CLI is compiled in unity batches with compare.cpp, whose
// anonymous namespace has its own Kernel and read_report.
namespace report_html_detail {

using nlohmann::json;

// Typed reads from the report with located errors: the file and the JSON pointer.
class Fields {
 public:
    explicit Fields(std::string file) : file_(std::move(file)) {}

    [[noreturn]] void fail(const std::string& ptr, const std::string& what) const {
        throw InputError(file_, ptr, what);
    }
    const json& get(const json& obj, const std::string& ptr, const char* key) const {
        if (!obj.is_object()) fail(ptr, "expected an object, got " + json_type_name(obj));
        const auto it = obj.find(key);
        if (it == obj.end())
            fail(json_pointer_child(ptr, key), "missing (not a complete tpusim run report)");
        return *it;
    }
    double num(const json& obj, const std::string& ptr, const char* key) const {
        const json& v = get(obj, ptr, key);
        if (!v.is_number())
            fail(json_pointer_child(ptr, key), "expected a number, got " + json_type_name(v));
        return v.get<double>();
    }
    double num_or(const json& obj, const std::string& ptr, const char* key, double dflt) const {
        return obj.is_object() && obj.contains(key) ? num(obj, ptr, key) : dflt;
    }
    std::string str(const json& obj, const std::string& ptr, const char* key) const {
        const json& v = get(obj, ptr, key);
        if (!v.is_string())
            fail(json_pointer_child(ptr, key), "expected a string, got " + json_type_name(v));
        return v.get<std::string>();
    }
    std::string str_or(const json& obj, const std::string& ptr, const char* key,
                       const std::string& dflt) const {
        return obj.is_object() && obj.contains(key) ? str(obj, ptr, key) : dflt;
    }
    // A count or rate that a roof or a unit count divides or multiplies by.
    double positive(const json& obj, const std::string& ptr, const char* key) const {
        const double v = num(obj, ptr, key);
        if (!(v > 0)) fail(json_pointer_child(ptr, key), fmt::format("expected > 0, got {}", v));
        return v;
    }
    const json& array(const json& obj, const std::string& ptr, const char* key) const {
        const json& v = get(obj, ptr, key);
        if (!v.is_array())
            fail(json_pointer_child(ptr, key), "expected an array, got " + json_type_name(v));
        return v;
    }

 private:
    std::string file_;
};

// The units an op's or kernel's unit_busy_cycles name, in the report's spelling.
constexpr std::array<const char*, 5> kUnits = {"MXU", "VPU", "DMA", "ICI", "host"};

// One row of the kernel table: a kernel of the report's `kernels` (self time on the critical
// path) or, for a report without them, an op and the ops fused into it (its span).
struct Row {
    std::string name, kind, bound;
    std::vector<std::string> members;
    double time_cycles = 0;  // self time (kernels) or span (fallback)
    double share = 0;        // self_cycles / run cycles (kernels only)
    double trips = 1, per_trip_cycles = 0, span_cycles = 0;
    double start = 0, end = 0;
    double flops = 0, hbm_bytes = 0, tflops = 0;
    std::array<double, kUnits.size()> busy{};
};

// The figures every part of the page needs, read once.
struct Page {
    const json* r = nullptr;
    std::string file, timeline;
    double cycles = 0, seconds = 0, mhz = 0;
    double cores = 1, chips = 1, cores_per_chip = 1;
    // How many units of each kind an op's unit_busy_cycles add up over (docs/program.md):
    // every MXU of every core, every DMA engine of every core, the others per core.
    std::array<double, kUnits.size()> units{};
    // Per-core roofs (FLOP/s, bytes/s) and how each is derived from the config.
    double mxu_roof = 0, vpu_roof = 0, hbm_roof = 0;
    std::string mxu_how, vpu_how, hbm_how;
    bool spans = false;  // rows from ops' spans (no `kernels` in the report)
    std::vector<Row> rows;
    std::string attribution;  // what the rows' times are, in words
};

// An op's or kernel's unit_busy_cycles, in kUnits order (0 where a unit is not named).
std::array<double, kUnits.size()> read_busy(const json& obj, const std::string& ptr,
                                            const Fields& f);

// The report read for the page: a located InputError for a report that is not a run report or
// lacks a figure the page shows.
Page read_page(const json& r, const std::string& file, const std::string& timeline);

// Shared by the page's parts (report_html.cpp, report_charts.cpp): a string escaped for HTML, a
// number as the shortest exact text (the table's and chart's data-v attribute for sorting).
std::string esc(const std::string& s);
std::string sort_key(double v);

// The charts (report_charts.cpp): kernels on one core's roofs; each unit's busy share over time.
std::string roofline_svg(const Page& p);
std::string utilization_svg(const Page& p, const Fields& f);

}  // namespace report_html_detail

}  // namespace tpusim::cli
