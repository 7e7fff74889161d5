#include "core_lowering.h"

#include <fmt/format.h>

#include <algorithm>

#include "tpusim/common/error.h"
#include "tpusim/program/fusion.h"

namespace tpusim {

namespace {

// The bytes an op's result takes in HBM, as its write-back lays it out: a vector op's rows
// in whole tiles of the VPU's lanes (lower_vector).
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
    out_size_.assign(ops.size(), 0);
    done_.assign(ops.size(), {});
    consumer_.assign(ops.size(), -1);
    consumers_count_.assign(ops.size(), 0);
    lowered_.assign(ops.size(), false);
    last_vpu_.assign(ops.size(), 0);
    prev_done_.assign(ops.size(), {});
    for (const auto& op : ops) {
        for (auto d : op.deps)
            if (!reads_later_arrays_only(op, d)) ++consumers_count_[d];
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
    bytes = round_up(std::max<Bytes>(bytes, 1), kHbmAlign);
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

HbmSrc CoreLowering::param(std::size_t i, std::size_t which, Bytes bytes) {
    // A parameter: weights or an input the trace does not produce. A loop body reads the
    // same one in every trip.
    const auto at = [&] {
        return HbmSrc{hbm_alloc(bytes), round_up(std::max<Bytes>(bytes, 1), kHbmAlign)};
    };
    if (!in_loop_[i]) return at();
    const auto [it, fresh] = param_addr_.try_emplace({i, which}, HbmSrc{});
    if (fresh) it->second = at();
    return it->second;
}

HbmSrc CoreLowering::operand(std::size_t i, std::size_t which, Bytes bytes) {
    const OpSpec& op = ops_[i];
    const std::ptrdiff_t dep = operand_dep(op, which);
    // A producer that did not run on this core (an op on a subset of the cores, such as a
    // collective over one replica group) left no buffer here: the operand is then an input
    // of this core's own, as a parameter is.
    if (dep >= 0 && out_size_[static_cast<std::size_t>(dep)] > 0) {
        const auto d = static_cast<std::size_t>(dep);
        // A later result array of the dep (a saved-mask dropout_grad's mask).
        const std::int64_t k = which < op.operand_array.size() ? op.operand_array[which] : 0;
        if (k > 0 && k < ops_[d].vector_outputs) return result_array(d, k);
        return {out_addr_[d], out_size_[d]};
    }
    // After the first trip, the operands past `deps` are the carried values, read in place
    // from the buffers the previous trip wrote (the operand order of unroll_loops).
    if (op.operands.empty() && trip_ > 0 && which - op.deps.size() < op.carried.size()) {
        const std::size_t c = op.carried[which - op.deps.size()];
        if (out_size_[c] > 0) return {out_addr_[c], out_size_[c]};
    }
    return param(i, which, bytes);
}

void CoreLowering::check_block(std::size_t i, const char* what, const DmaDescriptor& d,
                               HbmSrc buf) const {
    if (d.hbm_addr >= buf.addr && d.hbm_extent() <= buf.addr + buf.size) return;
    throw InputError(trace_name_, fmt::format("op \"{}\"", ops_[i].id),
                     fmt::format("its {} ({} rows of {} B, {} B apart) reaches HBM bytes "
                                 "[{:#x}, {:#x}), outside its buffer of {} B at {:#x} "
                                 "(internal error)",
                                 what, d.rows, d.row_bytes, d.hbm_stride, d.hbm_addr,
                                 d.hbm_extent(), buf.size, buf.addr));
}

void CoreLowering::wrap_block(DmaDescriptor& d, HbmSrc buf) {
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

void CoreLowering::fit_block(DmaDescriptor& d, HbmSrc buf, std::int64_t grid_bytes) {
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

void CoreLowering::past_share(const Instr& in) const {
    // The lowering keeps every block inside its buffer and every buffer inside the share, so
    // this is a lowering bug, reported where it is made rather than as refused HBM chunks.
    const DmaDescriptor& d = in.dma();
    throw InputError(trace_name_, fmt::format("op \"{}\"", ops_[in.op].id),
                     fmt::format("core {}: a DMA {} HBM bytes [{:#x}, {:#x}), past the core's "
                                 "share of {:.2f} GiB (internal error)",
                                 core_, d.to_vmem() ? "reads" : "writes", d.hbm_addr,
                                 d.hbm_extent(), static_cast<double>(hbm_size_) / kGiB));
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
    // The column sums of this op, or of the fused ops its tiles went through, are complete.
    for (std::optional<std::size_t> c = i; c; c = inline_consumer(*c))
        if (has_column_sums(ops_[*c])) write_column_sums(*c);
}

void CoreLowering::write_column_sums(std::size_t i) {
    const OpSpec& op = ops_[i];
    const auto cols = static_cast<std::int64_t>(
        round_up(static_cast<std::uint64_t>(op.cols), static_cast<std::uint64_t>(cfg_.vpu.lanes)));
    const Bytes row = static_cast<Bytes>(cols * op.out_bytes);
    Waits w = {last_vpu_[i]};
    Buffer sums = alloc(2 * row, false, w, i);
    Instr out;
    out.unit = Unit::Dma;
    out.op = static_cast<std::uint32_t>(i);
    out.waits = w;
    const Addr at = out_addr_[i] + static_cast<Bytes>(op.rows) * row;  // after dx
    out.dma() = dma_block(DmaDescriptor::Dir::VmemToHbm,
                          {at, cols, 0, 0, 2, cols, static_cast<Bytes>(op.out_bytes)}, sums.addr);
    check_block(i, "column sums", out.dma(), {out_addr_[i], out_size_[i]});
    const Bytes moved = out.dma().bytes();
    const std::uint32_t id = emit(std::move(out));
    vmem_.use(sums.addr, id);
    done_[i].push_back(id);
    count_hbm(i, moved);
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
        const Bytes bytes = output_bytes(op, cfg_.vpu.lanes);
        out_addr_[i] = hbm_alloc(bytes);
        out_size_[i] = round_up(std::max<Bytes>(bytes, 1), kHbmAlign);
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
    if (op.fused && !op.deps.empty() && consumer_[op.deps[0]] == static_cast<std::int64_t>(i)) {
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
    done_[i].push_back(id);
    count_hbm(i, moved);
}

HbmSrc CoreLowering::result_array(std::size_t i, std::int64_t k) const {
    const OpSpec& op = ops_[i];
    if (op.kind != OpKind::Vector || op.vector_outputs <= 1) return {out_addr_[i], out_size_[i]};
    // The op's result arrays lie one after another in its buffer.
    Bytes elem = 0, before = 0;
    for (std::int64_t j = 0; j < op.vector_outputs; ++j) {
        const auto b = static_cast<Bytes>(vector_output_bytes(op, j));
        if (j < k) before += b;
        elem += b;
    }
    const Bytes per_elem_byte = output_bytes(op, cfg_.vpu.lanes) / elem;
    return {out_addr_[i] + before * per_elem_byte,
            static_cast<Bytes>(vector_output_bytes(op, k)) * per_elem_byte};
}

std::int64_t CoreLowering::tile_grid_rows(std::size_t i) const {
    // The op that made the tiles: up the chain of inline fused consumers.
    std::size_t p = ops_[i].deps[0];
    while (ops_[p].fused && !ops_[p].deps.empty() &&
           consumer_[ops_[p].deps[0]] == static_cast<std::int64_t>(p))
        p = ops_[p].deps[0];
    const OpSpec& r = ops_[p];
    if (r.kind == OpKind::Matmul) return r.batch * r.m;
    if (r.kind == OpKind::Vector) return r.rows;
    return 1;
}

void CoreLowering::consume_tile(std::size_t i, TileRef in) {
    const OpSpec& op = ops_[i];
    lowered_[i] = true;
    (*infos_)[i].fused_into = ops_[op.deps[0]].id;
    const bool reduces = op.rowwise && vector_op_info(op.vop).reduces;
    const std::int64_t out_cols = reduces ? 1 : in.cols;
    const std::int64_t out_total = reduces ? 1 : in.total_cols;
    Waits waits = in.ready;
    for (std::size_t d = 1; d < op.deps.size(); ++d) append(waits, done_[op.deps[d]]);
    // Further operands (e.g. the residual of a fused add) come from HBM.
    for (std::int64_t x = 1; x < op.vector_inputs; ++x) {
        const std::int64_t elem = vector_input_bytes(op, x);
        const Bytes bytes = static_cast<Bytes>(in.rows * in.cols * elem);
        Waits w = dep_waits(op);
        Buffer b = alloc(bytes, false, w, i);
        Instr ld;
        ld.unit = Unit::Dma;
        ld.op = static_cast<std::uint32_t>(i);
        ld.waits = w;
        // The tile of the operand at the tile's place: the operand is the whole array the
        // producer's tiles cover (one buffer, whichever tile reads it).
        const HbmSrc src = operand(i, static_cast<std::size_t>(x),
                                   static_cast<Bytes>(tile_grid_rows(i) * in.total_cols * elem));
        ld.dma() = dma_block(
            DmaDescriptor::Dir::HbmToVmem,
            {src.addr, in.total_cols, in.row0, in.col0, in.rows, in.cols, static_cast<Bytes>(elem)},
            b.addr);
        // A smaller array than the tiles' (not a wider dtype, nor the lanes' padding of the
        // grid's rows): the tile's share.
        const std::int64_t grid_rows = tile_grid_rows(i), grid = grid_rows * in.total_cols;
        if (grid > op.rows * op.cols + grid_rows * std::min(cfg_.vpu.lanes - 1, in.total_cols - 1))
            fit_block(ld.dma(), src, grid * elem);
        wrap_block(ld.dma(), src);
        const Bytes moved = ld.dma().bytes();
        const std::uint32_t id = emit(std::move(ld));
        vmem_.use(b.addr, id);
        waits.push_back(id);
        count_hbm(i, moved);
    }
    Bytes all_bytes = 0;  // every result array's tile
    for (std::int64_t k = 0; k < op.vector_outputs; ++k)
        all_bytes += static_cast<Bytes>(in.rows * out_cols * vector_output_bytes(op, k));
    Buffer ob = alloc(all_bytes, false, waits, i);
    Instr v;
    v.unit = Unit::Vpu;
    v.op = static_cast<std::uint32_t>(i);
    v.waits = waits;
    v.vec() = {op.vop,
               op.saved_mask,
               in.rows,
               in.cols,
               vpu_element_bytes(in.elem),
               vpu_element_bytes(op.out_bytes)};
    const std::uint32_t id = emit(std::move(v));
    last_vpu_[i] = id;
    vmem_.use(in.vmem, id);
    vmem_.use(ob.addr, id);
    const std::int64_t first_elem = vector_output_bytes(op, 0);
    TileRef out{ob.addr,    in.row0, out_cols == 1 ? 0 : in.col0, in.rows, out_cols, out_total,
                first_elem, {id}};
    // The first result goes on (to a fused consumer or HBM); the others to HBM.
    Addr at = ob.addr + static_cast<Bytes>(in.rows * out_cols * first_elem);
    for (std::int64_t k = 1; k < op.vector_outputs; ++k) {
        TileRef more = out;
        more.vmem = at;
        more.elem = vector_output_bytes(op, k);
        more.output = k;
        write_back(i, more);
        at += static_cast<Bytes>(in.rows * out_cols * more.elem);
    }
    sink(i, std::move(out));
}

}  // namespace tpusim
