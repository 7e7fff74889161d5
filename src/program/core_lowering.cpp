// The driver of one core's lowering: ops in program order, loop bodies trip after trip, each
// op by the lowering of its kind.
#include "core_lowering.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

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

namespace {

// The ring layout repeated from one lowered trip's start to the next.
bool periodic_before(const std::vector<VmemRing::Layout>& layouts) {
    for (std::size_t t = 0; t + 1 < layouts.size(); ++t)
        if (layouts[t] == layouts[t + 1]) return true;
    return false;
}

// The head after `trips` more trips of `sizes` each from `head`: iterated until a head
// repeats (at most capacity / alignment distinct heads), then the cycle is skipped.
Addr head_after_trips(const VmemRing& ring, Addr head, const std::vector<Bytes>& sizes,
                      std::int64_t trips) {
    std::map<Addr, std::int64_t> seen;
    std::vector<Addr> order;
    for (std::int64_t t = 0; t < trips; ++t) {
        const auto it = seen.find(head);
        if (it != seen.end()) {
            const std::int64_t cycle = t - it->second;
            return order[static_cast<std::size_t>(it->second + (trips - t) % cycle)];
        }
        seen.emplace(head, t);
        order.push_back(head);
        head = ring.head_after(head, sizes);
    }
    return head;
}

}  // namespace

