#pragma once
// The SPMD partitioning pass's partitioner (private to the hlo_spmd*.cpp files; docs/hlo.md,
// "SPMD and collectives"): a value's layout over the devices (Spec), the values of the
// partitioned computation (Val) and the Partitioner, whose members are defined by concept:
// the walk over computations and instructions (hlo_spmd.cpp), shardings and the collectives
// that move a value between layouts (hlo_spmd_reshard.cpp), the rules per opcode
// (hlo_spmd_ops.cpp) and control flow (hlo_spmd_control.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "hlo_import.h"
#include "hlo_print.h"
#include "hlo_spmd.h"

namespace tpusim::hlo_spmd {

using hlo_print::Line;

// A value's layout over the devices: tiled (tile[d] pieces along dimension d, devices listed
// row-major over [tile..., rep]), replicated (tile empty) or manual (a shard_map region: shapes
// already per device).
struct Spec {
    std::vector<std::int64_t> tile;
    std::int64_t rep = 1;
    std::vector<std::int64_t> devs;
    bool manual = false;
    bool replicated() const { return tile.empty() && !manual; }
    // The one tiled dimension; -1 replicated or manual, -2 tiled along several.
    int dim() const {
        int d = -1;
        for (std::size_t i = 0; i < tile.size(); ++i)
            if (tile[i] > 1) {
                if (d >= 0) return -2;
                d = static_cast<int>(i);
            }
        return d;
    }
    std::int64_t n() const {
        const int d = dim();
        return d >= 0 ? tile[static_cast<std::size_t>(d)] : 1;
    }
    bool operator==(const Spec& o) const {
        return manual == o.manual && tile == o.tile && rep == o.rep && devs == o.devs;
    }
    bool operator!=(const Spec& o) const { return !(*this == o); }
    // Same devices in the same order along the tiled dimension (where it lies aside).
    bool same_layout(const Spec& o) const { return n() == o.n() && rep == o.rep && devs == o.devs; }
    std::string key() const {
        if (manual) return "manual";
        return fmt::format("[{}]x{}:{}", fmt::join(tile, ","), rep, fmt::join(devs, ","));
    }
};

inline Spec normalized(Spec s) {
    if (std::all_of(s.tile.begin(), s.tile.end(), [](std::int64_t t) { return t == 1; }))
        s = Spec{{}, 1, {}, s.manual};
    return s;
}

inline Spec manual_spec() { return Spec{{}, 1, {}, true}; }

// `like` (tiled along one dimension) moved to dimension d of a rank-r array.
inline Spec moved(const Spec& like, std::size_t rank, int d) {
    if (d < 0 || static_cast<std::size_t>(d) >= rank || like.dim() < 0) return Spec{};
    Spec s;
    s.tile.assign(rank, 1);
    s.tile[static_cast<std::size_t>(d)] = like.n();
    s.rep = like.rep;
    s.devs = like.devs;
    return s;
}

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// A value of the partitioned computation.
struct Val {
    std::string ref;  // "%name" or "%name#k"; empty: an element not read yet
    Spec spec;
    const HloShape* shape = nullptr;  // the global shape
    bool tuple = false;
    std::vector<Val> elems;
    std::int32_t deferred = -1;  // a broadcast / iota made where it is used, as users need it
};

inline std::string shape_with_dims(const HloShape& g, const std::vector<std::int64_t>& dims) {
    HloShape l = g;
    l.text = {};
    l.dims = dims;
    return hlo_print::shape_text(l);
}

inline std::vector<std::int64_t> local_dims(const HloShape& g, const Spec& s) {
    std::vector<std::int64_t> d = g.dims;
    if (s.tile.size() == d.size())
        for (std::size_t i = 0; i < d.size(); ++i) d[i] = ceil_div(d[i], s.tile[i]);
    return d;
}

inline std::string local_text(const HloShape& g, const Spec& s) {
    if (g.tuple || s.tile.empty()) return hlo_print::shape_text(g);
    return shape_with_dims(g, local_dims(g, s));
}

inline std::string val_shape(const Val& v) {
    if (!v.tuple) return local_text(*v.shape, v.spec);
    std::string out = "(";
    for (std::size_t i = 0; i < v.elems.size(); ++i)
        out += (i > 0 ? ", " : "") + val_shape(v.elems[i]);
    return out + ")";
}

// Device groups that differ only in their tile coordinate along d (those that gather or sum
// along d), in tile order.
inline std::vector<std::vector<std::int64_t>> groups_along(const Spec& s, int d) {
    std::vector<std::int64_t> dims = s.tile;
    dims.push_back(s.rep);
    std::vector<std::int64_t> stride(dims.size(), 1);
    for (std::size_t i = dims.size(); i-- > 1;) stride[i - 1] = stride[i] * dims[i];
    const auto ud = static_cast<std::size_t>(d);
    std::vector<std::vector<std::int64_t>> out;
    for (std::size_t f = 0; f < s.devs.size(); ++f) {
        if ((static_cast<std::int64_t>(f) / stride[ud]) % dims[ud] != 0) continue;
        std::vector<std::int64_t> g;
        for (std::int64_t k = 0; k < dims[ud]; ++k)
            g.push_back(s.devs[f + static_cast<std::size_t>(k * stride[ud])]);
        out.push_back(std::move(g));
    }
    return out;
}

inline std::string groups_text(const std::vector<std::vector<std::int64_t>>& gs) {
    std::string out = "{";
    for (std::size_t i = 0; i < gs.size(); ++i)
        out += fmt::format("{}{{{}}}", i > 0 ? "," : "", fmt::join(gs[i], ","));
    return out + "}";
}

inline bool is_elementwise(HloOpcode op) {
    return hlo_detail::op_class(op) == hlo_detail::OpClass::Elementwise || op == HloOpcode::Copy;
}

inline std::string_view unquote(std::string_view s) {
    if (s.size() >= 2 && s.front() == '"') return s.substr(1, s.size() - 2);
    return s;
}

class Partitioner {
 public:
    Partitioner(const HloModule& m, std::int64_t parts, HloImportStats& st)
        : m_(m), parts_(parts), st_(st) {
        for (const auto& c : m_.computations) {
            comp_names_.insert(std::string(c.name));
            for (const auto& in : c.instrs)
                if (const HloAttr* a = in.attr("channel_id"))
                    channel_ = std::max<std::int64_t>(
                        channel_, std::strtoll(std::string(a->value).c_str(), nullptr, 10));
        }
    }

