// One op object of a trace file -> TraceOp: keys, types, sizes, cores and replica groups.
// Cross-op checks (ids, deps, cycles, pairing) are in trace_link.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "tpusim/common/error.h"
#include "tpusim/common/json_io.h"
#include "trace_internal.h"

namespace tpusim::trace_detail {

using nlohmann::json;

std::string op_where(const std::string& id) { return fmt::format("op \"{}\"", id); }

namespace {

// Reads the fields of one op object, remembering which keys the kind knows so that any
// other key is rejected by name.
class OpReader {
 public:
    OpReader(const json& j, std::string where, const std::string& file)
        : j_(j), where_(std::move(where)), file_(file) {}

    [[noreturn]] void fail(const std::string& what) const { throw InputError(file_, where_, what); }
    void set_where(std::string w) { where_ = std::move(w); }

    const json* take(const char* key) {
        known_.push_back(key);
        const auto it = j_.find(key);
        return it == j_.end() ? nullptr : &*it;
    }

    std::int64_t integer(const char* key, const json& v) const {
        if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t{INT64_MAX}) {
            fail(fmt::format("\"{}\" is out of range (at most 2^40)", key));
        }
        if (v.is_number_float() && std::abs(v.get<double>()) >= 9.2e18) {
            fail(fmt::format("\"{}\" is out of range (at most 2^40)", key));
        }
        if (!v.is_number_integer()) {
            fail(fmt::format("\"{}\" must be an integer, got {}", key, json_type_name(v)));
        }
        return v.get<std::int64_t>();
    }

    // A positive size up to kMaxSize; `fallback` < 0 means required.
    std::int64_t size(const char* key, std::int64_t fallback = -1, const char* need = "") {
        const json* v = take(key);
        if (!v) {
            if (fallback >= 0) return fallback;
            fail(fmt::format("missing \"{}\"{}", key, need));
        }
        const std::int64_t x = integer(key, *v);
        if (x <= 0) fail(fmt::format("\"{}\" must be a positive integer, got {}", key, x));
        if (x > kMaxSize) fail(fmt::format("\"{}\" is absurdly large: {} (at most 2^40)", key, x));
        return x;
    }

    bool flag(const char* key) {
        const json* v = take(key);
        if (!v) return false;
        if (!v->is_boolean()) {
            fail(fmt::format("\"{}\" must be true or false, got {}", key, json_type_name(*v)));
        }
        return v->get<bool>();
    }

    const std::string* str(const char* key) {
        const json* v = take(key);
        if (!v) return nullptr;
        if (!v->is_string()) {
            fail(fmt::format("\"{}\" must be a string, got {}", key, json_type_name(*v)));
        }
        return v->get_ptr<const std::string*>();
    }

    DType dtype(const char* key, DType fallback) {
        const std::string* s = str(key);
        if (!s) return fallback;
        DType d{};
        if (!parse_dtype(*s, d)) {
            fail(fmt::format("unknown {} \"{}\" (expected one of: {})", key, *s, dtype_names()));
        }
        return d;
    }

    std::optional<DType> optional_dtype(const char* key) {
        if (j_.find(key) == j_.end()) {
            known_.push_back(key);
            return std::nullopt;
        }
        return dtype(key, DType::Bf16);
    }

    // A core id of the program, 0 .. cores-1.
    int core(const char* key, const json& v, std::int64_t cores) const {
        const std::int64_t c = integer(key, v);
        if (c < 0 || c >= cores) {
            fail(fmt::format("core {} in \"{}\" is outside the program's {} core{} (0..{})", c, key,
                             cores, cores == 1 ? "" : "s", cores - 1));
        }
        return static_cast<int>(c);
    }

    const json& array(const char* key, const json& v) const {
        if (!v.is_array()) {
            fail(fmt::format("\"{}\" must be an array, got {}", key, json_type_name(v)));
        }
        return v;
    }

    void reject_unknown_keys() const {
        for (auto it = j_.begin(); it != j_.end(); ++it) {
            const auto same = [&](const char* k) { return it.key() == k; };
            if (std::find_if(known_.begin(), known_.end(), same) == known_.end()) {
                fail(fmt::format("unknown key \"{}\" for a {} op", it.key(), kind_));
            }
        }
    }
    void set_kind(const char* k) { kind_ = k; }

