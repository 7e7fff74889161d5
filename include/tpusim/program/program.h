#pragma once
// The program layer's output: one instruction stream per TensorCore, what XLA hands a TPU
// after tiling. Instructions are coarse VLIW operations: a DMA descriptor, a block of MXU
// passes, a vector loop over a VMEM-resident chunk, a collective. The sequencer issues them in
// order; each waits on the completion of earlier instructions (sync flags) and occupies one
// unit. Inner loops (weight tiles of a block, vector tiles of a chunk) are timed by the unit
// models, so their cost follows from the hardware description.
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "tpusim/common/types.h"
#include "tpusim/program/collectives.h"
#include "tpusim/program/dma_descriptor.h"
#include "tpusim/trace/trace.h"

namespace tpusim {

enum class Unit : std::uint8_t { Dma, Mxu, Vpu, Ici, Host };
const char* unit_name(Unit u);

// A block of MXU work on one MXU: the k x n weights are cut into array-sized tiles, each
// streamed by m LHS rows.
struct MatmulInstr {
    std::int64_t mxu = 0;
    std::int64_t m = 0, k = 0, n = 0;
};

struct VectorInstr {
    VectorOp op = VectorOp::Add;
    bool saved_mask = false;  // dropout, dropout_grad: the keep mask is saved (VectorOpDesc)
    std::int64_t rows = 0, cols = 0;
    std::int64_t in_bytes = 4, out_bytes = 4;  // element sizes
};

// A collective op's replica groups (OpSpec::replica_groups). The cores of all its groups share
// one lowered stream (their instructions differ in nothing else), so that stream's collective
// names every group and each core takes its own when it issues (CollectiveInstr::group_of).
struct ReplicaGroups {
    std::vector<std::vector<std::int64_t>> groups;  // global core ids, as the op lists them
    std::vector<std::int32_t> of_core;              // per core: the last group holding it, or -1
};

struct CollectiveInstr {
    // A group collective (kind), or one side of a send / recv pair (kind SendRecv).
    enum class Role : std::uint8_t { Group, Send, Recv };
    Role role = Role::Group;
    CollectiveKind kind = CollectiveKind::AllReduce;
    Bytes bytes = 0;
    // Global core ids taking part: the same for every core of the stream (the op's cores, or
    // every core), or, when `groups` is set, the group of the issuing core (group_of).
    std::vector<std::int64_t> group;
    std::shared_ptr<const ReplicaGroups> groups;
    std::int64_t peer = -1;                                    // send: destination; recv: source
    std::vector<std::pair<std::int64_t, std::int64_t>> pairs;  // collective_permute
    std::int64_t element_bytes = 4;                            // sizes the reduction work
    std::uint64_t instance = 0;  // same value on every participating core

    // The cores `core` takes part with: its replica group, or `group`.
    const std::vector<std::int64_t>& group_of(std::int64_t core) const {
        if (!groups) return group;
        const std::int32_t g = core >= 0 && static_cast<std::size_t>(core) < groups->of_core.size()
                                   ? groups->of_core[static_cast<std::size_t>(core)]
                                   : -1;
        return g >= 0 ? groups->groups[static_cast<std::size_t>(g)] : group;
    }
};

struct HostInstr {
    bool to_device = true;  // infeed, else outfeed
    Bytes bytes = 0;
};

struct Instr {
    Unit unit = Unit::Dma;
    std::uint32_t op = 0;              // index of the trace op it implements
    std::vector<std::uint32_t> waits;  // instruction indices that must have completed
    // Collectives are rare and large (groups, pairs): held out of line, null on other units.
    std::shared_ptr<const CollectiveInstr> coll;

    // The operands of the unit's instruction: one kind per instruction (compact encoding: an
    // instruction holds only its own unit's fields). The const accessors require the kind to
    // be the one held (std::bad_variant_access otherwise); the others make it so.
    DmaDescriptor& dma() { return operands<DmaDescriptor>(); }
    MatmulInstr& mm() { return operands<MatmulInstr>(); }
    VectorInstr& vec() { return operands<VectorInstr>(); }
    HostInstr& host() { return operands<HostInstr>(); }
    const DmaDescriptor& dma() const { return std::get<DmaDescriptor>(operands_); }
    const MatmulInstr& mm() const { return std::get<MatmulInstr>(operands_); }
    const VectorInstr& vec() const { return std::get<VectorInstr>(operands_); }
    const HostInstr& host() const { return std::get<HostInstr>(operands_); }

 private:
    template <class T>
    T& operands() {
        if (!std::holds_alternative<T>(operands_)) operands_.template emplace<T>();
        return std::get<T>(operands_);
    }
    std::variant<DmaDescriptor, MatmulInstr, VectorInstr, HostInstr> operands_;
};

// Instructions as lowering appends them: in blocks, so a long stream never holds a second copy
// of itself while it grows (as a vector does when it reallocates).
using InstrList = std::deque<Instr>;

class InstrStream;  // lowered on demand (SharedInstrs::streamed)

// A read-only instruction stream shared by the cores that run the same program: SPMD cores
// whose ops and collective groups are the same are lowered once (lower_ops). Indexable like
// the list it wraps. A program too long to hold (sim.stream_above_instructions) is instead
// streamed: its lowering runs again on demand, a bounded window ahead of the cores that read
// it, and frees the instructions every reader has released, so the simulator's memory follows
// the window, not the program's length; the instructions are the same either way.
class SharedInstrs {
 public:
    SharedInstrs() : v_(std::make_shared<const InstrList>()) {}
    explicit SharedInstrs(InstrList v)
        : v_(std::make_shared<const InstrList>(std::move(v))), size_(v_->size()) {}
    // A stream of `size` instructions produced by `stream`.
    SharedInstrs(std::shared_ptr<InstrStream> stream, std::size_t size);