    std::string run();

 private:
    struct Result {
        std::string name, text;
        Val root;
    };
    struct Ctx {
        const HloComputation* c = nullptr;
        std::vector<Line> lines;
        std::unordered_set<std::string> used;
        std::vector<Val> vals;
        std::vector<bool> named;  // the instruction's own name is taken
        std::map<std::string, std::string> cache;
        std::map<std::pair<std::int32_t, std::string>, Val> made;
        std::map<std::string, Val> resharded;
    };

    // ---- output -----------------------------------------------------------------------------

    std::string header() const;

    std::string emit(Ctx& x, const std::string& base, const std::string& shape,
                     const std::string& rest);

    // The line of `in` with its operands, shape and the attributes in `repl` replaced.
    std::string emit_instr(Ctx& x, std::int32_t i, const std::vector<std::string>& ops,
                           const std::string& shape,
                           const std::map<std::string, std::string>& repl = {});

    void warn(std::uint32_t at, const std::string& what);

    std::string channel() { return fmt::format("channel_id={}", ++channel_); }

    std::string adder(std::string_view type);

    // ---- resharding -------------------------------------------------------------------------

    std::string partition_id(Ctx& x);

    // This device's start along dimension d of `s`: a table of every partition's offset read
    // at partition-id, as XLA's partitioner writes it.
    std::string offset(Ctx& x, const Spec& s, int d, std::int64_t chunk);

    // Replicated -> tiled: each device keeps its piece (no communication).
    Val slice_local(Ctx& x, const Val& v, const Spec& to);

    // Tiled -> replicated: an all-gather along each tiled dimension.
    Val gather(Ctx& x, const Val& v);

    Val reshard(Ctx& x, const Val& v, const Spec& to);

    Val reshard_new(Ctx& x, const Val& v, const Spec& to);

    // Partial sums over the devices that hold the other tiles of `over` along d: an
    // all-reduce, or, where the result is wanted tiled over those same devices in the same
    // order (`want`), a reduce-scatter that leaves each its piece (XLA's ReduceScatterCreator
    // makes one of the all-reduce and the slice).
    Val all_reduce(Ctx& x, Val v, const Spec& over, int d, const std::string& to_apply,
                   const std::optional<Spec>& want = std::nullopt);

    // ---- values -----------------------------------------------------------------------------

    Val element(Ctx& x, const Val& t, std::size_t k);

    Val operand(Ctx& x, const HloOperand& o);