void CoreLowering::lower_loop(const LoopSpec& l, LoopTrips& where) {
    // Trip-invariant: every trip writes the body's results to the same HBM buffers
    // (OpState::out_addr, allocated once) and reads the same parameters; VMEM is allocated from the
    // ring as each trip needs it. A trip's waits name its own producers, the previous trip's
    // for carried values, and the ops before the loop.
    std::size_t before = 0, per_trip = 0;
    const std::int64_t trips = l.lowered();
    VmemRing& ring = ctx_.vmem();
    // Reuse (docs/program.md, "Loops"): which trips lower alike, whatever trips follow.
    //  - Periodic ring: when the VMEM ring's layout (head, buffers, pinned flags) at the start
    //    of trip t + 1 is the one at the start of trip t, trip t + 1 allocates as trip t did,
    //    so every later trip does, and the loop ends in that layout however many trips run.
    //  - No lap: a trip after the first that starts with nothing pinned and cannot come round
    //    the ring to a buffer of its own lowers alike from any head: before it does, its head
    //    has travelled its bytes and at most one wrap (less than one buffer) and meets no
    //    pinned buffer (only its own could be). Its bytes plus its largest buffer (bounded by
    //    the program's largest) fitting the ring rule that out. Its head then moves by a
    //    function of the head alone (VmemRing::head_after over one trip's sizes), so where the
    //    trips not lowered would leave it is found by iterating it (a cycle comes within
    //    capacity / alignment trips); the second-last lowered trip starts there, and the last
    //    two trips and what follows the loop lower as with every trip. Their waits on earlier
    //    trips differ, but those trips have completed when a steady loop gets there.
    std::vector<VmemRing::Layout> layouts;
    bool no_lap = true, jumped = false;
    // Only a loop lowered short is reused: a whole loop keeps no per-trip record (its memory
    // must not grow with the trips).
    const bool watch = trips < l.trips;
    std::string why;
    std::vector<Bytes> sizes;  // one trip's allocations (trip 1's)
    for (std::int64_t trip = 0; trip < trips; ++trip) {
        ctx_.set_trip(trip);
        if (watch && trip == trips - 2 && trip >= 2 && no_lap && !periodic_before(layouts)) {
            // Jump over the trips not lowered (no lap so far: trips lower alike from any head).
            ring.set_head(head_after_trips(ring, ring.head(), sizes, l.trips - trips));
            jumped = true;
        }
        if (watch && trip == 1) ring.log_sizes(&sizes);
        if (watch && trip == 2) ring.log_sizes(nullptr);
        if (trip > 0) {
            for (std::size_t b = l.first; b < l.first + l.count; ++b) {
                ctx_.state(b).prev_done = std::move(ctx_.state(b).done);
                ctx_.state(b).done.clear();
                ctx_.state(b).lowered = false;
            }
        }
        const VmemRing::Totals t0 = ring.totals();
        if (watch && trip > 0) layouts.push_back(ring.layout());
        if (trip > 0 && ring.pinned_bytes() != 0) no_lap = false;
        if (trip == trips - 1) {
            for (std::size_t b = l.first; b < l.first + l.count; ++b)
                trip_hbm_[b] = ctx_.state(b).hbm_bytes;
        }
        before = ctx_.count();
        if (watch) where.starts.push_back(before);
        if (watch) ctx_.watch_next_emit();
        for (std::size_t b = l.first; b < l.first + l.count; ++b) lower_op(b);
        if (watch) {
            // The trip's first instruction's waits that are data dependencies (its op's
            // producers, the previous trip's for carried values), not the ring's.
            std::vector<std::uint32_t> data;
            if (ctx_.count() > before) {
                Waits deps = ctx_.dep_waits(ctx_.op(ctx_.watched_op()));
                std::sort(deps.begin(), deps.end());
                for (std::uint32_t w : ctx_.watched_waits())
                    if (std::binary_search(deps.begin(), deps.end(), w)) data.push_back(w);
            }
            where.data_waits.push_back(std::move(data));
        }
        if (trip == trips - 1) {
            for (std::size_t b = l.first; b < l.first + l.count; ++b)
                trip_hbm_[b] = ctx_.state(b).hbm_bytes - trip_hbm_[b];
        }
        const VmemRing::Totals& t1 = ring.totals();
        const Bytes trip_bytes = t1.bytes - t0.bytes;
        if (trip > 0 && trip_bytes + t1.largest > ring.capacity()) no_lap = false;
        // Every trip lowers the same ops, so the same number of instructions: a loop that
        // would overflow the stream's indices fails now, not after 2^32 of them.
        per_trip = ctx_.count() - before;
        const auto left = static_cast<unsigned __int128>(trips - trip - 1) * per_trip;
        if (ctx_.count() + left > kMaxCoreInstructions) ctx_.too_many();
    }
    where.per_trip = per_trip;
    if (watch) layouts.push_back(ring.layout());  // as the next trip would start
    std::int64_t periodic = 0;
    if (!jumped) {
        for (std::size_t t = 0; t + 1 < layouts.size() && periodic == 0; ++t)
            if (layouts[t] == layouts[t + 1]) periodic = static_cast<std::int64_t>(t) + 1;
    }
    if (why.empty() && periodic == 0 && !(no_lap && jumped))
        why =
            "its trips may come round the VMEM ring to their own buffers and the ring's "
            "layout did not repeat from one trip to the next";
    if (why.empty()) where.first_alike = periodic > 0 ? periodic : 1;
    where.not_reusable = why;
    where.ring_periodic = true;  // periodic, or the head jumped to where all trips leave it
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
            // A loop lowered short that cannot be reused refuses loop reuse for the whole
            // program (LoopReuse::refusal names the first such loop, by index, on any core):
            // the rest is not lowered, as the program is lowered again with every trip.
            // Exact only while no earlier loop can still be refused by the check below.
            if (l.lowered() < l.trips && loop_trips_[li].first_alike == 0) {
                bool settled = true;
                for (std::size_t lj = 0; lj < li; ++lj)
                    settled &= loop_trips_[lj].first_alike == 0 || loop_trips_[lj].ring_periodic;
                if (settled) {
                    stopped_ = true;
                    break;
                }
            }
            continue;
        }
        lower_op(i++);
    }
    for (std::size_t li = 0; li < loops.size(); ++li)
        if (ctx_.vmem().totals().allocations != allocations_after[li] &&
            loop_trips_[li].first_alike > 0 && !loop_trips_[li].ring_periodic) {
            loop_trips_[li].first_alike = 0;
            loop_trips_[li].not_reusable =
                "an op after it allocates VMEM, and the VMEM ring's layout did not repeat from "
                "one trip to the next";
        }
    return ctx_.take_instrs();
}

}  // namespace tpusim