    // Streamed: waits for the lowering to reach i; i must not have been released by every
    // reader (release()).
    const Instr& operator[](std::size_t i) const { return stream_ ? streamed_at(i) : (*v_)[i]; }
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    bool streamed() const { return stream_ != nullptr; }
    // Whole-list access: held (not streamed) instructions only (std::logic_error otherwise).
    InstrList::const_iterator begin() const { return held().begin(); }
    InstrList::const_iterator end() const { return held().end(); }
    const Instr& front() const { return held().front(); }
    const Instr& back() const { return held().back(); }
    // The same stream (not a copy) as `o`.
    bool same_as(const SharedInstrs& o) const { return v_ == o.v_ && stream_ == o.stream_; }

    // A reader of the stream (a core): add_reader() once, then release(reader, below) when it
    // will read no instruction below `below` again. No-ops on held instructions.
    std::size_t add_reader() const;
    void release(std::size_t reader, std::size_t below) const {
        if (stream_) release_streamed(reader, below);
    }
    // Instructions in memory now (all of them when held).
    std::size_t resident() const;

 private:
    const InstrList& held() const;
    const Instr& streamed_at(std::size_t i) const;
    void release_streamed(std::size_t reader, std::size_t below) const;
    std::shared_ptr<const InstrList> v_;
    std::shared_ptr<InstrStream> stream_;
    std::size_t size_ = 0;
};

// Where one loop's lowered trips lie in a core's stream, for loop reuse (docs/program.md,
// "Loops"): starts[t] is the index of trip t's first instruction (starts.size() = the lowered
// trips). From trip `first_alike` on, every trip lowers the same instructions (but for VMEM
// addresses and waits on earlier trips), the trips not lowered too, and what follows the loop
// lowers as after all its trips; 0 when that does not hold, and `not_reusable` says why.
struct LoopTrips {
    std::vector<std::size_t> starts;
    // Per trip, the waits of its first instruction that are data dependencies (on its op's
    // producers), sorted: loop reuse needs that instruction released by one of them.
    std::vector<std::vector<std::uint32_t>> data_waits;
    std::size_t per_trip = 0;  // instructions of one trip
    std::int64_t first_alike = 0;
    bool ring_periodic = false;  // the ring's layout repeats from first_alike on
    std::string not_reusable;
};

struct CoreProgram {
    std::int64_t core = 0;
    std::vector<LoopTrips> loops;  // one per Program::loops entry
    // DMA HBM addresses in `instrs` are relative to the core's own share of its chip's HBM;
    // the core adds hbm_base at issue (the only core-specific part of a shared stream).
    Addr hbm_base = 0;
    SharedInstrs instrs;
    // The ICI instruction of each collective op it runs, in op order (one per op: every trip
    // of a loop issues the same), shared by the cores that share `instrs`. What SPMD symmetry
    // checks without reading the stream (which may be streamed).
    std::shared_ptr<const std::vector<CollectiveInstr>> collectives;
};

// Per-op accounting the program layer knows before simulation.
struct OpInfo {
    std::string id;
    OpKind kind = OpKind::Matmul;
    double flops = 0;          // useful FLOPs on one core, every trip of its loop
    std::int64_t trips = 1;    // times it runs (its loop's trips)
    double padded_flops = 0;   // FLOPs the MXU performs including padding
    Bytes hbm_bytes = 0;       // bytes the op moves between HBM and VMEM on one core, every trip
    Bytes trip_hbm_bytes = 0;  // of those, one trip's after the first (loop body ops)
    std::vector<std::int64_t> cores;
    std::string fused_into;         // producer whose tiles this op consumed in VMEM, if any
    std::vector<std::size_t> deps;  // ops (indices into Program::ops) whose results it reads
    std::int64_t loop = -1;         // index of the loop whose body it is in; -1: none
};

// A trace loop as lowered: ops first .. first + count - 1 run `trips` times; the streams hold
// `lowered_trips` of them (fewer under loop reuse, which the simulation charges exactly or
// refuses: RunResult::loop_reuse).
struct ProgramLoop {
    std::size_t first = 0, count = 0;
    std::int64_t trips = 1, lowered_trips = 1;
};

struct Program {
    std::string name;
    std::vector<OpInfo> ops;
    std::vector<ProgramLoop> loops;
    std::vector<CoreProgram> cores;  // one per participating core, indexed by global core id
    // For the user, located: "<trace>: op \"x\": what" (e.g. a `fused` flag with no effect).
    std::vector<std::string> warnings;
    std::size_t rematerialized_ops = 0;  // ops recomputed to fit the HBM (program/remat.h)
    // The lowering stopped at a loop lowered short that cannot be reused (CoreLowering::run):
    // the program is only good for LoopReuse::refusal, which refuses it; not to be simulated.
    bool refused_loop_reuse = false;
};

}  // namespace tpusim
