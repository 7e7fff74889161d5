// The shared state of one core's lowering: the stream, VMEM and HBM allocation, operand
// buffers, per-op records, the pipeline of steps and the delivery of result tiles.
#include "lowering_context.h"

#include <fmt/format.h>

#include <algorithm>

#include "tpusim/common/error.h"
#include "tpusim/program/fusion.h"

namespace tpusim {

namespace {

// The op whose result operand `which` reads (OpSpec::operands), or -1 for a parameter.
std::ptrdiff_t operand_dep(const OpSpec& op, std::size_t which) {
    if (op.operands.empty())
        return which < op.deps.size() ? static_cast<std::ptrdiff_t>(op.deps[which]) : -1;
    if (which < op.operands.size() && op.operands[which] >= 0)
        return static_cast<std::ptrdiff_t>(op.deps[static_cast<std::size_t>(op.operands[which])]);
    return -1;
}

// Whether op reads dep only in a later result array than the first (a saved mask), so that
// it does not make the dep's first array a result to store.
bool reads_later_arrays_only(const OpSpec& op, std::size_t dep) {
    bool later = false;
    for (std::size_t j = 0; j < op.operand_array.size(); ++j) {
        if (operand_dep(op, j) != static_cast<std::ptrdiff_t>(dep)) continue;
        if (op.operand_array[j] == 0) return false;
        later = true;
    }
    return later;
}

}  // namespace

bool has_column_sums(const OpSpec& op) {
    return op.kind == OpKind::Vector && vector_op_lowering(op.vop).column_sums;
}

Bytes output_bytes(const OpSpec& op, std::int64_t lanes) {
    if (op.kind == OpKind::Matmul) return static_cast<Bytes>(op.batch * op.m * op.n * op.out_bytes);
    if (op.kind == OpKind::Vector) {
        const bool reduces = op.rowwise && vector_op_info(op.vop).reduces;
        const Bytes cols = reduces ? 1
                                   : round_up(static_cast<Bytes>(op.cols),
                                              static_cast<Bytes>(std::max<std::int64_t>(lanes, 1)));
        Bytes elem = 0;  // of all result arrays together
        for (std::int64_t k = 0; k < op.vector_outputs; ++k)
            elem += static_cast<Bytes>(vector_output_bytes(op, k));
        // dgamma and dbeta: one row each after dx.
        const Bytes sums = has_column_sums(op) ? 2 * cols * static_cast<Bytes>(op.out_bytes) : 0;
        return static_cast<Bytes>(op.rows) * cols * elem + sums;
    }
    return op.bytes;
}

LoweringContext::LoweringContext(const TpuConfig& cfg, const LoweringOptions& opts,
                                 std::int64_t core, const std::vector<OpSpec>& ops,
                                 std::string trace_name)
    : cfg_(cfg),
      opts_(opts),
      core_(core),
      ops_(ops),
      trace_name_(std::move(trace_name)),
      state_(ops.size()),
      vmem_(static_cast<Bytes>(cfg.vmem.capacity_mib) * kMiB) {
    // Each core allocates its tensors in its own half of the chip's HBM [TLs]; addresses
    // here are relative to that half (CoreProgram::hbm_base places it), so cores that run
    // the same ops share one stream.
    hbm_size_ = cfg.hbm.capacity_bytes() / static_cast<Bytes>(cfg.chip.cores_per_chip);
    for (const auto& op : ops) {
        for (auto d : op.deps)
            if (!reads_later_arrays_only(op, d)) ++state_[d].consumers;
        for (auto d : op.carried) ++state_[d].consumers;  // read from HBM in the next trip
    }
    for (const auto& l : opts_.loops)
        for (std::size_t i = l.first; i < l.first + l.count; ++i) state_[i].in_loop = true;
    // A fused vector op is lowered inline where it can be (fusion_blocker): it processes its
    // producer's result tiles while they are in VMEM.
    const auto first_fused = first_fused_consumers(ops);
    for (std::size_t i = 0; i < ops.size(); ++i) {
        if (ops[i].fused && fusion_blocker(ops, i, first_fused, cfg).empty()) {
            state_[ops[i].deps[0]].consumer = static_cast<std::int64_t>(i);
        }
    }
}

std::uint32_t LoweringContext::emit(Instr in) {
    in.waits.erase(std::remove_if(in.waits.begin(), in.waits.end(),
                                  [this](std::uint32_t w) { return covered_[w]; }),
                   in.waits.end());
    std::sort(in.waits.begin(), in.waits.end());
    in.waits.erase(std::unique(in.waits.begin(), in.waits.end()), in.waits.end());
    // The lowerings hand over every wait they know (a consumer's chunk lists each write-back
    // of its producer), most of them covered: keep only the room the kept ones need, or the
    // held stream carries the dropped ones' capacity (hundreds of MB on a large module).
    if (in.waits.capacity() > in.waits.size()) Waits(in.waits).swap(in.waits);
    for (std::uint32_t w : in.waits) covered_[w] = true;
    covered_.push_back(false);
    if (watch_next_) {
        watch_next_ = false;
        watched_waits_.assign(in.waits.begin(), in.waits.end());
        watched_op_ = in.op;
    }
    if (count_ >= kMaxCoreInstructions) too_many();
    if (in.unit == Unit::Dma && in.dma().hbm_extent() > hbm_size_) past_share(in);
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

LoweringContext::Buffer LoweringContext::alloc(Bytes bytes, bool pinned, Waits& waits,
                                               std::size_t op) {
    auto b = vmem_.allocate(bytes, pinned, waits);
    if (!b) {
        throw VmemExhausted(
            trace_name_, fmt::format("op \"{}\"", ops_[op].id),
            fmt::format("needs a {:.2f} MiB VMEM buffer beside {:.2f} MiB already "
                        "held; the core has {} MiB of VMEM",
                        static_cast<double>(bytes) / kMiB,
                        static_cast<double>(vmem_.pinned_bytes()) / kMiB, cfg_.vmem.capacity_mib),
            op);
    }
    return *b;
}

Addr LoweringContext::hbm_alloc(Bytes bytes) {
    // Addresses only steer the HBM address mapping; a program larger than the core's half
    // wraps round it (check_hbm_capacity, program/hbm_footprint.h, rejects a program that
    // does not fit before it is lowered).
    bytes = round_up(std::max<Bytes>(bytes, 1), kHbmAlign);
    if (hbm_next_ + bytes > hbm_size_) hbm_next_ = 0;
    const Addr a = hbm_next_;
    hbm_next_ += bytes;
    return a;
}

bool LoweringContext::on_this_core(const OpSpec& op) const {
    if (op.cores.empty()) return core_ < opts_.cores;
    return std::find(op.cores.begin(), op.cores.end(), core_) != op.cores.end();
}

HbmSrc LoweringContext::param(std::size_t i, std::size_t which, Bytes bytes) {
    // A parameter: weights or an input the trace does not produce. A loop body reads the
    // same one in every trip.
    const auto at = [&] {
        return HbmSrc{hbm_alloc(bytes), round_up(std::max<Bytes>(bytes, 1), kHbmAlign)};
    };
    if (!state_[i].in_loop) return at();
    const auto [it, fresh] = param_addr_.try_emplace({i, which}, HbmSrc{});
    if (fresh) it->second = at();
    return it->second;
}

HbmSrc LoweringContext::operand(std::size_t i, std::size_t which, Bytes bytes) {
    const OpSpec& op = ops_[i];
    const std::ptrdiff_t dep = operand_dep(op, which);
    // A producer that did not run on this core (an op on a subset of the cores, such as a
    // collective over one replica group) left no buffer here: the operand is then an input
    // of this core's own, as a parameter is.
    if (dep >= 0 && state_[static_cast<std::size_t>(dep)].out_size > 0) {
        const auto d = static_cast<std::size_t>(dep);
        // A later result array of the dep (a saved-mask dropout_grad's mask).
        const std::int64_t k = which < op.operand_array.size() ? op.operand_array[which] : 0;
        if (k > 0 && k < ops_[d].vector_outputs) return result_array(d, k);
        return {state_[d].out_addr, state_[d].out_size};
    }
    // After the first trip, the operands past `deps` are the carried values, read in place
    // from the buffers the previous trip wrote (the operand order of unroll_loops).
    if (op.operands.empty() && trip_ > 0 && which - op.deps.size() < op.carried.size()) {
        const std::size_t c = op.carried[which - op.deps.size()];
        if (state_[c].out_size > 0) return {state_[c].out_addr, state_[c].out_size};
    }
    return param(i, which, bytes);
}

void LoweringContext::check_block(std::size_t i, const char* what, const DmaDescriptor& d,
                                  HbmSrc buf) const {
    if (d.hbm_addr >= buf.addr && d.hbm_extent() <= buf.addr + buf.size) return;
    throw InputError(trace_name_, fmt::format("op \"{}\"", ops_[i].id),
                     fmt::format("its {} ({} rows of {} B, {} B apart) reaches HBM bytes "
                                 "[{:#x}, {:#x}), outside its buffer of {} B at {:#x} "
                                 "(internal error)",
                                 what, d.rows, d.row_bytes, d.hbm_stride, d.hbm_addr,
                                 d.hbm_extent(), buf.size, buf.addr));
}

void LoweringContext::wrap_block(DmaDescriptor& d, HbmSrc buf) {
    if (d.hbm_addr >= buf.addr && d.hbm_extent() <= buf.addr + buf.size) return;
    // The op views the operand as larger than the buffer that holds it (a pad or broadcast of
    // a smaller source, a wider dtype than the producer wrote, the partial last row of an
    // array in rows of 1024 lanes, a hand-written dep of another size): it reads the bytes
    // its view says, from the source again past the source's end, never past the buffer.
    Bytes span = d.hbm_extent() - d.hbm_addr;
    if (span > buf.size) {  // rows spread wider than the source: packed
        d.hbm_stride = d.row_bytes;
        span = d.bytes();
    }
    if (span > buf.size) {  // more than the whole source: the source, once
        d.rows = 1;
        d.row_bytes = d.hbm_stride = d.vmem_stride = buf.size;
        d.hbm_addr = buf.addr;
        return;
    }
    d.hbm_addr = buf.addr + (d.hbm_addr - buf.addr) % (buf.size - span + 1);
}

void LoweringContext::fit_block(DmaDescriptor& d, HbmSrc buf, std::int64_t grid_bytes) {
    if (static_cast<Bytes>(grid_bytes) <= buf.size) return;  // the tile as it is
    // A fused op works on its producer's tiles (the grid of `grid_bytes`), and its own array
    // (this buffer) is not that grid where it is smaller: a reduction across the tiles' rows,
    // a gather or window reduction of the producer's result. Each tile's block then stands
    // for its share of the array: at the tile's place scaled to the array, its bytes scaled
    // too, one contiguous block inside the buffer.
    const auto grid = static_cast<double>(std::max<std::int64_t>(grid_bytes, 1));
    const double share = std::min(1.0, static_cast<double>(buf.size) / grid);
    const Bytes bytes = std::max<Bytes>(
        1, std::min(d.bytes(), static_cast<Bytes>(static_cast<double>(d.bytes()) * share)));
    const auto off = static_cast<Bytes>(static_cast<double>(d.hbm_addr - buf.addr) * share);
    d.rows = 1;
    d.row_bytes = d.hbm_stride = d.vmem_stride = bytes;
    d.hbm_addr = buf.addr + std::min(off, buf.size - std::min(buf.size, bytes));
}

void LoweringContext::past_share(const Instr& in) const {
    // The lowering keeps every block inside its buffer and every buffer inside the share, so
    // this is a lowering bug, reported where it is made rather than as refused HBM chunks.
    const DmaDescriptor& d = in.dma();
    throw InputError(trace_name_, fmt::format("op \"{}\"", ops_[in.op].id),
                     fmt::format("core {}: a DMA {} HBM bytes [{:#x}, {:#x}), past the core's "
                                 "share of {:.2f} GiB (internal error)",
                                 core_, d.to_vmem() ? "reads" : "writes", d.hbm_addr,
                                 d.hbm_extent(), static_cast<double>(hbm_size_) / kGiB));
}

void LoweringContext::append_uncovered(Waits& to, const Waits& from) const {
    for (std::uint32_t w : from)
        if (!covered_[w]) to.push_back(w);
}

void LoweringContext::drop_covered(Waits& w) const {
    w.erase(std::remove_if(w.begin(), w.end(), [this](std::uint32_t x) { return covered_[x]; }),
            w.end());
}

Waits LoweringContext::dep_waits(const OpSpec& op) const {
    Waits w;
    for (auto d : op.deps) append_waits(w, state_[d].done);
    // Loop-carried values: the previous trip's producer (the first trip's come from `deps`).
    if (trip_ > 0)
        for (auto d : op.carried) append_waits(w, state_[d].prev_done);
    return w;
}

void LoweringContext::too_many() const {
    throw InputError(trace_name_, "",
                     fmt::format("core {} would run more than {} instructions (2^32 - 1); "
                                 "use fewer loop trips or a smaller program",
                                 core_, kMaxCoreInstructions));
}

std::optional<std::size_t> LoweringContext::inline_consumer(std::size_t op) const {
    if (state_[op].consumer < 0) return std::nullopt;
    return static_cast<std::size_t>(state_[op].consumer);
}

void LoweringContext::run_pipeline(std::size_t count,
                                   const std::function<PipelineStep(std::size_t)>& make) {
    if (count == 0) return;
    // PipelineStep s loads before step s - 1 computes; step s - 1 finishes after step s computes.
    PipelineStep prev, cur = make(0), next;
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

void LoweringContext::sink(std::size_t i, TileRef tile) {
    if (auto c = inline_consumer(i)) {
        if (state_[i].consumers > 1) {
            // For the unfused consumers, in the op's own dtype (a matmul hands its fused
            // consumer f32 accumulators; the VPU converts what goes to HBM).
            TileRef stored = tile;
            stored.elem = ops_[i].out_bytes;
            write_back(i, stored);
        }
        tile_consumer_->consume_tile(*c, std::move(tile));
        return;
    }
    write_back(i, tile);
}

void LoweringContext::write_back(std::size_t i, const TileRef& tile) {
    if (ops_[i].result_in_vmem) {  // the result stays in VMEM (S(1)): no write to HBM
        state_[i].done.insert(state_[i].done.end(), tile.ready.begin(), tile.ready.end());
        return;
    }
    const HbmSrc region = result_array(i, tile.output);
    Instr out;
    out.unit = Unit::Dma;
    out.op = static_cast<std::uint32_t>(i);
    out.waits = tile.ready;
    out.dma() = dma_block(DmaDescriptor::Dir::VmemToHbm,
                          {region.addr, tile.total_cols, tile.row0, tile.col0, tile.rows, tile.cols,
                           static_cast<Bytes>(tile.elem)},
                          tile.vmem);
    const OpSpec& op = ops_[i];
    if (op.fused && !op.deps.empty() &&
        state_[op.deps[0]].consumer == static_cast<std::int64_t>(i)) {
        // Its producer's grid of tiles: larger than its result past the lanes' padding of
        // the grid's rows, a smaller array (a reduction across the rows, a gather).
        const std::int64_t rows = tile_grid_rows(i);
        const std::int64_t pad =
            rows * std::min(cfg_.vpu.lanes - 1, tile.total_cols - 1) * tile.elem;
        if (rows * tile.total_cols * tile.elem > static_cast<std::int64_t>(region.size) + pad)
            fit_block(out.dma(), region, rows * tile.total_cols * tile.elem);
    }
    wrap_block(out.dma(), region);
    check_block(i, "result tile", out.dma(), region);
    const Bytes moved = out.dma().bytes();
    const std::uint32_t id = emit(std::move(out));
    vmem_.use(tile.vmem, id);
    state_[i].done.push_back(id);
    count_hbm(i, moved);
}

HbmSrc LoweringContext::result_array(std::size_t i, std::int64_t k) const {
    const OpSpec& op = ops_[i];
    if (op.kind != OpKind::Vector || op.vector_outputs <= 1)
        return {state_[i].out_addr, state_[i].out_size};
    // The op's result arrays lie one after another in its buffer.
    Bytes elem = 0, before = 0;
    for (std::int64_t j = 0; j < op.vector_outputs; ++j) {
        const auto b = static_cast<Bytes>(vector_output_bytes(op, j));
        if (j < k) before += b;
        elem += b;
    }
    const Bytes per_elem_byte = output_bytes(op, cfg_.vpu.lanes) / elem;
    return {state_[i].out_addr + before * per_elem_byte,
            static_cast<Bytes>(vector_output_bytes(op, k)) * per_elem_byte};
}

std::int64_t LoweringContext::tile_grid_rows(std::size_t i) const {
    // The op that made the tiles: up the chain of inline fused consumers.
    std::size_t p = ops_[i].deps[0];
    while (ops_[p].fused && !ops_[p].deps.empty() &&
           state_[ops_[p].deps[0]].consumer == static_cast<std::int64_t>(p))
        p = ops_[p].deps[0];
    const OpSpec& r = ops_[p];
    if (r.kind == OpKind::Matmul) return r.batch * r.m;
    if (r.kind == OpKind::Vector) return r.rows;
    return 1;
}

void LoweringContext::load_rows(std::size_t i, HbmSrc src, Bytes row_bytes, std::int64_t r0,
                                std::int64_t rows, const Waits& after, PipelineStep& s, Bytes at) {
    const Bytes bytes = static_cast<Bytes>(rows) * row_bytes;
    Waits w = uncovered(after);
    Buffer buf = alloc(bytes, false, w, i);
    Instr ld;
    ld.unit = Unit::Dma;
    ld.op = static_cast<std::uint32_t>(i);
    ld.waits = std::move(w);
    const auto row = static_cast<std::int64_t>(row_bytes);
    ld.dma() = dma_block(DmaDescriptor::Dir::HbmToVmem, {src.addr + at, row, r0, 0, rows, row, 1},
                         buf.addr);
    wrap_block(ld.dma(), src);
    const Bytes moved = ld.dma().bytes();
    const std::uint32_t id = emit(std::move(ld));
    vmem_.use(buf.addr, id);
    s.loaded.push_back(id);
    s.buffers.push_back(buf.addr);
    count_hbm(i, moved);
}

}  // namespace tpusim
