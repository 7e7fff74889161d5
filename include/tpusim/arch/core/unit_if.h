#pragma once
// The interface every unit a TensorCore issues to implements: the MXUs and the VPU inside the
// core, the DMA engines, the collective rendezvous and the host link outside it. The core
// holds one port per unit (TensorCore::unit_out, indexed by Unit) and knows nothing else of
// them; `tpusim bench` and the system tests drive a unit through the same interface.
//
// Contract, in the spirit of TLM's forward and backward paths:
//  - issue(in, req) is called only while !full(in), at the cycle the sequencer issues `in`;
//    the unit owns its queue and its SystemC process, and starts `in` no earlier than now.
//  - freed(in) is notified whenever full(in) may have become false.
//  - The unit tells req.reply exactly once, from the simulation, what the instruction did
//    (UnitDone); `done.end` is not earlier than the cycle of the call, and an end in the
//    future is delivered by the core at that cycle. No callback crosses: the request carries
//    where its completion goes.
//  - The unit adds what it did to req.issuer.stats (its own fields of CoreStats) unless null.
#include <cstdint>
#include <string>
#include <systemc>

#include "tpusim/common/types.h"
#include "tpusim/program/program.h"

namespace tpusim {

struct CoreStats;

// What a unit reports of one instruction.
struct UnitDone {
    Cycle start = 0;  // the unit started on it (its span on the timeline begins)
    Cycle end = 0;    // it completed: its results are in place
    Cycle busy = 0;   // cycles it kept the unit busy (OpTiming::busy)
    bool operator==(const UnitDone& o) const {
        return start == o.start && end == o.end && busy == o.busy;
    }
};

// The issuer's side of a request: told once when the request with `tag` completed.
class UnitDoneIf : public virtual sc_core::sc_interface {
 public:
    virtual void done(std::uint64_t tag, const UnitDone& d) = 0;
};

// Where a unit sends an instruction's completion; `to == nullptr`: nobody is told.
struct UnitReply {
    UnitDoneIf* to = nullptr;
    std::uint64_t tag = 0;
    explicit operator bool() const { return to != nullptr; }
    void operator()(const UnitDone& d) const { to->done(tag, d); }
};

// Who issued: the same for every instruction of a core.
struct Issuer {
    std::int64_t core = 0;       // global core id (collectives pair up by it)
    Addr hbm_base = 0;           // DMA addresses of a shared stream are relative to it
    CoreStats* stats = nullptr;  // the core's counters; null: counted nowhere (bench, tests)
};

struct UnitRequest {
    UnitReply reply;
    Issuer issuer;
};

class UnitIf : public virtual sc_core::sc_interface {
 public:
    virtual bool full(const Instr& in) const = 0;
    virtual const sc_core::sc_event& freed(const Instr& in) const = 0;
    // `in` stays valid until its completion has been told.
    virtual void issue(const Instr& in, const UnitRequest& req) = 0;
    // Its track on the core's timeline ("MXU 0", "VPU", "DMA").
    virtual std::string track_name() const = 0;
};

// Which instance of its unit runs `in` (the binding of the core's port for the unit): the MXU
// a matmul names; every other unit has one per core.
inline std::size_t unit_instance(const Instr& in) {
    return in.unit == Unit::Mxu ? static_cast<std::size_t>(in.mm().mxu) : 0;
}

}  // namespace tpusim
