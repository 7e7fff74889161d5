#pragma once
// Collectives lowered to per-core step schedules. A step sends blocks to peers (ICI packets
// or an on-chip turnaround), then waits for the blocks addressed to it in that step, reducing
// them as they arrive when the step reduces; the next step starts when it has all of them.
// Algorithms (docs/ici.md):
//   all-reduce ring:    reduce-scatter + all-gather on one ring of the group, 2(n-1) steps.
//   all-reduce torus2d: on-chip reduce-scatter between the chip's cores, then per core a
//                       bidirectional reduce-scatter along x, then along y, all-gather back
//                       along y, x and on chip; half of the buffer takes y before x. Needs the
//                       whole slice as the group; other groups fall back to the ring.
//   reduce-scatter / all-gather: one ring phase; all-to-all: one step, every pair directly;
//   collective-permute / send-recv: one step along the given pairs.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tpusim/common/types.h"
#include "tpusim/config/ici_config.h"
#include "tpusim/trace/op_kind.h"

namespace tpusim {

class Topology;

enum class CollectiveKind {
    AllReduce,
    ReduceScatter,
    AllGather,
    AllToAll,
    CollectivePermute,
    SendRecv
};

// Names as in traces: all_reduce, reduce_scatter, all_gather, all_to_all,
// collective_permute, send_recv. Throws InputError for an unknown name.
CollectiveKind parse_collective_kind(const std::string& name);
const char* collective_kind_name(CollectiveKind kind);
// The collective of a trace op kind (all_reduce ... recv; send and recv are SendRecv).
// Throws std::logic_error for a kind that is not a collective.
CollectiveKind collective_kind(OpKind kind);
// Element size of a dtype name (f32, bf16, f16, s32, ...). Throws InputError if unknown.
Bytes dtype_bytes(const std::string& dtype);

// IciNetwork::lowered (ici_network.cpp: spec_hash, same_spec) compares every field: a new
// field must be added there too, or a cached lowering could stand for a different spec.
struct CollectiveSpec {
    CollectiveKind kind = CollectiveKind::AllReduce;
    // all_reduce: the buffer on every core; reduce_scatter: the input on every core;
    // all_gather: the output on every core; all_to_all: what each core sends in total;
    // collective_permute / send_recv: what each source sends.
    Bytes bytes = 0;
    Bytes element_bytes = 4;  // of the dtype; sizes the reduction work
    std::vector<int> group;   // global core ids (chip * cores_per_chip + i); empty: all cores
    std::vector<std::pair<int, int>> pairs;       // permute / send_recv: (source, destination)
    std::optional<AllReduceAlgorithm> algorithm;  // default: the config's
    // torus2d: the buffer is cut into this many pieces per dimension order; pieces run as
    // concurrent streams, so one piece's on-chip reduction overlaps another's link traffic.
    int pieces = 0;  // 0: ici.all_reduce_pieces
};

struct Transfer {
    int dst = 0;  // participant index in the schedule
    Bytes bytes = 0;
    int dst_step = 0;     // step of the receiver that waits for it
    int prefer_sign = 1;  // direction on a torus ring where both are equally short
};
// A step's transfers. Every schedule lower_collective makes but all-to-all's sends at most two
// per step (one per direction of a bidirectional ring), so two are held in place and more go
// to the heap: a torus all-reduce over a pod's 2048 cores (about half a million steps) then
// makes no allocation per step (issue #40).
class TransferList {
 public:
    void push_back(const Transfer& t) {
        if (heap_.empty() && n_ < kInline) {
            inline_[n_++] = t;
            return;
        }
        if (heap_.empty()) heap_.assign(inline_, inline_ + n_);
        heap_.push_back(t);
        ++n_;
    }
    std::size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    Transfer* begin() { return heap_.empty() ? inline_ : heap_.data(); }
    Transfer* end() { return begin() + n_; }
    const Transfer* begin() const { return heap_.empty() ? inline_ : heap_.data(); }
    const Transfer* end() const { return begin() + n_; }
    Transfer& operator[](std::size_t i) { return begin()[i]; }
    const Transfer& operator[](std::size_t i) const { return begin()[i]; }

 private:
    static constexpr std::size_t kInline = 2;
    Transfer inline_[kInline];
    std::size_t n_ = 0;
    std::vector<Transfer> heap_;  // all of them, once there are more than kInline
};
struct Step {
    TransferList sends;
    Bytes recv_bytes = 0;  // what this step waits for
    bool reduce = false;   // received bytes are reduced into the local buffer (VPU + HBM)
};
struct CoreSchedule {
    int core = 0;
    std::vector<Step> steps;
};
struct Schedule {
    std::string name;
    std::vector<CoreSchedule> cores;  // participants
    Bytes element_bytes = 4;
};

// Streams run concurrently, sharing links, routers and reduction units; the collective ends
// with its last stream. The torus all-reduce uses two: half of the buffer goes x then y, the
// other half y then x, so that both dimensions' links carry the same load.
struct LoweredCollective {
    std::string name;
    std::vector<Schedule> streams;
    double setup_us = 0;  // ici.collective_setup_us, or 0 for point-to-point kinds
};

// Throws InputError for a bad spec (core outside the slice, repeated core, empty group, ...).
// Defaults (algorithm, pieces) come from `ici`.
LoweredCollective lower_collective(const CollectiveSpec& spec, const Topology& topo,
                                   const IciConfig& ici);

}  // namespace tpusim