    // Operand k read in layout `to` (a deferred broadcast made so; else resharded).
    Val use(Ctx& x, const HloInstr& in, std::size_t k, const Spec* to);

    // The sharding written on `in` as a spec for its shape; none when it has none or one the
    // pass does not read (with a warning).
    std::optional<Spec> annotation(const HloInstr& in, const HloShape& s, const Sharding& sh);

    std::optional<Sharding> sharding_of(const HloInstr& in);

    // A value of shape s laid out as `sh` (tuples element by element; none: replicated).
    Val annotated_val(const HloInstr& in, const HloShape& s, const Sharding* sh,
                      const std::string& ref);

    // Val v resharded as `want` element by element (tuples), its refs made.
    Val conform(Ctx& x, const Val& v, const Val& want);

    // A broadcast or iota made in layout `to` where it is used (sharding propagation puts the
    // user's sharding on it: no communication, the per-device piece only).
    Val make(Ctx& x, std::int32_t i, const Spec& to_in);

    // ---- computations -----------------------------------------------------------------------

    static std::string signature(const std::vector<Val>& args, const Val* root);

    // Computation ci partitioned with its parameters laid out as `args` (the entry: as
    // annotated) and, where `root` is given, its result resharded to that layout.
    Result partition(std::int32_t ci, const std::vector<Val>& args, const Val* root);

    // Element refs of a tuple value read afresh (after the instruction that made it).
    static Val fresh_elements(Val v, const std::string& ref);

    Val instr(Ctx& x, std::int32_t i, const std::vector<Val>& args, bool entry);

    // The layout of a reshape's result: the tiled dimension kept where it maps to a result
    // dimension whole, as its major part, or split with the tiles in its major part.
    static Spec reshaped(const Val& o, const HloShape& out);

    std::vector<std::int64_t> ints(const HloInstr& in, const char* name);

    static int index_of(const std::vector<std::int64_t>& v, std::int64_t x);

    Val dot(Ctx& x, std::int32_t i, const std::optional<Spec>& ann);

    // A dot or convolution with its operands laid out as ls and rs, its result as os; partial:
    // the tiled dimension of ls that it contracts (>= 0), whose partial sums are all-reduced.
    Val contraction(Ctx& x, std::int32_t i, const Spec& ls, const Spec& rs, const Spec& os,
                    int partial, const std::optional<Spec>& ann);

    Val convolution(Ctx& x, std::int32_t i, const std::optional<Spec>& ann);

    Val reduce(Ctx& x, std::int32_t i, const std::optional<Spec>& ann);

    std::string callee_ref(const std::string& name) { return "%" + name; }

    Val loop(Ctx& x, std::int32_t i);

    // What partitioning a computation leaves behind, for a trial partition (loop()).
    struct Snapshot {
        std::map<std::pair<std::int32_t, std::string>, Result> done;
        std::set<std::int32_t> partitioned;
        std::unordered_set<std::string> comp_names, warned;
        std::map<std::string, std::string> adders;
        std::string callees;
        std::int64_t channel = 0;
        HloImportStats stats;
    };
    Snapshot snapshot() const;
    void restore(const Snapshot& s);

    static std::string_view strip(const HloAttr* a);

    Val call(Ctx& x, std::int32_t i);

    // Movement and window ops that keep a dimension they do not touch: its tiling stays.
    std::optional<Val> along_free_dim(Ctx& x, std::int32_t i);

    // Whether a window={size=AxB stride=.. pad=..} leaves dimension d alone.
    static bool window_is_one(std::string_view w, std::size_t d);

    // Any other op: its operands gathered (a located warning when one was tiled), its result
    // replicated.
    Val replicated_op(Ctx& x, std::int32_t i);

    static constexpr const char* kMark = "tpusim_spmd_partitioned=\"true\"";

    const HloModule& m_;
    std::int64_t parts_;
    HloImportStats& st_;
    std::int64_t channel_ = 0;
    std::unordered_set<std::string> comp_names_, warned_;
    std::map<std::string, std::string> adders_;
    std::set<std::int32_t> partitioned_;
    std::map<std::pair<std::int32_t, std::string>, Result> done_;
    std::string callees_, entry_layout_ = "{()->()}";
    int depth_ = 0;
};

// num_partitions of the HloModule line (1 when it has none).
inline std::int64_t partitions(const HloModule& m) {
    const HloAttr* a = m.attr("num_partitions");
    return a ? std::strtoll(std::string(a->value).c_str(), nullptr, 10) : 1;
}

}  // namespace tpusim::hlo_spmd
