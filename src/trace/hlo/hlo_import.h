#pragma once
// Internals of the HLO import shared by its files: how each opcode is classified and costed
// (hlo_cost.cpp), the fusion pass (hlo_fusion.cpp) and while trip counts (hlo_while.cpp).
#include <optional>
#include <string_view>
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
OpClass op_class(std::string_view opcode);
bool is_known_opcode(std::string_view opcode);

// Custom-call targets that do no work on the device (annotations, buffer allocation).
bool free_custom_call(std::string_view target);

// What the costing needs to know about one operand of an instruction.
struct OperandPlace {
    bool on_chip = false;  // produced inside the same fusion, generated there, or S(1) (VMEM)
};

struct CostContext {
    const HloModule& m;
    const HloImportOptions& opts;
    std::int64_t cores = 1;
    bool chained = false;  // part of a fusion with other costed instructions
    bool fused = false;    // its primary operand comes from an op of the same fusion
};

// The trace op (id, deps and `fused` left for the caller) for one costed instruction, or none
// when it does no work (an empty array). Collective replica groups are mapped onto the
// program's cores. Throws InputError located at the instruction for malformed attributes.
std::optional<TraceOp> cost_instruction(const HloInstr& in, const HloComputation& comp,
                                        const std::vector<OperandPlace>& places,
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

// The trip count of a while instruction, or nullopt when neither its backend_config nor its
// condition tells.
std::optional<std::int64_t> while_trip_count(const HloModule& m, const HloComputation& parent,
                                             const HloInstr& w);

// The integer value of a scalar constant instruction, or nullopt.
std::optional<std::int64_t> constant_int(const HloInstr& in);

}  // namespace tpusim::hlo_detail