 private:
    const json& j_;
    std::string where_;
    const std::string& file_;
    std::vector<const char*> known_;  // string literals
    const char* kind_ = "";
};

void read_matmul(OpReader& r, TraceOp& op) {
    auto& s = op.matmul;
    const char* need = " (a matmul needs m, k and n)";
    s.batch = r.size("batch", 1);
    s.m = r.size("m", -1, need);
    s.k = r.size("k", -1, need);
    s.n = r.size("n", -1, need);
    s.transpose_lhs = r.flag("transpose_lhs");
    s.transpose_rhs = r.flag("transpose_rhs");
}

void read_conv2d(OpReader& r, TraceOp& op) {
    auto& c = op.conv;
    const char* need = " (a conv2d needs batch, h, w, c_in, c_out, kh and kw)";
    c.batch = r.size("batch", -1, need);
    c.h = r.size("h", -1, need);
    c.w = r.size("w", -1, need);
    c.c_in = r.size("c_in", -1, need);
    c.c_out = r.size("c_out", -1, need);
    c.kh = r.size("kh", -1, need);
    c.kw = r.size("kw", -1, need);
    c.stride_h = r.size("stride_h", 1);
    c.stride_w = r.size("stride_w", 1);
    if (const std::string* p = r.str("padding")) {
        if (*p == "same") {
            c.padding = Padding::Same;
        } else if (*p == "valid") {
            c.padding = Padding::Valid;
        } else {
            r.fail(fmt::format("unknown padding \"{}\" (expected \"same\" or \"valid\")", *p));
        }
    }
    if (c.padding == Padding::Valid && (c.kh > c.h || c.kw > c.w)) {
        r.fail(fmt::format("a {}x{} filter does not fit a {}x{} input with \"valid\" padding", c.kh,
                           c.kw, c.h, c.w));
    }
}

void read_vector(OpReader& r, TraceOp& op) {
    auto& v = op.vector;
    const std::string* name = r.str("op");
    if (!name) r.fail("missing \"op\" (the vector operation, e.g. \"add\" or \"softmax\")");
    if (!parse_vector_op(*name, v.op)) {
        r.fail(fmt::format("unknown vector op \"{}\" (expected one of: {})", *name,
                           vector_op_names()));
    }
    const auto& info = vector_op_info(v.op);
    const bool has_elements = r.take("elements") != nullptr;
    const bool has_shape = r.take("rows") != nullptr || r.take("cols") != nullptr;
    if (has_elements && has_shape) r.fail("give either \"elements\" or \"rows\" and \"cols\"");
    if (info.row_wise && !has_shape) {
        r.fail(fmt::format("{} needs \"rows\" and \"cols\" (it runs along cols)", info.name));
    }
    if (has_elements) {
        v.rows = 1;
        v.cols = r.size("elements");
    } else {
        const char* need = " (give \"elements\", or \"rows\" and \"cols\")";
        v.rows = r.size("rows", -1, need);
        v.cols = r.size("cols", -1, need);
    }
    if (v.op == VectorOp::Gather || v.op == VectorOp::ScatterAdd) {
        v.table_rows = r.size("table_rows", -1, " (the embedding table's rows)");
    }
    if (const std::string* m = r.str("mask")) {
        if (v.op != VectorOp::Dropout && v.op != VectorOp::DropoutGrad)
            r.fail("\"mask\" applies to dropout and dropout_grad only");
        if (*m != "saved" && *m != "regenerated")
            r.fail(fmt::format("unknown mask \"{}\" (expected \"saved\" or \"regenerated\")", *m));
        v.saved_mask = *m == "saved";
    }
}

// Defaults to one group of all the op's cores; otherwise a partition into equal groups.
void read_replica_groups(OpReader& r, TraceOp& op, const std::vector<int>& op_cores,
                         std::int64_t cores) {
    const json* v = r.take("replica_groups");
    if (!v) {
        op.replica_groups = {op_cores};
        return;
    }
    std::vector<int> seen(static_cast<std::size_t>(cores), 0);
    for (const json& g : r.array("replica_groups", *v)) {
        r.array("replica_groups", g);
        if (g.empty()) r.fail("replica_groups has an empty group");
        std::vector<int> group;
        for (const json& c : g) {
            const int id = r.core("replica_groups", c, cores);
            if (seen[id]++) r.fail(fmt::format("core {} appears twice in replica_groups", id));
            group.push_back(id);
        }
        if (!op.replica_groups.empty() && group.size() != op.replica_groups[0].size()) {
            r.fail(fmt::format("replica_groups must all have the same size (got {} and {})",
                               op.replica_groups[0].size(), group.size()));
        }
        op.replica_groups.push_back(std::move(group));
    }
    for (int c : op_cores) {
        if (!seen[c]) {
            r.fail(
                fmt::format("replica_groups must partition the op's cores; core {} is in no "
                            "group",
                            c));
        }
        seen[c] = -1;
    }
    for (int c = 0; c < cores; ++c) {
        if (seen[c] > 0) r.fail(fmt::format("core {} in replica_groups does not run this op", c));
    }
}

void read_collective(OpReader& r, TraceOp& op, const std::vector<int>& op_cores,
                     std::int64_t cores) {
    op.bytes = r.size("bytes", -1, " (the per-core buffer size in bytes)");
    op.dtype = r.dtype("dtype", DType::Bf16);
    op.out_dtype = op.dtype;
    const std::int64_t eb = dtype_bytes(op.dtype);
    if (op.bytes % eb != 0) {
        r.fail(fmt::format("bytes {} is not a whole number of {} elements ({} bytes each)",
                           op.bytes, dtype_name(op.dtype), eb));
    }
    if (op.kind == OpKind::CollectivePermute) {
        const json* v = r.take("source_target_pairs");
        if (!v) r.fail("missing \"source_target_pairs\" (a list of [source, target] cores)");
        std::vector<int> src(static_cast<std::size_t>(cores)), dst(src);
        for (const json& p : r.array("source_target_pairs", *v)) {
            if (!p.is_array() || p.size() != 2) {
                r.fail("each of source_target_pairs must be a [source, target] pair");
            }
            const int s = r.core("source_target_pairs", p[0], cores);
            const int t = r.core("source_target_pairs", p[1], cores);
            if (std::find(op_cores.begin(), op_cores.end(), s) == op_cores.end()) {
                r.fail(fmt::format("source core {} does not run this op", s));
            }
            if (src[s]++) r.fail(fmt::format("core {} is a source twice", s));
            if (dst[t]++) r.fail(fmt::format("core {} is a target twice", t));
            op.source_target_pairs.emplace_back(s, t);
        }
        if (op.source_target_pairs.empty()) r.fail("source_target_pairs is empty");
        return;
    }
    if (op.kind == OpKind::Send || op.kind == OpKind::Recv) {
        const json* v = r.take("peer");
        if (!v) r.fail("missing \"peer\" (the core at the other end)");
        op.peer = r.core("peer", *v, cores);
        if (op.cores.size() != 1) {
            r.fail("send and recv need \"cores\" with exactly one core (the one that runs it)");
        }
        if (op.peer == op.cores[0]) r.fail(fmt::format("peer {} is the op's own core", op.peer));
        return;
    }
    read_replica_groups(r, op, op_cores, cores);
    const std::int64_t g = static_cast<std::int64_t>(op.replica_groups[0].size());
    if ((op.kind == OpKind::ReduceScatter || op.kind == OpKind::AllToAll) &&
        (op.bytes / eb) % g != 0) {
        r.fail(fmt::format("{} elements do not split evenly over groups of {} cores", op.bytes / eb,
                           g));
    }
}

std::vector<int> read_cores(OpReader& r, TraceOp& op, std::int64_t cores) {
    std::vector<int> all;
    if (const json* v = r.take("cores")) {
        std::vector<char> seen(static_cast<std::size_t>(cores), 0);
        for (const json& c : r.array("cores", *v)) {
            const int id = r.core("cores", c, cores);
            if (seen[id]++) r.fail(fmt::format("core {} is listed twice in \"cores\"", id));
            op.cores.push_back(id);
        }
        if (op.cores.empty()) r.fail("\"cores\" is empty (leave it out to run on every core)");
        all = op.cores;
        std::sort(all.begin(), all.end());
    } else {
        for (int c = 0; c < cores; ++c) all.push_back(c);
    }
    return all;
}

// Every FLOP and byte figure must fit in 63 bits so that the helpers can return int64.
void check_figures(OpReader& r, const TraceOp& op) {
    constexpr Wide kMax = static_cast<Wide>(std::numeric_limits<std::int64_t>::max());
    if (wide_flops(op) > kMax) r.fail("its FLOP count overflows 64 bits");
    Wide in = 0;
    for (Wide b : wide_operand_bytes(op)) in += b;
    if (in > kMax) r.fail("its operand bytes overflow 64 bits");
    if (wide_bytes_out(op) > kMax) r.fail("its result bytes overflow 64 bits");
}

}  // namespace

