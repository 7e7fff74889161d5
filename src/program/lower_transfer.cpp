// Copy and host-transfer lowering (chunks through VMEM; one host-link instruction) and the
// collective lowering (one ICI instruction over this core's replica group).
#include <algorithm>
#include <memory>

#include "op_lowerings.h"

namespace tpusim {

std::ptrdiff_t replica_group_of(const OpSpec& op, std::int64_t core) {
    std::ptrdiff_t found = -1;
    for (std::size_t g = 0; g < op.replica_groups.size(); ++g) {
        const auto& group = op.replica_groups[g];
        if (std::find(group.begin(), group.end(), core) != group.end())
            found = static_cast<std::ptrdiff_t>(g);
    }
    return found;
}

void TransferLowering::lower_copy(std::size_t i) {
    const OpSpec& op = c_.op(i);
    const Bytes chunk = 1 * kMiB;
    const std::int64_t chunks = static_cast<std::int64_t>(ceil_div(op.bytes, chunk));
    const HbmSrc src = c_.operand(i, 0, op.bytes);
    Waits deps = c_.dep_waits(op);  // only waits: the steps drop the covered ones
    const auto make = [&](std::size_t c) {
        const Bytes off = static_cast<Bytes>(c) * chunk;
        const Bytes bytes = std::min(chunk, op.bytes - off);
        PipelineStep st;
        st.load = [=, &deps](PipelineStep& s) {  // one contiguous row of the chunk's bytes
            c_.drop_covered(deps);
            c_.load_rows(i, src, bytes, 0, 1, deps, s, off);
            s.acc = s.buffers.back();
        };
        st.compute = [](PipelineStep& s) { s.computed = s.loaded; };
        st.finish = [=, &op](PipelineStep& s) {
            c_.sink(i, TileRef{s.acc, 0, static_cast<std::int64_t>(off), 1,
                               static_cast<std::int64_t>(bytes),
                               static_cast<std::int64_t>(op.bytes), 1, s.computed});
        };
        return st;
    };
    c_.run_pipeline(static_cast<std::size_t>(chunks), make);
}

void TransferLowering::lower(std::size_t i) {
    const OpSpec& op = c_.op(i);
    if (op.kind == OpKind::Copy) {
        lower_copy(i);
        return;
    }
    // Infeed / outfeed: one instruction for the host link.
    Instr in;
    in.op = static_cast<std::uint32_t>(i);
    in.waits = c_.dep_waits(op);
    in.unit = Unit::Host;
    in.host() = {op.kind == OpKind::Infeed, op.bytes};
    c_.state(i).done.push_back(c_.emit(std::move(in)));
}

CollectiveInstr collective_instr(const OpSpec& op, std::size_t i, std::int64_t core,
                                 std::int64_t cores) {
    CollectiveInstr coll;
    if (op.kind == OpKind::Send || op.kind == OpKind::Recv) {
        coll.role =
            op.kind == OpKind::Send ? CollectiveInstr::Role::Send : CollectiveInstr::Role::Recv;
        coll.kind = CollectiveKind::SendRecv;
    } else {
        coll.kind = collective_kind(op.kind);
    }
    coll.bytes = op.bytes;
    // A core in a replica group: every group, so that the cores of all groups share the
    // stream; each takes the last group that holds it (should a malformed list repeat the
    // core), as replica_group_of does.
    if (replica_group_of(op, core) >= 0) {
        auto groups = std::make_shared<ReplicaGroups>();
        groups->groups = op.replica_groups;
        std::int64_t top = 0;
        for (const auto& g : op.replica_groups)
            for (std::int64_t c : g) top = std::max(top, c + 1);
        groups->of_core.assign(static_cast<std::size_t>(top), -1);
        for (std::size_t g = 0; g < op.replica_groups.size(); ++g)
            for (std::int64_t c : op.replica_groups[g])
                if (c >= 0)
                    groups->of_core[static_cast<std::size_t>(c)] = static_cast<std::int32_t>(g);
        coll.groups = std::move(groups);
    } else {
        coll.group = op.cores;
    }
    if (!coll.groups && coll.group.empty()) {
        coll.group = op.cores;
        if (coll.group.empty()) {
            for (std::int64_t c = 0; c < cores; ++c) coll.group.push_back(c);
        }
    }
    coll.peer = op.peer;
    coll.pairs = op.pairs;
    coll.element_bytes = op.in_bytes;
    coll.instance = i;
    return coll;
}

void CollectiveLowering::lower(std::size_t i) {
    const OpSpec& op = c_.op(i);
    Instr in;
    in.op = static_cast<std::uint32_t>(i);
    in.waits = c_.dep_waits(op);
    in.unit = Unit::Ici;
    in.coll = std::make_shared<const CollectiveInstr>(
        collective_instr(op, i, c_.core(), c_.opts().cores));
    c_.state(i).done.push_back(c_.emit(std::move(in)));
}

}  // namespace tpusim
