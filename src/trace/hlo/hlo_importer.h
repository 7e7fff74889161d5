#pragma once
// The HLO importer's walker (private to src/trace/hlo): walks a computation in program order,
// inlines call / while / conditional / async bodies, and tracks which trace ops produce each
// HLO value so that dependencies follow the data (docs/hlo.md). A fusion becomes trace ops in
// emit_cluster (hlo_import.cpp); a while loop of 2 or more trips becomes a trace loop in
// repeat (hlo_while.cpp).
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "hlo_import.h"
#include "hlo_value.h"
#include "tpusim/common/error.h"

namespace tpusim::hlo_detail {

class Importer {
 public:
    Importer(const HloModule& m, const HloImportOptions& o, std::int64_t cores, HloImportStats& st);

    Trace run();

 private:
    int line_of(std::uint32_t offset) const;

    // The module the walker reads: its fusions inlined when it is another backend's
    // (is_foreign_fused), else SPMD-partitioned when it has global shapes and shardings, then
    // its calls inlined (call-inliner); nullopt when it is `m` as it is.
    static std::optional<HloModule> prepared(const HloModule& m, const HloImportOptions& o,
                                             HloImportStats& st);

    std::string unique_id(std::string_view name, const std::string& suffix);

    // A copy the fusion pass treats as its operand (is_noop_copy); modules that XLA has
    // optimised (with fusions) keep their copies.
    bool noop_copy(const HloComputation& c, const HloInstr& in) const;

    static const Value& element(const Value& v, std::int32_t index);

    // The value of computation `ci` called with `args`; `suffix` makes the ids of an inlined
    // copy unique ("@t" for loop trip t).
    Value walk(std::int32_t ci, const std::vector<Value>& args, const std::string& suffix);

    // An operand from outside a fusion: on chip when generated (broadcast, iota, constant)
    // or held in VMEM (memory space 1), else read from HBM after its producers.
    Place outside(const HloComputation& c, const HloOperand& o, const std::vector<Value>& vals);

    // call, while, conditional, fusion, async-start: the callee's value.
    Value control(const HloComputation& c, const HloInstr& in, std::vector<Value>& vals,
                  const std::string& suffix);

    Place fused_parameter(const HloComputation& f, const HloOperand& o, const HloComputation& c,
                          const HloInstr& fusion, const std::vector<Value>& vals);

    Value custom_call(const HloComputation& c, const HloInstr& in, Value operands,
                      const std::string& suffix);

    std::optional<Value> repeat(const HloInstr& w, std::int32_t body, const Value& state,
                                std::int64_t trips, const std::string& suffix);

    // The kernel a vector op `in` can join as the consumer of a multi-output fusion, as XLA's
    // multi-output fusion fuses a producer with several users into one of them (the value is
    // still stored for the others): the trace op that computes its primary operand (operand
    // 0, read from HBM), if that op is a vector op or a dot/convolution of this computation
    // whose tiles no fused consumer takes yet, its result has as many elements as the operand
    // (one tile of it per tile of the consumer), and every other operand of `in` is ready
    // before it starts (the consumer runs inside its loop over the tiles). Else none.
    std::optional<std::uint32_t> producer_to_join(const HloComputation& c, const HloInstr& in,
                                                  const std::vector<Place>& ps) const;

    // `on_chip`: the fusion's operands (keys of read_key) already on chip when it starts (a
    // sibling of the same multi-output fusion read them); the operands it reads from HBM are
    // added to it. Null: none.
    Value emit_cluster(const HloComputation& c, const std::vector<std::int32_t>& members,
                       std::int32_t root, const std::string& suffix,
                       const std::function<Place(const HloOperand&)>& ext,
                       std::unordered_set<std::int64_t>* on_chip = nullptr);

    std::optional<HloModule> own_;  // the prepared module, if any (before m_: m_ refers to it)
    const HloModule& m_;
    const HloImportOptions& opts_;
    HloImportStats& stats_;
    Trace trace_;
    std::unordered_set<std::string> ids_;
    std::unordered_map<std::string, std::int64_t> next_copy_;
    std::unordered_set<std::uint32_t> warned_;
    // Trace ops that already hand their tiles to a fused consumer (the program runs one fused
    // consumer per producer; docs/trace-format.md).
    std::unordered_set<std::uint32_t> claimed_;
    int depth_ = 0;  // walk() calls open
    // Trace ops before this index belong to another computation's walk or to a loop: a
    // multi-output fusion does not join them (producer_to_join).
    std::uint32_t mof_floor_ = 0;
    bool in_loop_ = false;  // walking the body of a repeated loop: inner loops are unrolled
    bool has_fusions_ = false, pass_ = false;
    bool schedule_ = false;  // run fused computations in memory_schedule's order
    struct Schedule {
        MemorySchedule ms;
        std::vector<std::int32_t> groups;  // sibling groups it merged (SiblingFusions::forced)
    };
    std::unordered_map<std::int32_t, Schedule> schedules_;  // by computation
    // Offsets of the text's newlines, found on the first line_of (ops are not met in text
    // order, so a forward scan would restart from the top for each op that goes back).
    mutable std::vector<std::uint32_t> newlines_;
    mutable bool newlines_found_ = false;
};

}  // namespace tpusim::hlo_detail
