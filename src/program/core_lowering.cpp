#include "core_lowering.h"

#include <fmt/format.h>

#include <algorithm>

#include "tpusim/common/error.h"
#include "tpusim/program/fusion.h"

namespace tpusim {

namespace {

Bytes output_bytes(const OpSpec& op) {
    if (op.kind == OpKind::Matmul) return static_cast<Bytes>(op.batch * op.m * op.n * op.out_bytes);
    if (op.kind == OpKind::Vector) {
        const std::int64_t cols = op.rowwise && op.vop.rfind("reduce", 0) == 0 ? 1 : op.cols;
        return static_cast<Bytes>(op.rows * cols * op.out_bytes);
    }
    return op.bytes;
}

void append(std::vector<std::uint32_t>& to, const std::vector<std::uint32_t>& from) {
    to.insert(to.end(), from.begin(), from.end());
}

}  // namespace

CoreLowering::CoreLowering(const TpuConfig& cfg, const LoweringOptions& opts, std::int64_t core,
                           const std::vector<OpSpec>& ops, std::string trace_name)
    : cfg_(cfg),
      opts_(opts),
      core_(core),
      ops_(ops),
      trace_name_(std::move(trace_name)),
      vmem_(static_cast<Bytes>(cfg.vmem.capacity_mib) * kMiB) {
    // Each core allocates its tensors in its own half of the chip's HBM [TLs]; addresses
    // here are relative to that half (CoreProgram::hbm_base places it), so cores that run
    // the same ops share one stream.
    hbm_size_ = cfg.hbm.capacity_bytes() / static_cast<Bytes>(cfg.chip.cores_per_chip);
    hbm_bytes_.assign(ops.size(), 0);
    out_addr_.assign(ops.size(), 0);
    done_.assign(ops.size(), {});
    consumer_.assign(ops.size(), -1);
    consumers_count_.assign(ops.size(), 0);
    lowered_.assign(ops.size(), false);
    prev_done_.assign(ops.size(), {});
    for (const auto& op : ops) {
        for (auto d : op.deps) ++consumers_count_[d];
        for (auto d : op.carried) ++consumers_count_[d];  // read from HBM in the next trip
    }
    in_loop_.assign(ops.size(), false);
    for (const auto& l : opts_.loops)
        for (std::size_t i = l.first; i < l.first + l.count; ++i) in_loop_[i] = true;
    // A fused vector op is lowered inline where it can be (fusion_blocker): it processes its
    // producer's result tiles while they are in VMEM.
    const auto first_fused = first_fused_consumers(ops);
    for (std::size_t i = 0; i < ops.size(); ++i) {
        if (ops[i].fused && fusion_blocker(ops, i, first_fused, cfg).empty()) {
            consumer_[ops[i].deps[0]] = static_cast<std::int64_t>(i);
        }
    }
}

std::uint32_t CoreLowering::emit(Instr in) {
    in.waits.erase(std::remove_if(in.waits.begin(), in.waits.end(),
                                  [this](std::uint32_t w) { return covered_[w]; }),
                   in.waits.end());
    std::sort(in.waits.begin(), in.waits.end());
    in.waits.erase(std::unique(in.waits.begin(), in.waits.end()), in.waits.end());
    for (std::uint32_t w : in.waits) covered_[w] = true;
    covered_.push_back(false);
    if (count_ >= kMaxCoreInstructions) too_many();
    const auto id = static_cast<std::uint32_t>(count_++);
    if (sink_) {
        sink_(std::move(in));
    } else if (count_ > hold_limit_) {
        // Too long to hold: count on, and let the caller stream it.
        if (!overflowed_) InstrList().swap(instrs_);
        overflowed_ = true;
    } else {
        instrs_.push_back(std::move(in));
    }
    return id;
}

CoreLowering::Buffer CoreLowering::alloc(Bytes bytes, bool pinned, Waits& waits, std::size_t op) {
    auto b = vmem_.allocate(bytes, pinned, waits);
    if (!b) {
        throw InputError(
            trace_name_, fmt::format("op \"{}\"", ops_[op].id),
            fmt::format("needs a {:.2f} MiB VMEM buffer beside {:.2f} MiB already "
                        "held; the core has {} MiB of VMEM",
                        static_cast<double>(bytes) / kMiB,
                        static_cast<double>(vmem_.pinned_bytes()) / kMiB, cfg_.vmem.capacity_mib));
    }
    return *b;
}

Addr CoreLowering::hbm_alloc(Bytes bytes) {
    // Addresses only steer the HBM address mapping; a program larger than the core's half
    // wraps round it (check_hbm_capacity, program/hbm_footprint.h, rejects a program that
    // does not fit before it is lowered).
    bytes = round_up(std::max<Bytes>(bytes, 1), 4096);
    if (hbm_next_ + bytes > hbm_size_) hbm_next_ = 0;
    const Addr a = hbm_next_;
    hbm_next_ += bytes;
    return a;
}

void CoreLowering::count_hbm(std::size_t i, Bytes bytes) { hbm_bytes_[i] += bytes; }

bool CoreLowering::on_this_core(const OpSpec& op) const {
    if (op.cores.empty()) return core_ < opts_.cores;
    return std::find(op.cores.begin(), op.cores.end(), core_) != op.cores.end();
}

Addr CoreLowering::operand(std::size_t i, std::size_t which, Bytes bytes) {
    const OpSpec& op = ops_[i];
    if (which < op.deps.size()) return out_addr_[op.deps[which]];
    // After the first trip, the operands past `deps` are the carried values, read in place
    // from the buffers the previous trip wrote (the operand order of unroll_loops).
    if (trip_ > 0 && which - op.deps.size() < op.carried.size())
        return out_addr_[op.carried[which - op.deps.size()]];
    // A parameter: weights or an input the trace does not produce. A loop body reads the
    // same one in every trip.
    if (!in_loop_[i]) return hbm_alloc(bytes);
    const auto [it, fresh] = param_addr_.try_emplace({i, which}, 0);
    if (fresh) it->second = hbm_alloc(bytes);
    return it->second;
}

CoreLowering::Waits CoreLowering::dep_waits(const OpSpec& op) const {
    Waits w;
    for (auto d : op.deps) append(w, done_[d]);
    // Loop-carried values: the previous trip's producer (the first trip's come from `deps`).
    if (trip_ > 0)
        for (auto d : op.carried) append(w, prev_done_[d]);
    return w;
}

void CoreLowering::too_many() const {
    throw InputError(trace_name_, "",
                     fmt::format("core {} would run more than {} instructions (2^32 - 1); "
                                 "use fewer loop trips or a smaller program",
                                 core_, kMaxCoreInstructions));
}

std::optional<std::size_t> CoreLowering::inline_consumer(std::size_t op) const {
    if (consumer_[op] < 0) return std::nullopt;
    return static_cast<std::size_t>(consumer_[op]);
}

void CoreLowering::run_pipeline(std::size_t count, const std::function<Step(std::size_t)>& make) {
    if (count == 0) return;
    // Step s loads before step s - 1 computes; step s - 1 finishes after step s computes.
    Step prev, cur = make(0), next;
    bool has_prev = false;
    cur.load(cur);
    for (std::size_t s = 0; s < count; ++s) {
        if (s + 1 < count) {
            next = make(s + 1);
            next.load(next);
        }
        cur.compute(cur);
        if (has_prev && prev.finish) prev.finish(prev);
        prev = std::move(cur);
        has_prev = true;
        if (s + 1 < count) cur = std::move(next);
    }
    if (prev.finish) prev.finish(prev);
}

void CoreLowering::lower_op(std::size_t i) {
    const OpSpec& op = ops_[i];
    if (!on_this_core(op) || lowered_[i]) return;
    lowered_[i] = true;
    switch (op.kind) {
        case OpKind::Matmul:
            lower_matmul(i);
            break;
        case OpKind::Vector:
            lower_vector(i);
            break;
        case OpKind::Copy:
            lower_copy(i);
            break;
        default:
            lower_single(i);
            break;
    }
}

void CoreLowering::lower_loop(const LoopSpec& l) {
    // Trip-invariant: every trip writes the body's results to the same HBM buffers
    // (out_addr_, allocated once) and reads the same parameters; VMEM is allocated from the
    // ring as each trip needs it. A trip's waits name its own producers, the previous trip's
    // for carried values, and the ops before the loop.
    std::size_t before = 0, per_trip = 0;
    for (std::int64_t trip = 0; trip < l.trips; ++trip) {
        trip_ = trip;
        if (trip > 0) {
            for (std::size_t b = l.first; b < l.first + l.count; ++b) {
                prev_done_[b] = std::move(done_[b]);
                done_[b].clear();
                lowered_[b] = false;
            }
        }
        before = count_;
        for (std::size_t b = l.first; b < l.first + l.count; ++b) lower_op(b);
        // Every trip lowers the same ops, so the same number of instructions: a loop that
        // would overflow the stream's indices fails now, not after 2^32 of them.
        per_trip = count_ - before;
        const auto left = static_cast<unsigned __int128>(l.trips - trip - 1) * per_trip;
        if (count_ + left > kMaxCoreInstructions) too_many();
    }
    trip_ = 0;
}

InstrList CoreLowering::run(std::vector<OpInfo>& infos) {
    infos_ = &infos;
    for (std::size_t i = 0; i < ops_.size(); ++i) {
        const OpSpec& op = ops_[i];
        if (!on_this_core(op)) continue;
        out_addr_[i] = hbm_alloc(output_bytes(op));
    }
    std::size_t next_loop = 0;
    for (std::size_t i = 0; i < ops_.size();) {
        if (next_loop < opts_.loops.size() && opts_.loops[next_loop].first == i) {
            const LoopSpec& l = opts_.loops[next_loop++];
            lower_loop(l);
            i = l.first + l.count;
            continue;
        }
        lower_op(i++);
    }
    return std::move(instrs_);
}

void CoreLowering::sink(std::size_t i, TileRef tile) {
    if (auto c = inline_consumer(i)) {
        if (consumers_count_[i] > 1) {
            // For the unfused consumers, in the op's own dtype (a matmul hands its fused
            // consumer f32 accumulators; the VPU converts what goes to HBM).
            TileRef stored = tile;
            stored.elem = ops_[i].out_bytes;
            write_back(i, stored);
        }
        consume_tile(*c, std::move(tile));
        return;
    }
    write_back(i, tile);
}

void CoreLowering::write_back(std::size_t i, const TileRef& tile) {
    if (ops_[i].result_in_vmem) {  // the result stays in VMEM (S(1)): no write to HBM
        done_[i].insert(done_[i].end(), tile.ready.begin(), tile.ready.end());
        return;
    }
    Instr out;
    out.unit = Unit::Dma;
    out.op = static_cast<std::uint32_t>(i);
    out.waits = tile.ready;
    out.dma() = dma_block(DmaDescriptor::Dir::VmemToHbm,
                          {out_addr_[i], tile.total_cols, tile.row0, tile.col0, tile.rows,
                           tile.cols, static_cast<Bytes>(tile.elem)},
                          tile.vmem);
    const std::uint32_t id = emit(std::move(out));
    vmem_.use(tile.vmem, id);
    done_[i].push_back(id);
    count_hbm(i, static_cast<Bytes>(tile.rows * tile.cols * tile.elem));
}

void CoreLowering::consume_tile(std::size_t i, TileRef in) {
    const OpSpec& op = ops_[i];
    lowered_[i] = true;
    (*infos_)[i].fused_into = ops_[op.deps[0]].id;
    const std::int64_t out_cols = op.rowwise && op.vop.rfind("reduce", 0) == 0 ? 1 : in.cols;
    const std::int64_t out_total = op.rowwise && op.vop.rfind("reduce", 0) == 0 ? 1 : in.total_cols;
    Waits waits = in.ready;
    for (std::size_t d = 1; d < op.deps.size(); ++d) append(waits, done_[op.deps[d]]);
    // Further operands (e.g. the residual of a fused add) come from HBM.
    for (std::int64_t x = 1; x < op.vector_inputs; ++x) {
        const Bytes bytes = static_cast<Bytes>(in.rows * in.cols * op.in_bytes);
        Waits w = dep_waits(op);
        Buffer b = alloc(bytes, false, w, i);
        Instr ld;
        ld.unit = Unit::Dma;
        ld.op = static_cast<std::uint32_t>(i);
        ld.waits = w;
        const Addr src = operand(i, static_cast<std::size_t>(x), bytes);
        ld.dma() = dma_block(DmaDescriptor::Dir::HbmToVmem,
                             {src, in.total_cols, in.row0, in.col0, in.rows, in.cols,
                              static_cast<Bytes>(op.in_bytes)},
                             b.addr);
        const std::uint32_t id = emit(std::move(ld));
        vmem_.use(b.addr, id);
        waits.push_back(id);
        count_hbm(i, bytes);
    }
    Buffer ob = alloc(static_cast<Bytes>(in.rows * out_cols * op.out_bytes), false, waits, i);
    Instr v;
    v.unit = Unit::Vpu;
    v.op = static_cast<std::uint32_t>(i);
    v.waits = waits;
    v.vec() = {op.vop, in.rows, in.cols, in.elem, op.out_bytes};
    const std::uint32_t id = emit(std::move(v));
    vmem_.use(in.vmem, id);
    vmem_.use(ob.addr, id);
    TileRef out{ob.addr,      in.row0, out_cols == 1 ? 0 : in.col0, in.rows, out_cols, out_total,
                op.out_bytes, {id}};
    sink(i, std::move(out));
}

}  // namespace tpusim