TraceOp parse_op(const json& j, std::size_t index, std::int64_t cores, const std::string& file,
                 std::vector<std::string>& dep_ids) {
    OpReader r(j, fmt::format("ops[{}]", index), file);
    if (!j.is_object())
        r.fail(fmt::format("an op must be a JSON object, got {}", json_type_name(j)));
    TraceOp op;
    const std::string* id = r.str("id");
    if (!id) r.fail("missing \"id\"");
    if (id->empty()) r.fail("\"id\" is empty");
    op.id = *id;
    r.set_where(op_where(op.id));
    const std::string* kind = r.str("kind");
    if (!kind) r.fail(fmt::format("missing \"kind\" (expected one of: {})", kind_names()));
    if (!parse_kind(*kind, op.kind)) {
        r.fail(fmt::format("unknown kind \"{}\" (expected one of: {})", *kind, kind_names()));
    }
    r.set_kind(op_kind_name(op.kind));
    r.take("comment");
    op.fused = r.flag("fused");
    op.result_in_vmem = r.flag("result_in_vmem");
    if (const json* v = r.take("vmem_operands")) {
        for (const json& x : r.array("vmem_operands", *v)) {
            if (!x.is_number_integer() || x.get<std::int64_t>() < 0 || x.get<std::int64_t>() > 7)
                r.fail("\"vmem_operands\" must list operand indices (0 = the first operand)");
            op.vmem_operands.push_back(x.get<int>());
        }
    }
    if (const json* d = r.take("deps")) {
        for (const json& dep : r.array("deps", *d)) {
            if (!dep.is_string()) {
                r.fail(fmt::format("\"deps\" must list op ids (strings), got {}",
                                   json_type_name(dep)));
            }
            dep_ids.push_back(dep.get<std::string>());
        }
    }
    if (const json* o = r.take("operands")) {
        // Positions in deps as link_ops keeps them: each id once, at its first place.
        std::vector<std::string> unique;
        for (const auto& d : dep_ids)
            if (std::find(unique.begin(), unique.end(), d) == unique.end()) unique.push_back(d);
        for (const json& x : r.array("operands", *o)) {
            if (x.is_null()) {
                op.operands.push_back(-1);
                continue;
            }
            if (!x.is_string())
                r.fail(fmt::format("\"operands\" must list op ids of \"deps\" or null, got {}",
                                   json_type_name(x)));
            const auto it = std::find(unique.begin(), unique.end(), x.get<std::string>());
            if (it == unique.end())
                r.fail(fmt::format("\"operands\" names \"{}\", which is not in \"deps\"",
                                   x.get<std::string>()));
            op.operands.push_back(static_cast<int>(it - unique.begin()));
        }
    }
    const std::vector<int> op_cores = read_cores(r, op, cores);
    switch (op.kind) {
        case OpKind::Matmul:
            read_matmul(r, op);
            break;
        case OpKind::Conv2d:
            read_conv2d(r, op);
            break;
        case OpKind::Vector:
            read_vector(r, op);
            break;
        case OpKind::Copy:
        case OpKind::Infeed:
        case OpKind::Outfeed:
            op.bytes = r.size("bytes", -1, " (bytes moved)");
            break;
        default:
            read_collective(r, op, op_cores, cores);
            break;
    }
    if (!is_collective(op.kind) && op.kind != OpKind::Copy && op.kind != OpKind::Infeed &&
        op.kind != OpKind::Outfeed) {
        op.dtype = r.dtype("dtype", DType::Bf16);
        op.out_dtype = r.dtype("out_dtype", op.dtype);
        if (op.kind == OpKind::Matmul || op.kind == OpKind::Conv2d) {
            op.lhs_dtype = r.optional_dtype("lhs_dtype");
            op.rhs_dtype = r.optional_dtype("rhs_dtype");
            if (const std::string* p = r.str("precision"); p && !parse_precision(*p, op.precision))
                r.fail(
                    fmt::format("unknown precision \"{}\" (expected one of: default, high, "
                                "highest)",
                                *p));
        }
    }
    if (!op.vmem_operands.empty()) {
        const bool mxu = op.kind == OpKind::Matmul || op.kind == OpKind::Conv2d;
        if (!mxu && op.kind != OpKind::Vector)
            r.fail("\"vmem_operands\" applies to matmul, conv2d and vector ops only");
        if (op.kind == OpKind::Vector && op.fused)
            r.fail(
                "\"vmem_operands\" applies to a vector op that is not fused (a fused op's "
                "first operand is on chip already)");
        const int n = mxu ? 2 : vector_inputs(op.vector);
        for (int v : op.vmem_operands)
            if (v >= n)
                r.fail(
                    fmt::format("\"vmem_operands\": operand {} does not exist (this op has "
                                "{}: {})",
                                v, n, mxu ? "0 = lhs/input, 1 = rhs/weights" : "its inputs"));
    }
    r.reject_unknown_keys();
    check_figures(r, op);
    return op;
}

}  // namespace tpusim::trace_detail
