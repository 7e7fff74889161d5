// Vector lowering: chunks of whole rows through DMA in, a vector loop and DMA out; XLA's
// statistics kernels of a row normalisation; a fused vector op on its producer's tiles; and
// the column sums of a norm's gradient.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "op_lowerings.h"
#include "tpusim/common/error.h"

namespace tpusim {

namespace {
std::int64_t elem_or(const std::vector<std::int64_t>& v, std::int64_t j, std::int64_t dflt) {
    const auto k = static_cast<std::size_t>(j);
    return k < v.size() && v[k] > 0 ? v[k] : dflt;
}
}  // namespace

std::int64_t vector_input_bytes(const OpSpec& op, std::int64_t j) {
    return elem_or(op.input_elem, j, op.in_bytes);
}

std::int64_t vector_output_bytes(const OpSpec& op, std::int64_t k) {
    return elem_or(op.output_elem, k, op.out_bytes);
}

int xla_statistics_passes(VectorOp vop) { return vector_op_lowering(vop).statistics_passes; }

std::int64_t VectorLowering::rows_per_chunk(const OpSpec& op, Bytes row_bytes,
                                            std::int64_t out_bytes) const {
    // About lowering.vector_chunk_bytes of rows, in whole VPU row groups: the VPU works on
    // vregs of vpu.sublanes rows (two f32 vregs per packed 16-row bf16 tile,
    // vector_loop_iterations), so a chunk of fewer rows would pay a whole group's VPU work
    // for part of it. A group is taken whole when its double buffer fits VMEM.
    const std::int64_t group =
        c_.cfg().vpu.sublanes *
        (vpu_element_bytes(op.in_bytes) == 2 || vpu_element_bytes(out_bytes) == 2 ? 2 : 1);
    auto rows = static_cast<std::int64_t>(
        std::max<Bytes>(1, static_cast<Bytes>(c_.cfg().lowering.vector_chunk_bytes) / row_bytes));
    if (rows >= group) {
        rows -= rows % group;
    } else if (static_cast<Bytes>(2 * group) * row_bytes <= c_.vmem().capacity()) {
        rows = group;
    }
    return std::min(rows, op.rows);
}

void VectorLowering::lower(std::size_t i) {
    const OpSpec& op = c_.op(i);
    const bool reduces = op.rowwise && vector_op_info(op.vop).reduces;
    // XLA's TPU layout of a row-major rows x cols array tiles its minor dimension by the
    // vector lanes ({1,0:T(8,128)} for f32, (16,128) packed for bf16), so in HBM and VMEM a
    // row occupies whole 128-lane tiles: a 4096 x 32 f32 array moves as 4096 x 128. The VPU
    // body already works on whole tiles (vector_loop_iterations). Not for reduce_sum /
    // reduce_max, whose `cols` is also used for a reduction along the major dimension (rows
    // and cols swapped) and for pooling windows (docs/trace-format.md), i.e. not
    // necessarily the array's minor dimension. docs/program.md.
    const std::int64_t cols =
        reduces
            ? op.cols
            : static_cast<std::int64_t>(round_up(static_cast<std::uint64_t>(op.cols),
                                                 static_cast<std::uint64_t>(c_.cfg().vpu.lanes)));
    const std::int64_t out_cols = reduces ? 1 : cols;
    // Row bytes of each input stream and result array (a saved dropout mask is narrower).
    std::vector<Bytes> rows_in, rows_out;
    for (std::int64_t x = 0; x < op.vector_inputs; ++x)
        rows_in.push_back(static_cast<Bytes>(cols * vector_input_bytes(op, x)));
    for (std::int64_t k = 0; k < op.vector_outputs; ++k)
        rows_out.push_back(static_cast<Bytes>(out_cols * vector_output_bytes(op, k)));
    Bytes row_all = 0;
    for (Bytes b : rows_in) row_all += b;
    for (Bytes b : rows_out) row_all += b;
    // XLA emits a row normalisation written with jnp (LayerNorm: mean, variance of x - mean,
    // then (x - mean) * rsqrt(var + eps); softmax: max, sum of exp(x - max), then the
    // quotient) as separate fusions: each row statistic is its own kernel, a full pass that
    // reads the input from HBM and starts when the previous kernel has finished, and the
    // elementwise fusion reads the input once more (docs/program.md). The statistics kernels
    // run first (statistics_pass); the VPU work of the statistics is charged in the
    // op's own instruction body, the kernels' bodies are the row reductions.
    const int stat_passes = xla_statistics_passes(op.vop);
    if (row_all * 2 > c_.vmem().capacity()) {
        throw InputError(c_.trace_name(), fmt::format("op \"{}\"", op.id),
                         fmt::format("one row of {} columns needs {:.2f} MiB of VMEM (double "
                                     "buffered); the core has {} MiB",
                                     op.cols, 2.0 * static_cast<double>(row_all) / kMiB,
                                     c_.cfg().vmem.capacity_mib));
    }
    const std::int64_t chunk_rows = rows_per_chunk(op, row_all, op.out_bytes);
    const std::int64_t chunks = static_cast<std::int64_t>(ceil_div(op.rows, chunk_rows));
    Waits deps = c_.dep_waits(op);
    const auto u32 = static_cast<std::uint32_t>(i);
    // Inputs on chip (vmem_operands: XLA's S(1), or the tiles a multi-output fusion's other
    // op already brought in, docs/trace-format.md) move no bytes; the rest stream from HBM.
    std::vector<std::pair<HbmSrc, Bytes>> inputs;  // the operand, its row bytes
    for (std::int64_t x = 0; x < op.vector_inputs; ++x) {
        if (op.vmem_inputs & (1u << x)) continue;
        const Bytes row = rows_in[static_cast<std::size_t>(x)];
        inputs.emplace_back(
            c_.operand(i, static_cast<std::size_t>(x), static_cast<Bytes>(op.rows) * row), row);
    }
    const VectorOpLowering& how = vector_op_lowering(op.vop);
    const bool own_statistics = stat_passes > 0 && !(op.vmem_inputs & 1u);
    // softmax: e = exp(x - max), written by the last statistics kernel and read by the final
    // one in place of x (VectorOpLowering::stores_intermediate), in the wider of x's and the
    // result's types (the type XLA computes e in).
    std::optional<HbmSrc> kept;
    const Bytes row_kept =
        static_cast<Bytes>(cols * std::max(vector_input_bytes(op, 0), vector_output_bytes(op, 0)));
    if (own_statistics && how.stores_intermediate)
        kept = intermediate(i, static_cast<Bytes>(op.rows) * row_kept);
    for (int p = 0; own_statistics && p < stat_passes; ++p) {
        // softmax: the max, then the sum; layernorm: the mean, then the variance.
        const VectorOp body =
            how.statistics_max_first && p == 0 ? VectorOp::ReduceMax : VectorOp::ReduceSum;
        const bool last = p + 1 == stat_passes;
        deps = statistics_pass(i, body, inputs.front().first, cols, deps,
                               last && kept ? &*kept : nullptr, row_kept);
    }
    if (kept) inputs.front() = {*kept, row_kept};

    const auto make = [&](std::size_t chunk) {
        const std::int64_t r0 = static_cast<std::int64_t>(chunk) * chunk_rows;
        const std::int64_t rows = std::min(chunk_rows, op.rows - r0);
        PipelineStep st;
        st.load = [=, &deps, &inputs](PipelineStep& s) {
            c_.drop_covered(deps);
            for (const auto& [src, row] : inputs) c_.load_rows(i, src, row, r0, rows, deps, s);
        };
        st.compute = [=, &op, &deps, &rows_out](PipelineStep& s) {
            if (s.loaded.empty()) c_.drop_covered(deps);
            Waits w = s.loaded.empty() ? deps : s.loaded;
            Bytes out_bytes = 0;
            for (Bytes b : rows_out) out_bytes += static_cast<Bytes>(rows) * b;
            LoweringContext::Buffer out = c_.alloc(out_bytes, false, w, i);
            Instr v;
            v.unit = Unit::Vpu;
            v.op = u32;
            v.waits = w;
            v.vec() = {op.vop,
                       op.saved_mask,
                       rows,
                       op.cols,
                       vpu_element_bytes(op.in_bytes),
                       vpu_element_bytes(op.out_bytes)};
            const std::uint32_t id = c_.emit(std::move(v));
            c_.state(i).last_vpu = id;
            for (Addr a : s.buffers) c_.vmem().use(a, id);
            c_.vmem().use(out.addr, id);
            s.computed = {id};
            s.acc = out.addr;
        };
        st.finish = [=, &op, &rows_out](PipelineStep& s) {
            // Every result array is written (adam: p, m, v); the first is the one a fused
            // consumer takes on chip, the others go to HBM, each its own array in the buffer.
            c_.sink(i, TileRef{s.acc, r0, 0, rows, out_cols, out_cols, vector_output_bytes(op, 0),
                               s.computed});
            Addr at = s.acc + static_cast<Bytes>(rows) * rows_out.front();
            for (std::int64_t k = 1; k < op.vector_outputs; ++k) {
                c_.write_back(i, TileRef{at, r0, 0, rows, out_cols, out_cols,
                                         vector_output_bytes(op, k), s.computed, k});
                at += static_cast<Bytes>(rows) * rows_out[static_cast<std::size_t>(k)];
            }
        };
        return st;
    };
    c_.run_pipeline(static_cast<std::size_t>(chunks), make);
}

HbmSrc VectorLowering::intermediate(std::size_t i, Bytes bytes) {
    // One buffer per op: a loop body's op writes the same one in every trip.
    auto [it, fresh] = intermediates_.try_emplace(i, HbmSrc{});
    if (fresh) it->second = {c_.hbm_alloc(bytes), bytes};
    return it->second;
}

Waits VectorLowering::statistics_pass(std::size_t i, VectorOp body, HbmSrc src, std::int64_t cols,
                                      Waits after, const HbmSrc* keep, Bytes keep_row) {
    const OpSpec& op = c_.op(i);
    const Bytes row_in = static_cast<Bytes>(cols * vector_input_bytes(op, 0));
    const Bytes row_kept = keep ? keep_row : 0;  // the stored intermediate's rows
    const std::int64_t chunk_rows = rows_per_chunk(op, row_in + row_kept, 4);
    const std::int64_t chunks = static_cast<std::int64_t>(ceil_div(op.rows, chunk_rows));
    const auto u32 = static_cast<std::uint32_t>(i);
    std::uint32_t last = 0;
    Waits stored;
    const auto make = [&](std::size_t chunk) {
        const std::int64_t r0 = static_cast<std::int64_t>(chunk) * chunk_rows;
        const std::int64_t rows = std::min(chunk_rows, op.rows - r0);
        PipelineStep st;
        st.load = [=, &after](PipelineStep& s) {
            c_.drop_covered(after);
            c_.load_rows(i, src, row_in, r0, rows, after, s);
        };
        // One f32 statistic per row stays for the next kernel (its 4 B per row to and from
        // HBM are left out).
        st.compute = [=, &op, &last](PipelineStep& s) {
            Waits w = s.loaded;
            if (row_kept > 0)
                s.acc = c_.alloc(static_cast<Bytes>(rows) * row_kept, false, w, i).addr;
            Instr v;
            v.unit = Unit::Vpu;
            v.op = u32;
            v.waits = w;
            v.vec() = {body, false, rows, op.cols, vpu_element_bytes(op.in_bytes), 4};
            last = c_.emit(std::move(v));
            for (Addr a : s.buffers) c_.vmem().use(a, last);
            if (row_kept > 0) c_.vmem().use(s.acc, last);
            s.computed = {last};
        };
        if (row_kept > 0) {
            // The chunk's rows of the intermediate back to HBM.
            st.finish = [=, &stored](PipelineStep& s) {
                Instr out;
                out.unit = Unit::Dma;
                out.op = u32;
                out.waits = s.computed;
                const auto row = static_cast<std::int64_t>(row_kept);
                out.dma() = dma_block(DmaDescriptor::Dir::VmemToHbm,
                                      {keep->addr, row, r0, 0, rows, row, 1}, s.acc);
                c_.check_block(i, "intermediate", out.dma(), *keep);
                const Bytes moved = out.dma().bytes();
                const std::uint32_t id = c_.emit(std::move(out));
                c_.vmem().use(s.acc, id);
                stored.push_back(id);
                c_.count_hbm(i, moved);
            };
        }
        return st;
    };
    c_.run_pipeline(static_cast<std::size_t>(chunks), make);
    // The next kernel starts when this one is done: its last VPU work, and its stores.
    if (row_kept == 0) return {last};
    return stored;
}

void VectorLowering::consume_tile(std::size_t i, TileRef in) {
    const OpSpec& op = c_.op(i);
    c_.state(i).lowered = true;
    c_.infos()[i].fused_into = c_.op(op.deps[0]).id;
    const bool reduces = op.rowwise && vector_op_info(op.vop).reduces;
    const std::int64_t out_cols = reduces ? 1 : in.cols;
    const std::int64_t out_total = reduces ? 1 : in.total_cols;
    Waits waits = in.ready;
    for (std::size_t d = 1; d < op.deps.size(); ++d)
        c_.append_uncovered(waits, c_.state(op.deps[d]).done);
    // Further operands (e.g. the residual of a fused add) come from HBM.
    for (std::int64_t x = 1; x < op.vector_inputs; ++x) {
        const std::int64_t elem = vector_input_bytes(op, x);
        const Bytes bytes = static_cast<Bytes>(in.rows * in.cols * elem);
        Waits w = c_.uncovered(c_.dep_waits(op));
        LoweringContext::Buffer b = c_.alloc(bytes, false, w, i);
        Instr ld;
        ld.unit = Unit::Dma;
        ld.op = static_cast<std::uint32_t>(i);
        ld.waits = w;
        // The tile of the operand at the tile's place: the operand is the whole array the
        // producer's tiles cover (one buffer, whichever tile reads it).
        const HbmSrc src =
            c_.operand(i, static_cast<std::size_t>(x),
                       static_cast<Bytes>(c_.tile_grid_rows(i) * in.total_cols * elem));
        ld.dma() = dma_block(
            DmaDescriptor::Dir::HbmToVmem,
            {src.addr, in.total_cols, in.row0, in.col0, in.rows, in.cols, static_cast<Bytes>(elem)},
            b.addr);
        // A smaller array than the tiles' (not a wider dtype, nor the lanes' padding of the
        // grid's rows): the tile's share.
        const std::int64_t grid_rows = c_.tile_grid_rows(i), grid = grid_rows * in.total_cols;
        if (grid >
            op.rows * op.cols + grid_rows * std::min(c_.cfg().vpu.lanes - 1, in.total_cols - 1))
            c_.fit_block(ld.dma(), src, grid * elem);
        c_.wrap_block(ld.dma(), src);
        const Bytes moved = ld.dma().bytes();
        const std::uint32_t id = c_.emit(std::move(ld));
        c_.vmem().use(b.addr, id);
        waits.push_back(id);
        c_.count_hbm(i, moved);
    }
    Bytes all_bytes = 0;  // every result array's tile
    for (std::int64_t k = 0; k < op.vector_outputs; ++k)
        all_bytes += static_cast<Bytes>(in.rows * out_cols * vector_output_bytes(op, k));
    LoweringContext::Buffer ob = c_.alloc(all_bytes, false, waits, i);
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
    const std::uint32_t id = c_.emit(std::move(v));
    c_.state(i).last_vpu = id;
    c_.vmem().use(in.vmem, id);
    c_.vmem().use(ob.addr, id);
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
        c_.write_back(i, more);
        at += static_cast<Bytes>(in.rows * out_cols * more.elem);
    }
    c_.sink(i, std::move(out));
}

