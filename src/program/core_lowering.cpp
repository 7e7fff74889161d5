// The driver of one core's lowering: ops in program order, loop bodies trip after trip, each
// op by the lowering of its kind.
#include "core_lowering.h"

#include <fmt/format.h>

#include <algorithm>

namespace tpusim {

CoreLowering::CoreLowering(const TpuConfig& cfg, const LoweringOptions& opts, std::int64_t core,
                           const std::vector<OpSpec>& ops, std::string trace_name)
    : ctx_(cfg, opts, core, ops, std::move(trace_name)) {
    ctx_.set_tile_consumer(&vector_);  // only vector ops fuse into their producer (fusion.h)
}

void CoreLowering::lower_op(std::size_t i) {
    const OpSpec& op = ctx_.op(i);
    OpState& st = ctx_.state(i);
    if (!ctx_.on_this_core(op) || st.lowered) return;
    st.lowered = true;
    switch (op.kind) {
        case OpKind::Matmul:
            matmul_.lower(i);
            break;
        case OpKind::Vector:
            vector_.lower(i);
            break;
        case OpKind::Copy:
        case OpKind::Infeed:
        case OpKind::Outfeed:
            transfer_.lower(i);
            break;
        default:
            collective_.lower(i);
            break;
    }
    // The column sums of this op, or of the fused ops its tiles went through, are complete.
    for (std::optional<std::size_t> c = i; c; c = ctx_.inline_consumer(*c))
        if (has_column_sums(ctx_.op(*c))) vector_.write_column_sums(*c);
}

void CoreLowering::lower_loop(const LoopSpec& l, LoopTrips& where) {
    // Trip-invariant: every trip writes the body's results to the same HBM buffers
    // (OpState::out_addr, allocated once) and reads the same parameters; VMEM is allocated from the
    // ring as each trip needs it. A trip's waits name its own producers, the previous trip's
    // for carried values, and the ops before the loop.
    std::size_t before = 0, per_trip = 0;
    const std::int64_t trips = l.lowered();
    VmemRing& ring = ctx_.vmem();
    // Reuse (docs/program.md, "Loops"): a trip after the first lowers the same instructions
    // (but for VMEM addresses and waits on earlier trips) from any ring head when it starts
    // with nothing pinned and cannot come round the ring to a buffer of its own: before it
    // does, its head has travelled its bytes and at most one wrap (less than one buffer), and
    // meets no pinned buffer (only its own could be pinned). Its bytes plus its largest buffer
    // (bounded by the program's largest) fitting the ring rules that out.
    std::string why;
    for (std::size_t b = l.first; b < l.first + l.count; ++b) {
        const OpKind k = ctx_.op(b).kind;
        if (why.empty() && k != OpKind::Matmul && k != OpKind::Vector && k != OpKind::Copy &&
            k != OpKind::Infeed && k != OpKind::Outfeed)
            why = fmt::format(
                "its body has a collective (\"{}\"), whose ICI link time is not charged",
                ctx_.op(b).id);
    }
    for (std::int64_t trip = 0; trip < trips; ++trip) {
        ctx_.set_trip(trip);
        if (trip > 0) {
            for (std::size_t b = l.first; b < l.first + l.count; ++b) {
                ctx_.state(b).prev_done = std::move(ctx_.state(b).done);
                ctx_.state(b).done.clear();
                ctx_.state(b).lowered = false;
            }
        }
        const VmemRing::Totals t0 = ring.totals();
        if (trip > 0 && ring.pinned_bytes() != 0 && why.empty())
            why = fmt::format("trip {} starts with {} bytes of VMEM pinned", trip,
                              ring.pinned_bytes());
        if (trip == trips - 1) {
            for (std::size_t b = l.first; b < l.first + l.count; ++b)
                trip_hbm_[b] = ctx_.state(b).hbm_bytes;
        }
        before = ctx_.count();
        where.starts.push_back(before);
        for (std::size_t b = l.first; b < l.first + l.count; ++b) lower_op(b);
        if (trip == trips - 1) {
            for (std::size_t b = l.first; b < l.first + l.count; ++b)
                trip_hbm_[b] = ctx_.state(b).hbm_bytes - trip_hbm_[b];
        }
        const VmemRing::Totals& t1 = ring.totals();
        const Bytes trip_bytes = t1.bytes - t0.bytes;
        if (trip > 0 && trip_bytes + t1.largest > ring.capacity() && why.empty())
            why = fmt::format(
                "a trip may come round the VMEM ring to its own buffers ({} bytes allocated, "
                "buffers up to {}, a {}-byte ring)",
                trip_bytes, t1.largest, ring.capacity());
        // Every trip lowers the same ops, so the same number of instructions: a loop that
        // would overflow the stream's indices fails now, not after 2^32 of them.
        per_trip = ctx_.count() - before;
        const auto left = static_cast<unsigned __int128>(trips - trip - 1) * per_trip;
        if (ctx_.count() + left > kMaxCoreInstructions) ctx_.too_many();
    }
    where.per_trip = per_trip;
    where.not_reusable = why;
    ctx_.set_trip(0);
}

InstrList CoreLowering::run(std::vector<OpInfo>& infos) {
    ctx_.set_infos(infos);
    const auto& ops = ctx_.ops();
    for (std::size_t i = 0; i < ops.size(); ++i) {
        const OpSpec& op = ops[i];
        if (!ctx_.on_this_core(op)) continue;
        const Bytes bytes = output_bytes(op, ctx_.cfg().vpu.lanes);
        ctx_.state(i).out_addr = ctx_.hbm_alloc(bytes);
        ctx_.state(i).out_size = round_up(std::max<Bytes>(bytes, 1), LoweringContext::kHbmAlign);
    }
    const auto& loops = ctx_.opts().loops;
    trip_hbm_.assign(ops.size(), 0);
    loop_trips_.assign(loops.size(), LoopTrips{});
    // Per loop, the ring's allocations when it ended: a loop after which something allocates
    // VMEM is not reusable (what follows would see another ring).
    std::vector<std::uint64_t> allocations_after(loops.size(), 0);
    std::size_t next_loop = 0;
    for (std::size_t i = 0; i < ops.size();) {
        if (next_loop < loops.size() && loops[next_loop].first == i) {
            const std::size_t li = next_loop++;
            const LoopSpec& l = loops[li];
            lower_loop(l, loop_trips_[li]);
            allocations_after[li] = ctx_.vmem().totals().allocations;
            i = l.first + l.count;
            continue;
        }
        lower_op(i++);
    }
    for (std::size_t li = 0; li < loops.size(); ++li)
        if (ctx_.vmem().totals().allocations != allocations_after[li] &&
            loop_trips_[li].not_reusable.empty())
            loop_trips_[li].not_reusable = "an op after it allocates VMEM";
    return ctx_.take_instrs();
}

}  // namespace tpusim
