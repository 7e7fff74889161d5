// Reading a trace file: JSON syntax (json_io), the top-level object, then each op
// (trace_op_parse.cpp) and the links between ops (trace_link.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tpusim/common/error.h"
#include "tpusim/common/json_io.h"
#include "trace_internal.h"

namespace tpusim {

using nlohmann::json;

namespace {

std::string stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

}  // namespace

Trace parse_trace(const json& j, const std::string& name, std::int64_t board_cores,
                  const std::vector<int>& lines) {
    auto fail = [&](const std::string& where, const std::string& what) {
        throw InputError(name, where, what);
    };
    if (!j.is_object()) {
        fail("", fmt::format("the top level must be a JSON object, got {}", json_type_name(j)));
    }
    static const char* const kKeys[] = {
        "format",          "version",          "name",     "description", "cores", "ops",
        "parameter_bytes", "samples_per_step", "metadata", "loops"};
    for (auto it = j.begin(); it != j.end(); ++it) {
        if (std::find(std::begin(kKeys), std::end(kKeys), it.key()) == std::end(kKeys)) {
            // A board configuration given where a trace belongs: say where it goes.
            const bool config = j.contains("mxu") || j.contains("chip") || j.contains("board") ||
                                j.contains("extends");
            fail(json_pointer_child("", it.key()),
                 std::string("unknown key (expected format, version, name, description, cores, "
                             "ops, parameter_bytes, samples_per_step, metadata, loops)") +
                     (config ? " (this looks like a board configuration: give it with --config)"
                             : ""));
        }
    }
    const auto format = j.find("format");
    if (format == j.end()) fail("/format", fmt::format("missing (expected \"{}\")", kTraceFormat));
    if (!format->is_string() || *format != kTraceFormat) {
        fail("/format", fmt::format("expected \"{}\", got {}", kTraceFormat, format->dump()));
    }
    const auto version = j.find("version");
    const std::string supported =
        fmt::format("this tpusim reads versions {} and {}", kTraceVersion, kTraceLoopVersion);
    if (version == j.end()) fail("/version", fmt::format("missing ({})", supported));
    if (!version->is_number_integer() ||
        (*version != kTraceVersion && *version != kTraceLoopVersion)) {
        fail("/version", fmt::format("unsupported version {} ({})", version->dump(), supported));
    }
    Trace t;
    t.path = name;
    t.version = version->get<int>();
    const auto loops = j.find("loops");
    if (loops != j.end() && t.version < kTraceLoopVersion)
        fail("/loops", fmt::format("loops need \"version\": {}", kTraceLoopVersion));
    t.name = stem(name);
    if (const auto it = j.find("name"); it != j.end()) {
        if (!it->is_string()) fail("/name", "expected a string, got " + json_type_name(*it));
        t.name = it->get<std::string>();
    }
    if (const auto it = j.find("description"); it != j.end() && !it->is_string()) {
        fail("/description", "expected a string, got " + json_type_name(*it));
    }
    if (const auto it = j.find("metadata"); it != j.end() && !it->is_object()) {
        fail("/metadata", "expected an object, got " + json_type_name(*it));
    }
    t.cores = board_cores;
    if (const auto it = j.find("cores"); it != j.end()) {
        if (!it->is_number_integer() || *it < 1) {
            fail("/cores", "expected a positive integer, got " + it->dump());
        }
        if (it->is_number_unsigned() && it->get<std::uint64_t>() > std::uint64_t{INT64_MAX}) {
            fail("/cores", "out of range");
        }
        t.cores = it->get<std::int64_t>();
        if (t.cores > board_cores) {
            fail("/cores", fmt::format("the trace needs {} cores but the board has {}", t.cores,
                                       board_cores));
        }
    }
    if (const auto it = j.find("parameter_bytes"); it != j.end()) {
        if (!it->is_number_integer() || *it < 0 ||
            (it->is_number_unsigned() && it->get<std::uint64_t>() > std::uint64_t{INT64_MAX})) {
            fail("/parameter_bytes", "expected a non-negative integer, got " + it->dump());
        }
        t.parameter_bytes = it->get<std::int64_t>();
    }
    // The global batch one step trains on (a workload's samples, sequences or images over all
    // cores): a label for throughput = samples_per_step / step time; the simulation ignores it.
    if (const auto it = j.find("samples_per_step"); it != j.end()) {
        if (!it->is_number_integer() || *it < 1 ||
            (it->is_number_unsigned() && it->get<std::uint64_t>() > std::uint64_t{INT64_MAX})) {
            fail("/samples_per_step", "expected a positive integer, got " + it->dump());
        }
    }
    const auto ops = j.find("ops");
    if (ops == j.end()) fail("/ops", "missing (expected an array of ops)");
    if (!ops->is_array()) fail("/ops", "expected an array of ops, got " + json_type_name(*ops));
    if (ops->empty()) fail("/ops", "the trace has no ops");
    t.ops.reserve(ops->size());
    std::vector<std::vector<std::string>> dep_ids(ops->size()), carried_ids;
    std::vector<std::string> carried_owner;
    for (std::size_t i = 0; i < ops->size(); ++i) {
        const json& o = (*ops)[i];
        const bool carries = o.is_object() && o.contains("carried");
        if (!carries) {
            t.ops.push_back(trace_detail::parse_op(o, i, t.cores, name, dep_ids[i]));
        } else {  // version 2: the op less its carried deps, which link_loops resolves
            json rest = o;
            rest.erase("carried");
            t.ops.push_back(trace_detail::parse_op(rest, i, t.cores, name, dep_ids[i]));
            const std::string where = trace_detail::op_where(t.ops.back().id);
            const json& c = o.at("carried");
            if (t.version < kTraceLoopVersion)
                fail(where, fmt::format("\"carried\" needs \"version\": {}", kTraceLoopVersion));
            if (!c.is_array()) fail(where, "\"carried\" must be an array of op ids");
            if (o.contains("operands"))
                fail(where,
                     "\"operands\" and \"carried\" together are not supported (a "
                     "carried operand is read by position, docs/trace-format.md)");
            carried_ids.emplace_back();
            for (const auto& d : c) {
                if (!d.is_string()) fail(where, "\"carried\" must be an array of op ids");
                carried_ids.back().push_back(d.get<std::string>());
            }
            carried_owner.push_back(t.ops.back().id);
        }
        t.ops.back().line = i < lines.size() ? lines[i] : 0;
    }
    trace_detail::link_ops(t, dep_ids);
    if (t.version >= kTraceLoopVersion)
        trace_detail::link_loops(t, loops == j.end() ? nullptr : &*loops, carried_ids,
                                 carried_owner);
    return t;
}

Trace parse_trace(const json& j, const std::string& name, std::int64_t board_cores) {
    return parse_trace(j, name, board_cores, {});
}

Trace read_trace(const std::string& path, std::int64_t board_cores) {
    return parse_trace_text(read_input_file(path, kMaxProgramFileBytes, "a JSON file"), path,
                            board_cores);
}

Trace parse_trace_text(const std::string& text, const std::string& name, std::int64_t board_cores) {
    JsonLines op_lines{"ops", {}};
    json j;
    try {
        j = parse_json_text(text, name, &op_lines);
    } catch (const InputError& e) {
        // XLA HLO text given where a trace belongs: say where it goes.
        const std::size_t first = text.find_first_not_of(" \t\r\n");
        if (first == std::string::npos || text.compare(first, 9, "HloModule") != 0) throw;
        throw InputError(e.file(), e.where(),
                         e.what_only() + " (this looks like XLA HLO text: give it with --hlo)");
    }
    return parse_trace(j, name, board_cores, op_lines.element_lines);
}

}  // namespace tpusim