void VectorLowering::write_column_sums(std::size_t i) {
    const OpSpec& op = c_.op(i);
    const auto cols = static_cast<std::int64_t>(round_up(
        static_cast<std::uint64_t>(op.cols), static_cast<std::uint64_t>(c_.cfg().vpu.lanes)));
    const Bytes row = static_cast<Bytes>(cols * op.out_bytes);
    Waits w = {c_.state(i).last_vpu};
    LoweringContext::Buffer sums = c_.alloc(2 * row, false, w, i);
    Instr out;
    out.unit = Unit::Dma;
    out.op = static_cast<std::uint32_t>(i);
    out.waits = w;
    const Addr at = c_.state(i).out_addr + static_cast<Bytes>(op.rows) * row;  // after dx
    out.dma() = dma_block(DmaDescriptor::Dir::VmemToHbm,
                          {at, cols, 0, 0, 2, cols, static_cast<Bytes>(op.out_bytes)}, sums.addr);
    c_.check_block(i, "column sums", out.dma(), {c_.state(i).out_addr, c_.state(i).out_size});
    const Bytes moved = out.dma().bytes();
    const std::uint32_t id = c_.emit(std::move(out));
    c_.vmem().use(sums.addr, id);
    c_.state(i).done.push_back(id);
    c_.count_hbm(i, moved);
}

}  // namespace tpusim
