#pragma once
// Internals of the HLO import shared by its files: one row per opcode (hlo_opcode.cpp) naming
// its class and its cost function (hlo_cost.cpp; the MXU's instructions in hlo_matrix.cpp,
// collectives in hlo_collective.cpp), the fusion pass (hlo_fusion.cpp), while
// trip counts (hlo_while.cpp) and which buffer each operand of an imported op reads
// (hlo_operands.cpp). The walker itself is hlo_importer.h.
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "hlo_cursor.h"
#include "tpusim/trace/hlo.h"

namespace tpusim::hlo_detail {

// How the import treats an opcode.
enum class OpClass {
    Free,         // parameter, constant, tuple, get-tuple-element, bitcast, reshape, ...
    Generated,    // broadcast, iota: free inside a fusion (made in registers), a write otherwise
    Elementwise,  // VPU work per element
    Movement,     // copy, transpose, slice, pad, gather, ...: bytes, no arithmetic
    Heavy,        // dot, convolution: the MXU
    Reduction,    // reduce, reduce-window, select-and-scatter, batch norm, sort
    Collective,   // all-reduce, all-gather, ... (and their -start halves)
    Host,         // infeed, outfeed, send, recv
    Control,      // call, while, conditional, fusion, async-start: handled by the walker
    PassThrough,  // *-done, async-update, copy-done: the value of the start
    CustomCall,
};

struct CostArgs;
// A cost function: the trace op for one instruction (id, deps and `fused` left for the
// caller), or none when it does no work (an empty array).
using CostFn = std::optional<TraceOp> (*)(const CostArgs&);

// What the import knows of one opcode (one row of the table in hlo_opcode.cpp).
struct OpcodeInfo {
    HloOpcode op = HloOpcode::Unknown;
    std::string_view name;  // its spelling in HLO text
    OpClass cls = OpClass::Elementwise;
    CostFn cost = nullptr;  // nullptr: no trace op of its own (free, control flow, *-done)
    // Elementwise: the VPU op with one stream in from HBM and with two or more (none: one ALU
    // operation per element, `scale` with one stream, `add` with two).
    std::optional<VectorOp> unary{}, binary{};
    // One of XLA's expensive elementwise ops (HloInstruction::IsOpElementwise and
    // IsExpensive): instruction fusion does not duplicate it into several consumers.
    bool expensive = false;
    OpKind collective = OpKind::AllReduce;  // the trace kind of a collective
};
const OpcodeInfo& opcode_info(HloOpcode op);
// HloOpcode::Unknown for a spelling the table does not have.
HloOpcode hlo_opcode(std::string_view name);
inline OpClass op_class(HloOpcode op) { return opcode_info(op).cls; }
// Whether any computation of the module holds a fusion instruction (hlo_print.cpp).
bool has_fusions(const HloModule& m);

// A copy whose result has its operand's shape and layout: XLA's algebraic simplifier removes
// it (HandleCopy), so the fusion pass treats it as the value itself. Modules after SPMD
// partitioning hold one per parameter of a shard_map (RoBERTa's step: 906).
bool is_noop_copy(const HloComputation& comp, const HloInstr& in);

// Whether `in` is its operand's value under another name: a bitcast, a reshape, or (where
// `copies`, the fusion pass's modules) a copy that keeps shape and layout (is_noop_copy).
bool is_view(const HloComputation& comp, const HloInstr& in, bool copies);
// The instruction whose value `o` reads, looking through views (is_view).
const HloInstr& viewed(const HloComputation& comp, const HloOperand& o, bool copies);
// Bytes a value takes in HBM: its arrays' (every tuple leaf's) in memory space 0; none for
// those in VMEM (S(1)) or host memory (S(5)).
std::int64_t hbm_bytes(const HloShape& s);

// The program's cores (devices): the SPMD partitions, else the replicas, else the devices its
// replica groups name (modules written after partitioning without the header attributes)
// (hlo_collective.cpp).
std::int64_t program_cores(const HloModule& m);

// Custom-call targets that do no work on the device (annotations, buffer allocation).
bool free_custom_call(std::string_view target);

// What the costing needs to know about one operand of an instruction.
struct OperandPlace {
    bool on_chip = false;  // produced inside the same fusion, generated there, or S(1) (VMEM)
};

// Where an operand of a fusion member comes from (the importer's view, hlo_importer.h).
struct Place {
    std::vector<std::uint32_t> internal;  // ops of the same fusion that produce it
    bool on_chip = false;                 // no HBM read: internal, generated, or in VMEM
    bool vmem = false;                    // its layout says memory space 1 (VMEM)
    std::vector<std::uint32_t> external;  // ops outside the fusion that it waits for
};

struct CostContext {
    const HloModule& m;
    const HloImportOptions& opts;
    std::int64_t cores = 1;
    bool chained = false;  // part of a fusion with other costed instructions
    bool fused = false;    // its primary operand comes from an op of the same fusion
};

// The trace op (id, deps and `fused` left for the caller) for one costed instruction, or none
// when it does no work (an empty array): its opcode's cost function. Collective replica groups
// are mapped onto the program's cores. Throws InputError located at the instruction for
// malformed attributes.
std::optional<TraceOp> cost_instruction(const HloInstr& in, const HloComputation& comp,
                                        const std::vector<OperandPlace>& places,
                                        const CostContext& ctx);

// What a cost function gets: the instruction, its computation and operands' places, the
// context, and what every cost function needs of the shapes.
struct CostArgs {
    const HloInstr& in;
    const HloComputation& comp;
    const std::vector<OperandPlace>& places;
    const CostContext& ctx;
    const HloShape& out;     // the largest array of the result
    const HloType& in_type;  // operand 0's element type (the result's without operands)
    // Operand k's shape; InputError located at the instruction when it has fewer operands.
    const HloShape& operand(std::size_t k) const;
    // Bytes of the first array of `s`, padded to the (8, 128) tile where tile-padding is on.
    std::int64_t pad_bytes(const HloShape& s) const;
    // A vector op over rows x cols elements of `in_t` writing the result's type; none when
    // either is 0.
    std::optional<TraceOp> vec(VectorOp op, const HloType& in_t, std::int64_t rows,
                               std::int64_t cols) const;
};

// The cost functions of the table's rows (hlo_cost.cpp; dot and convolution in
// hlo_matrix.cpp, collectives in hlo_collective.cpp).
std::optional<TraceOp> cost_dot(const CostArgs& a);
std::optional<TraceOp> cost_convolution(const CostArgs& a);
std::optional<TraceOp> cost_fft(const CostArgs& a);
std::optional<TraceOp> cost_solve(const CostArgs& a);  // triangular-solve, cholesky
std::optional<TraceOp> cost_elementwise(const CostArgs& a);
std::optional<TraceOp> cost_movement(const CostArgs& a);
std::optional<TraceOp> cost_update_slice(const CostArgs& a);
std::optional<TraceOp> cost_scatter(const CostArgs& a);
std::optional<TraceOp> cost_reduce(const CostArgs& a);
std::optional<TraceOp> cost_reduce_window(const CostArgs& a);
std::optional<TraceOp> cost_select_and_scatter(const CostArgs& a);
std::optional<TraceOp> cost_batch_norm(const CostArgs& a);
std::optional<TraceOp> cost_sort(const CostArgs& a);  // sort, topk
std::optional<TraceOp> cost_scan(const CostArgs& a);
std::optional<TraceOp> cost_collective(const CostArgs& a);
std::optional<TraceOp> cost_infeed(const CostArgs& a);   // infeed, recv
std::optional<TraceOp> cost_outfeed(const CostArgs& a);  // outfeed, send

// Shapes and element types the costing shares (hlo_cost.cpp): the trace dtype that stores `t`
// and how many trace elements one HLO element takes (64-bit types are pairs of 32-bit words on
// the TPU's 32-bit VPU); the first array of a (tuple) shape; the shape of the value an operand
// reads (its instruction's, or the element of a tuple-shaped one); operand k's shape.
std::pair<DType, std::int64_t> trace_dtype(const HloType& t);
const HloShape& first_array(const HloShape& s);
const HloShape& value_shape(const HloComputation& comp, const HloOperand& o);
const HloShape& operand_shape(const HloInstr& in, const HloComputation& comp, std::size_t k);
// The numbers of one field of a window attribute ("size" of window={size=3x3 stride=2x2}:
// {3, 3}); empty when the instruction has no window or the window no such field.
std::vector<std::int64_t> window_field(const HloInstr& in, const HloModule& m,
                                       std::string_view key);

// The MXU's instructions (hlo_matrix.cpp): a dot as a batched GEMM; a convolution as a conv2d
// (direct-convolutions) or as its implicit GEMM per group.
std::optional<TraceOp> dot_op(const HloInstr& in, const HloComputation& comp,
                              const CostContext& ctx);
std::optional<TraceOp> conv_op(const HloInstr& in, const HloComputation& comp,
                               const CostContext& ctx);

// A collective (all-reduce, all-gather, ...) with its replica groups as core ids
// (hlo_collective.cpp).
std::optional<TraceOp> collective_op(const HloInstr& in, const CostContext& ctx,
                                     const std::vector<const HloShape*>& operands);

// Fusion clusters of a computation of a module without fusions: cluster[i] lists the roots of
// the clusters instruction i belongs to (more than one when a cheap producer is duplicated
// into several), empty for instructions that are not fused (free ops used outside one
// cluster, control flow, collectives). Roots list only themselves.
std::vector<std::vector<std::int32_t>> fusion_clusters(const HloComputation& comp);

// The order a fused computation's kernels run in (hlo_schedule.cpp), as XLA's default memory
// scheduler picks it: of a greedy list schedule, a DFS post-order and the plain post-order,
// the one with the lowest peak of live HBM buffers. `order` holds every instruction once (the
// members of a fusion just before the first fusion that holds them); `algorithm` is "list",
// "dfs" or "post-order" ("text" if the graph had a cycle and the text order is kept);
// `peak_bytes` and `text_peak_bytes`: the peak of the chosen order and of the text's.
// `sibling_groups` (from sibling_groups(); empty: none): the fusions of one sibling
// multi-output group are one kernel, scheduled as one node and emitted one after another
// (`siblings_merged`; false when merging them made a cycle and they were scheduled apart).
struct MemorySchedule {
    std::vector<std::int32_t> order;
    const char* algorithm = "text";
    std::int64_t peak_bytes = 0, text_peak_bytes = 0;
    bool siblings_merged = false;
};
MemorySchedule memory_schedule(const HloComputation& comp,
                               const std::vector<std::vector<std::int32_t>>& cluster,
                               const std::vector<std::int32_t>& sibling_groups = {});

// The value an operand reads, as one number: its instruction and tuple element.
inline std::int64_t read_key(const HloOperand& o) {
    return static_cast<std::int64_t>(o.instr) * (std::int64_t{1} << 20) + (o.tuple_index + 1);
}

// Sibling multi-output fusion for the fusions the pass makes (hlo_fusion.cpp): fusions that
// read the same operand, run over the same elements and do not depend on each other are one
// kernel that reads the operand once, as XLA's multi-output fusion makes them
// (xla/service/gpu/multi_output_fusion.cc, FuseSiblings: loop and reduction fusions with a
// common operand, equal iteration shapes, no path between them). The importer still emits
// each fusion at its own place; one that joins a group finds the operands the group's kernel
// read already on chip.
struct SiblingFusions {
    struct Group {
        std::vector<std::int32_t> members;      // instructions of its fusions
        std::int64_t space = 0;                 // elements of its iteration space
        std::unordered_set<std::int64_t> read;  // operands its kernel reads (read_key)
    };
    std::vector<Group> groups;
    std::unordered_map<std::int64_t, std::vector<std::size_t>> readers;  // operand -> groups
    std::size_t current = 0;  // the group of the fusion being emitted

