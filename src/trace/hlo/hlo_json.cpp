// The imported trace as trace format v1 JSON, and the --hlo-passes switch.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "tpusim/common/error.h"
#include "tpusim/trace/hlo.h"

namespace tpusim {

nlohmann::json trace_to_json_object(const Trace& t) {
    using nlohmann::json;
    json ops = json::array();
    for (const TraceOp& op : t.ops) {
        json o = {{"id", op.id}, {"kind", op_kind_name(op.kind)}};
        switch (op.kind) {
            case OpKind::Matmul:
                if (op.matmul.batch != 1) o["batch"] = op.matmul.batch;
                o["m"] = op.matmul.m;
                o["k"] = op.matmul.k;
                o["n"] = op.matmul.n;
                if (op.matmul.transpose_lhs) o["transpose_lhs"] = true;
                if (op.matmul.transpose_rhs) o["transpose_rhs"] = true;
                break;
            case OpKind::Conv2d:
                o.update({{"batch", op.conv.batch},
                          {"h", op.conv.h},
                          {"w", op.conv.w},
                          {"c_in", op.conv.c_in},
                          {"c_out", op.conv.c_out},
                          {"kh", op.conv.kh},
                          {"kw", op.conv.kw},
                          {"stride_h", op.conv.stride_h},
                          {"stride_w", op.conv.stride_w},
                          {"padding", op.conv.padding == Padding::Same ? "same" : "valid"}});
                break;
            case OpKind::Vector:
                o["op"] = vector_op_info(op.vector.op).name;
                if (op.vector.rows == 1 && !vector_op_info(op.vector.op).row_wise) {
                    o["elements"] = op.vector.cols;
                } else {
                    o["rows"] = op.vector.rows;
                    o["cols"] = op.vector.cols;
                }
                if (op.vector.table_rows > 0) o["table_rows"] = op.vector.table_rows;
                if (op.vector.saved_mask) o["mask"] = "saved";
                break;
            default:
                o["bytes"] = op.bytes;
                if (!op.replica_groups.empty()) o["replica_groups"] = op.replica_groups;
                if (!op.source_target_pairs.empty()) {
                    json pairs = json::array();
                    for (const auto& [a, b] : op.source_target_pairs) pairs.push_back({a, b});
                    o["source_target_pairs"] = pairs;
                }
                if (op.peer >= 0) o["peer"] = op.peer;
                break;
        }
        const bool typed = op.kind == OpKind::Matmul || op.kind == OpKind::Conv2d ||
                           op.kind == OpKind::Vector || is_collective(op.kind);
        if (typed) o["dtype"] = dtype_name(op.dtype);
        if (typed && !is_collective(op.kind) && op.out_dtype != op.dtype)
            o["out_dtype"] = dtype_name(op.out_dtype);
        if (op.kind == OpKind::Matmul || op.kind == OpKind::Conv2d) {
            if (op.lhs_type() != op.dtype) o["lhs_dtype"] = dtype_name(op.lhs_type());
            if (op.rhs_type() != op.dtype) o["rhs_dtype"] = dtype_name(op.rhs_type());
            if (op.precision != MatmulPrecision::Default)
                o["precision"] = precision_name(op.precision);
        }
        if (!op.deps.empty()) {
            json deps = json::array();
            for (std::size_t d : op.deps) deps.push_back(t.ops[d].id);
            o["deps"] = deps;
        }
        if (!op.carried.empty()) {
            json carried = json::array();
            for (std::size_t d : op.carried) carried.push_back(t.ops[d].id);
            o["carried"] = carried;
        }
        if (!op.operands.empty()) {
            json operands = json::array();
            for (int p : op.operands)
                operands.push_back(p < 0 ? json(nullptr)
                                         : json(t.ops[op.deps[static_cast<std::size_t>(p)]].id));
            o["operands"] = operands;
        }
        if (op.fused) o["fused"] = true;
        if (!op.vmem_operands.empty()) o["vmem_operands"] = op.vmem_operands;
        if (op.result_in_vmem) o["result_in_vmem"] = true;
        if (!op.cores.empty()) o["cores"] = op.cores;
        if (op.line > 0) o["comment"] = fmt::format("HLO line {}", op.line);
        ops.push_back(std::move(o));
    }
    json out{{"format", kTraceFormat},
             {"version", t.loops.empty() ? kTraceVersion : kTraceLoopVersion},
             {"name", t.name},
             {"cores", t.cores},
             {"ops", std::move(ops)}};
    if (t.parameter_bytes >= 0) out["parameter_bytes"] = t.parameter_bytes;
    if (!t.loops.empty()) {
        json loops = json::array();
        for (const TraceLoop& l : t.loops) {
            json body = json::array();
            for (std::size_t i = l.first; i < l.first + l.count; ++i) body.push_back(t.ops[i].id);
            loops.push_back({{"id", l.id}, {"trips", l.trips}, {"body", std::move(body)}});
        }
        out["loops"] = std::move(loops);
    }
    return out;
}

std::string trace_to_json(const Trace& t) {
    // One op per line: readable, diffable, and the reader reports errors by line.
    const nlohmann::json j = trace_to_json_object(t);
    std::string out =
        "{\"format\": \"tpusim.trace\", \"version\": " + j.at("version").dump() +
        ", \"name\": " + nlohmann::json(t.name).dump() + ", \"cores\": " + std::to_string(t.cores) +
        (t.parameter_bytes >= 0 ? ", \"parameter_bytes\": " + std::to_string(t.parameter_bytes)
                                : std::string()) +
        ",\n \"ops\": [\n";
    const auto& ops = j.at("ops");
    for (std::size_t i = 0; i < ops.size(); ++i)
        out += "  " + ops[i].dump() + (i + 1 < ops.size() ? ",\n" : "\n");
    out += " ]";
    if (const auto l = j.find("loops"); l != j.end()) {
        out += ",\n \"loops\": [\n";
        for (std::size_t i = 0; i < l->size(); ++i)
            out += "  " + (*l)[i].dump() + (i + 1 < l->size() ? ",\n" : "\n");
        out += " ]";
    }
    out += "}\n";
    return out;
}

Trace read_hlo_trace(const std::string& path, const HloImportOptions& opts,
                     std::int64_t board_cores, HloImportStats* stats) {
    return hlo_to_checked_trace(read_hlo(path), opts, board_cores, stats);
}

Trace hlo_to_checked_trace(const HloModule& m, const HloImportOptions& opts,
                           std::int64_t board_cores, HloImportStats* stats) {
    const std::string& path = m.path;
    const Trace t = hlo_to_trace(m, opts, board_cores, stats);
    std::vector<int> lines;
    lines.reserve(t.ops.size());
    for (const auto& op : t.ops) lines.push_back(op.line);
    Trace out = parse_trace(trace_to_json_object(t), path, board_cores, lines);
    out.path = path;
    return out;
}

namespace {

// The passes "--hlo-passes" names, each with the option it turns on (docs/hlo.md, "Passes").
struct HloPass {
    const char* name;
    bool HloImportOptions::*flag;
};
constexpr HloPass kHloPasses[] = {
    {"call-inliner", &HloImportOptions::call_inliner},
    {"direct-convolutions", &HloImportOptions::direct_convolutions},
    {"fusion", &HloImportOptions::fusion},
    {"kernel-graphs", &HloImportOptions::kernel_graphs},
    {"memory-scheduler", &HloImportOptions::memory_scheduler},
    {"producer-fusion", &HloImportOptions::producer_fusion},
    {"spmd-partitioner", &HloImportOptions::spmd_partitioner},
    {"tile-padding", &HloImportOptions::tile_padding},
};

}  // namespace

std::string hlo_pass_names() {
    std::string names;
    for (const auto& p : kHloPasses)
        names += fmt::format("{}{}", names.empty() ? "" : ", ", p.name);
    return names;
}

void apply_hlo_passes(const std::string& list, HloImportOptions& opts) {
    const bool all = list == "all";
    for (const auto& p : kHloPasses) opts.*p.flag = all;
    if (all || list == "none") return;
    std::size_t i = 0;
    while (i <= list.size()) {
        std::size_t j = list.find(',', i);
        if (j == std::string::npos) j = list.size();
        const std::string name = list.substr(i, j - i);
        const HloPass* found = nullptr;
        for (const auto& p : kHloPasses)
            if (name == p.name) found = &p;
        if (!found)
            throw InputError("--hlo-passes", "",
                             fmt::format("unknown pass \"{}\" (expected all, none, or a comma "
                                         "list of: {})",
                                         name, hlo_pass_names()));
        opts.*found->flag = true;
        i = j + 1;
    }
}

}  // namespace tpusim
