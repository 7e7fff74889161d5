// The driver of one core's lowering: ops in program order, loop bodies trip after trip, each
// op by the lowering of its kind.
#include "core_lowering.h"

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

void CoreLowering::lower_loop(const LoopSpec& l) {
    // Trip-invariant: every trip writes the body's results to the same HBM buffers
    // (OpState::out_addr, allocated once) and reads the same parameters; VMEM is allocated from the
    // ring as each trip needs it. A trip's waits name its own producers, the previous trip's
    // for carried values, and the ops before the loop.
    std::size_t before = 0, per_trip = 0;
    for (std::int64_t trip = 0; trip < l.trips; ++trip) {
        ctx_.set_trip(trip);
        if (trip > 0) {
            for (std::size_t b = l.first; b < l.first + l.count; ++b) {
                ctx_.state(b).prev_done = std::move(ctx_.state(b).done);
                ctx_.state(b).done.clear();
                ctx_.state(b).lowered = false;
            }
        }
        before = ctx_.count();
        for (std::size_t b = l.first; b < l.first + l.count; ++b) lower_op(b);
        // Every trip lowers the same ops, so the same number of instructions: a loop that
        // would overflow the stream's indices fails now, not after 2^32 of them.
        per_trip = ctx_.count() - before;
        const auto left = static_cast<unsigned __int128>(l.trips - trip - 1) * per_trip;
        if (ctx_.count() + left > kMaxCoreInstructions) ctx_.too_many();
    }
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
    std::size_t next_loop = 0;
    for (std::size_t i = 0; i < ops.size();) {
        if (next_loop < loops.size() && loops[next_loop].first == i) {
            const LoopSpec& l = loops[next_loop++];
            lower_loop(l);
            i = l.first + l.count;
            continue;
        }
        lower_op(i++);
    }
    return ctx_.take_instrs();
}

}  // namespace tpusim
