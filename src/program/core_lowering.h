#pragma once
// Lowering of a whole trace for one TensorCore (private to the program layer): the ops in
// program order, loops trip after trip, each op by the lowering of its kind (op_lowerings.h)
// over one shared LoweringContext.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lowering_context.h"
#include "op_lowerings.h"

namespace tpusim {

class CoreLowering {
 public:
    CoreLowering(const TpuConfig& cfg, const LoweringOptions& opts, std::int64_t core,
                 const std::vector<OpSpec>& ops, std::string trace_name);
    // The core's instruction stream; DMA HBM addresses relative to the core's HBM share.
    // Empty when the stream overflowed the held limit (hold_at_most) or went to a sink.
    InstrList run(std::vector<OpInfo>& infos);
    // Holds at most `n` instructions: past that, run() only counts them (overflowed()).
    void hold_at_most(std::size_t n) { ctx_.hold_at_most(n); }
    // Hands every instruction to `sink` instead of holding it.
    void set_sink(std::function<void(Instr&&)> sink) { ctx_.set_sink(std::move(sink)); }
    bool overflowed() const { return ctx_.overflowed(); }
    std::size_t count() const { return ctx_.count(); }  // instructions emitted
    // The bytes op i moves between HBM and VMEM on this core (after run()).
    Bytes hbm_bytes(std::size_t i) const { return ctx_.state(i).hbm_bytes; }
    // Of those, the last lowered trip's (loop body ops; 0 elsewhere).
    Bytes trip_hbm_bytes(std::size_t i) const { return i < trip_hbm_.size() ? trip_hbm_[i] : 0; }
    // Per loop of the options, where its lowered trips lie in the stream (after run()).
    const std::vector<LoopTrips>& loop_trips() const { return loop_trips_; }
    // run() stopped after a loop lowered short that cannot be reused (LoopTrips::first_alike
    // 0): the stream and figures end there, and only loop_trips() up to that loop holds.
    bool stopped() const { return stopped_; }

 private:
    void lower_op(std::size_t i);
    void lower_loop(const LoopSpec& l, LoopTrips& where);

    LoweringContext ctx_;
    MatmulLowering matmul_{ctx_};
    VectorLowering vector_{ctx_};
    TransferLowering transfer_{ctx_};
    CollectiveLowering collective_{ctx_};
    std::vector<Bytes> trip_hbm_;
    std::vector<LoopTrips> loop_trips_;
    bool stopped_ = false;
};

}  // namespace tpusim
