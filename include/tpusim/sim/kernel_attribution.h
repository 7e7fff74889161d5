#pragma once
// Per-kernel attribution (docs/program.md, "Kernels and the critical-path split").
//
// A kernel is an op as the chip runs it: an op with the ops fused into it (an op whose
// `fused_into` names another, along a chain), named after that root op. Its self time is its
// share of the run on the critical path of one core, so that the kernels' self times add up to
// the run's cycles exactly; a kernel that overlapped others everywhere has self time 0.
//
// The split itself (critical_path_split) is a plain function of a small graph, testable
// without the simulator; attribute_kernels builds the graph from a run.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tpusim/common/types.h"
#include "tpusim/trace/op_kind.h"

namespace tpusim {

inline constexpr std::size_t kUnitCountForKernels = 5;  // Dma, Mxu, Vpu, Ici, Host (Unit)

// One node of the critical-path graph: a kernel on the chosen core.
struct PathNode {
    Cycle start = 0, end = 0;       // its first member's start .. last member's end on the core
    bool ran = true;                // false: it did not run on the core (self 0, never on the path)
    std::vector<std::size_t> deps;  // nodes whose results it reads (indices into the graph)
    // The units it used on the core, bit u for Unit u, u < 8 (all: any node may have held it
    // up).
    std::uint32_t units = ~std::uint32_t{0};
    // Nodes with the same loop >= 0 are the kernels of one loop body: per-trip times are not
    // kept, so the walk takes the loop as one step and splits the loop's time by `weight`
    // (the kernel's busiest unit's cycles; all 0: evenly).
    std::int64_t loop = -1;
    double weight = 0;
};

// A stretch of the critical path: [from, to) given to `nodes` (one node, or a loop's nodes).
struct PathSegment {
    Cycle from = 0, to = 0;
    std::vector<std::size_t> nodes;
};

struct PathSplit {
    std::vector<Cycle> self;            // per node; the sum is run_end when any node ran
    std::vector<PathSegment> segments;  // latest first, back to back down to cycle 0
};

// The walk, with nodes in issue order (the order the core's sequencer issues them; each unit
// runs its instructions in that order):
//  1. Start at the node that ends last (ties: the later issued) with the cursor t at run_end.
//  2. Its predecessors are its deps and, for each unit it used, the last earlier-issued node
//     on that unit that ended before t (the work the unit had to finish first). The
//     last-arriving of those that ended before t is its predecessor on the path; when none
//     did, the last earlier-issued node to end before t. The node gets [end of that
//     predecessor, t): its own time that no predecessor overlapped, and any gap before its
//     start (its launch or wait: a gap goes to the node after it). Without any, it gets [0, t).
//  3. Continue from that predecessor with t at its end, until t is 0.
// A loop's nodes are one step: the loop spans its nodes' first start .. last end, uses their
// units, and its deps are theirs outside the loop; its time is split by weight (whole
// cycles, largest remainders first, so the shares add up exactly).
PathSplit critical_path_split(const std::vector<PathNode>& nodes, Cycle run_end);

// One op of a run as attribute_kernels reads it.
struct KernelOpInput {
    std::string id;
    OpKind kind = OpKind::Matmul;
    std::size_t fused_into = kNoOp;  // index of the op whose tiles it consumed; kNoOp: none
    std::vector<std::size_t> deps;   // op indices it reads
    std::int64_t loop = -1;          // the loop whose body it is in; -1: none
    std::int64_t trips = 1;
    // On the chosen core: whether it ran, its first start and last end, and its busiest unit's
    // cycles (MXU: per MXU) for splitting a loop's time.
    bool ran_on_core = false;
    Cycle core_start = 0, core_end = 0;
    double core_weight = 0;
    std::uint32_t core_units = 0;  // bit u: busy on Unit u
    // Over the whole board, as the report's `ops` has them.
    Cycle start_cycle = 0, end_cycle = 0;
    bool ran = false;  // on any core
    Cycle busy[kUnitCountForKernels] = {0, 0, 0, 0, 0};
    double flops = 0;
    Bytes hbm_bytes = 0;
    std::string bottleneck;
    static constexpr std::size_t kNoOp = ~std::size_t{0};
};

struct KernelRow {
    std::string name;                  // the root op's id
    std::vector<std::size_t> members;  // op indices, the root first, then in issue order
    OpKind kind = OpKind::Matmul;      // the root's
    Cycle self_cycles = 0;
    std::int64_t trips = 1;
    Cycle start_cycle = 0, end_cycle = 0;  // over the board, first member start .. last end
    Cycle busy[kUnitCountForKernels] = {0, 0, 0, 0, 0};
    double flops = 0;
    Bytes hbm_bytes = 0;
    std::string bound;  // the root's verdict
};

struct KernelAttribution {
    std::string method = "critical path";
    std::int64_t core = 0;  // the core whose critical path was split (the one that ends last)
    Cycle run_cycles = 0, sum_cycles = 0;
    std::vector<KernelRow> kernels;      // by self_cycles, largest first (ties: issue order)
    std::vector<std::size_t> op_kernel;  // per op: index into kernels
    std::vector<Cycle> op_self;          // per op: its kernel's self for a root, 0 for members
    std::vector<PathSegment> path;       // the walk, nodes as indices into kernels
};

// Kernels from the ops of a run (in issue order) and their split of `run_cycles` on `core`.
KernelAttribution attribute_kernels(const std::vector<KernelOpInput>& ops, std::int64_t core,
                                    Cycle run_cycles);

}  // namespace tpusim
