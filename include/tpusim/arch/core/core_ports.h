#pragma once
// The interfaces behind a TensorCore's ports (dma_out, ici_out, host_out): the chip's path to
// HBM, the ICI (collectives) and the host link. Loosely timed: a target may compute the
// completion at once and deliver it at its cycle.
//
// Contract for every call: the transfer starts no earlier than the current simulation time,
// and the target calls `reply(cycle)` exactly once, from the simulation, with the core cycle
// at which it completed (not earlier than the call). As TLM's backward path: a request
// carries where its completion goes (ReplyTo, tpusim/arch/completion.h), not a callback.
#include <cstdint>
#include <systemc>

#include "tpusim/arch/completion.h"
#include "tpusim/common/types.h"
#include "tpusim/program/program.h"

namespace tpusim {

// A DMA instruction of one core: HBM <-> this core's VMEM.
class DmaIf : public virtual sc_core::sc_interface {
 public:
    virtual void transfer(const DmaDescriptor& d, ReplyTo reply) = 0;
};

// A collective or send / recv step of core `core`.
class CollectiveIf : public virtual sc_core::sc_interface {
 public:
    virtual void arrive(const CollectiveInstr& c, std::int64_t core, ReplyTo reply) = 0;
};

// Infeed / outfeed over the chip's host link.
class HostIf : public virtual sc_core::sc_interface {
 public:
    virtual void transfer(const HostInstr& h, ReplyTo reply) = 0;
};

}  // namespace tpusim