    void init(const HloComputation& c);
    // Whether an instruction of `to` depends on one of `from` (members of both excepted: a
    // producer duplicated into both fusions). Instructions are in program order, so the
    // search stops past the last of `to`.
    bool reaches(const std::vector<std::int32_t>& from, const std::vector<std::int32_t>& to);
    // The read set of the multi-output kernel that the pass-made fusion `mem` (rooted at
    // `root`) joins: an earlier group that read one of its HBM operands (`in_hbm`), over the
    // same elements, on which it does not depend; else a new group of its own (`joined`
    // false). Null for fusions XLA does not fuse so: the output fusion of a dot or
    // convolution, and roots other than elementwise ops and reductions.
    std::unordered_set<std::int64_t>* join(const HloComputation& c,
                                           const std::vector<std::int32_t>& mem, std::int32_t root,
                                           const std::function<bool(const HloOperand&)>& in_hbm,
                                           bool& joined);
    // The fusion `mem` joined groups[current] and its kernel reads `read`.
    void record(const std::unordered_set<std::int64_t>& read, const std::vector<std::int32_t>& mem);
    // Set: the group of each fusion root as sibling_groups found them (-1: its own kernel);
    // join then joins the group given, not the first that would take it.
    std::vector<std::int32_t> forced;

 private:
    std::vector<std::vector<std::int32_t>> users_;
    std::vector<std::uint32_t> seen_, target_;  // search stamps
    std::uint32_t stamp_ = 0;
    std::unordered_map<std::int32_t, std::size_t> live_;  // forced group -> groups index
};

// Whether operand `o` is on chip wherever it is read: a constant, a value made in registers
// (broadcast, iota) or one in VMEM (S(1)), looking through views (with `copies`, also copies
// that keep shape and layout).
bool on_chip_operand(const HloComputation& c, const HloOperand& o, bool copies);
// The sibling multi-output groups of a computation's fusion clusters (fusion_clusters), as
// the walker forms them when it emits the fusions in text order (SiblingFusions::join), by
// fusion root: a group id shared by the fusions of one kernel, -1 for a fusion on its own.
// XLA forms multi-output fusions before it schedules, so the memory scheduler takes each
// group as one kernel (memory_schedule) and the walker joins them as found here.
std::vector<std::int32_t> sibling_groups(const HloComputation& c,
                                         const std::vector<std::vector<std::int32_t>>& cluster);

// The trip count of a while instruction, or nullopt when neither its backend_config nor its
// condition tells.
std::optional<std::int64_t> while_trip_count(const HloModule& m, const HloComputation& parent,
                                             const HloInstr& w);

// The trace op that holds an operand's value: the op of the same fusion that produces it,
// else the largest of the outside ops it waits for; -1 when no op does (a parameter).
std::int64_t value_holder(const Place& p, const std::vector<TraceOp>& ops);

// The trace op that holds each HBM operand of `op`, the op imported for `in` (its operands'
// places `ps`; `ops` the trace so far), in the op's operand order; -1 for a parameter or
// constant that no op produces. The deps of an unfused fusion member are every input of its
// fusion (it waits for them all), so their order says nothing of which buffer holds which
// operand (hlo_operands.cpp).
std::vector<std::int64_t> operand_sources(const HloInstr& in, const TraceOp& op,
                                          const std::vector<Place>& ps,
                                          const std::vector<TraceOp>& ops);

// Sets op.operands from operand_sources once op.deps are final: each source's position in
// deps (-1: none); left empty where operand j is deps[j] anyway (docs/trace-format.md).
void set_operands(TraceOp& op, const std::vector<std::int64_t>& sources);

// The integer value of a scalar constant instruction, or nullopt.
std::optional<std::int64_t> constant_int(const HloInstr& in);

}  // namespace tpusim::hlo_detail
