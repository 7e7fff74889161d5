// Vector, copy, collective and host-transfer lowering.
#include <fmt/format.h>

#include <algorithm>

#include "core_lowering.h"
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

std::ptrdiff_t replica_group_of(const OpSpec& op, std::int64_t core) {
    std::ptrdiff_t found = -1;
    for (std::size_t g = 0; g < op.replica_groups.size(); ++g) {
        const auto& group = op.replica_groups[g];
        if (std::find(group.begin(), group.end(), core) != group.end())
            found = static_cast<std::ptrdiff_t>(g);
    }
    return found;
}

int xla_statistics_passes(VectorOp vop) { return vector_op_lowering(vop).statistics_passes; }

std::int64_t CoreLowering::vector_chunk_rows(const OpSpec& op, Bytes row_bytes,
                                             std::int64_t out_bytes) const {
    // About lowering.vector_chunk_bytes of rows, in whole VPU row groups: the VPU works on
    // vregs of vpu.sublanes rows (two f32 vregs per packed 16-row bf16 tile,
    // vector_loop_iterations), so a chunk of fewer rows would pay a whole group's VPU work
    // for part of it. A group is taken whole when its double buffer fits VMEM.
    const std::int64_t group =
        cfg_.vpu.sublanes *
        (vpu_element_bytes(op.in_bytes) == 2 || vpu_element_bytes(out_bytes) == 2 ? 2 : 1);
    auto rows = static_cast<std::int64_t>(
        std::max<Bytes>(1, static_cast<Bytes>(cfg_.lowering.vector_chunk_bytes) / row_bytes));
    if (rows >= group) {
        rows -= rows % group;
    } else if (static_cast<Bytes>(2 * group) * row_bytes <= vmem_.capacity()) {
        rows = group;
    }
    return std::min(rows, op.rows);
}

void CoreLowering::lower_vector(std::size_t i) {
    const OpSpec& op = ops_[i];
    const bool reduces = op.rowwise && vector_op_info(op.vop).reduces;
    // XLA's TPU layout of a row-major rows x cols array tiles its minor dimension by the
    // vector lanes ({1,0:T(8,128)} for f32, (16,128) packed for bf16), so in HBM and VMEM a
    // row occupies whole 128-lane tiles: a 4096 x 32 f32 array moves as 4096 x 128. The VPU
    // body already works on whole tiles (vector_loop_iterations). Not for reduce_sum /
    // reduce_max, whose `cols` is also used for a reduction along the major dimension (rows
    // and cols swapped) and for pooling windows (docs/trace-format.md), i.e. not
    // necessarily the array's minor dimension. docs/program.md.
    const std::int64_t cols =
        reduces ? op.cols
                : static_cast<std::int64_t>(round_up(static_cast<std::uint64_t>(op.cols),
                                                     static_cast<std::uint64_t>(cfg_.vpu.lanes)));
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
    // run first (lower_statistics_pass); the VPU work of the statistics is charged in the
    // op's own instruction body, the kernels' bodies are the row reductions.
    const int stat_passes = xla_statistics_passes(op.vop);
    if (row_all * 2 > vmem_.capacity()) {
        throw InputError(trace_name_, fmt::format("op \"{}\"", op.id),
                         fmt::format("one row of {} columns needs {:.2f} MiB of VMEM (double "
                                     "buffered); the core has {} MiB",
                                     op.cols, 2.0 * static_cast<double>(row_all) / kMiB,
                                     cfg_.vmem.capacity_mib));
    }
    const std::int64_t chunk_rows = vector_chunk_rows(op, row_all, op.out_bytes);
    const std::int64_t chunks = static_cast<std::int64_t>(ceil_div(op.rows, chunk_rows));
    Waits deps = dep_waits(op);
    const auto u32 = static_cast<std::uint32_t>(i);
    // Inputs on chip (vmem_operands: XLA's S(1), or the tiles a multi-output fusion's other
    // op already brought in, docs/trace-format.md) move no bytes; the rest stream from HBM.
    std::vector<std::pair<HbmSrc, Bytes>> inputs;  // the operand, its row bytes
    for (std::int64_t x = 0; x < op.vector_inputs; ++x) {
        if (op.vmem_inputs & (1u << x)) continue;
        const Bytes row = rows_in[static_cast<std::size_t>(x)];
        inputs.emplace_back(
            operand(i, static_cast<std::size_t>(x), static_cast<Bytes>(op.rows) * row), row);
    }
    for (int p = 0; p < stat_passes && !(op.vmem_inputs & 1u); ++p) {
        // softmax: the max, then the sum; layernorm: the mean, then the variance.
        const VectorOp body = vector_op_lowering(op.vop).statistics_max_first && p == 0
                                  ? VectorOp::ReduceMax
                                  : VectorOp::ReduceSum;
        deps = {lower_statistics_pass(i, body, inputs.front().first, cols, deps)};
    }

    const auto make = [&](std::size_t chunk) {
        const std::int64_t r0 = static_cast<std::int64_t>(chunk) * chunk_rows;
        const std::int64_t rows = std::min(chunk_rows, op.rows - r0);
        Step st;
        st.load = [=](Step& s) {
            for (const auto& [src, row] : inputs) load_rows(i, src, row, r0, rows, deps, s);
        };
        st.compute = [=](Step& s) {
            Waits w = s.loaded.empty() ? deps : s.loaded;
            Bytes out_bytes = 0;
            for (Bytes b : rows_out) out_bytes += static_cast<Bytes>(rows) * b;
            Buffer out = alloc(out_bytes, false, w, i);
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
            const std::uint32_t id = emit(std::move(v));
            last_vpu_[i] = id;
            for (Addr a : s.buffers) vmem_.use(a, id);
            vmem_.use(out.addr, id);
            s.computed = {id};
            s.acc = out.addr;
        };
        st.finish = [=](Step& s) {
            // Every result array is written (adam: p, m, v); the first is the one a fused
            // consumer takes on chip, the others go to HBM, each its own array in the buffer.
            sink(i, TileRef{s.acc, r0, 0, rows, out_cols, out_cols, vector_output_bytes(op, 0),
                            s.computed});
            Addr at = s.acc + static_cast<Bytes>(rows) * rows_out.front();
            for (std::int64_t k = 1; k < op.vector_outputs; ++k) {
                write_back(i, TileRef{at, r0, 0, rows, out_cols, out_cols,
                                      vector_output_bytes(op, k), s.computed, k});
                at += static_cast<Bytes>(rows) * rows_out[static_cast<std::size_t>(k)];
            }
        };
        return st;
    };
    run_pipeline(static_cast<std::size_t>(chunks), make);
}

void CoreLowering::load_rows(std::size_t i, HbmSrc src, Bytes row_bytes, std::int64_t r0,
                             std::int64_t rows, const Waits& after, Step& s, Bytes at) {
    const Bytes bytes = static_cast<Bytes>(rows) * row_bytes;
    Waits w = after;
    Buffer buf = alloc(bytes, false, w, i);
    Instr ld;
    ld.unit = Unit::Dma;
    ld.op = static_cast<std::uint32_t>(i);
    ld.waits = w;
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

std::uint32_t CoreLowering::lower_statistics_pass(std::size_t i, VectorOp body, HbmSrc src,
                                                  std::int64_t cols, const Waits& after) {
    const OpSpec& op = ops_[i];
    const Bytes row_in = static_cast<Bytes>(cols * vector_input_bytes(op, 0));
    const std::int64_t chunk_rows = vector_chunk_rows(op, row_in, 4);
    const std::int64_t chunks = static_cast<std::int64_t>(ceil_div(op.rows, chunk_rows));
    const auto u32 = static_cast<std::uint32_t>(i);
    std::uint32_t last = 0;
    const auto make = [&](std::size_t chunk) {
        const std::int64_t r0 = static_cast<std::int64_t>(chunk) * chunk_rows;
        const std::int64_t rows = std::min(chunk_rows, op.rows - r0);
        Step st;
        st.load = [=](Step& s) { load_rows(i, src, row_in, r0, rows, after, s); };
        // One f32 statistic per row stays for the next kernel (its 4 B per row to and from
        // HBM are left out).
        st.compute = [=, &last](Step& s) {
            Instr v;
            v.unit = Unit::Vpu;
            v.op = u32;
            v.waits = s.loaded;
            v.vec() = {body, false, rows, op.cols, vpu_element_bytes(op.in_bytes), 4};
            last = emit(std::move(v));
            for (Addr a : s.buffers) vmem_.use(a, last);
            s.computed = {last};
        };
        return st;
    };
    run_pipeline(static_cast<std::size_t>(chunks), make);
    return last;
}

void CoreLowering::lower_copy(std::size_t i) {
    const OpSpec& op = ops_[i];
    const Bytes chunk = 1 * kMiB;
    const std::int64_t chunks = static_cast<std::int64_t>(ceil_div(op.bytes, chunk));
    const HbmSrc src = operand(i, 0, op.bytes);
    const Waits deps = dep_waits(op);
    const auto make = [&](std::size_t c) {
        const Bytes off = static_cast<Bytes>(c) * chunk;
        const Bytes bytes = std::min(chunk, op.bytes - off);
        Step st;
        st.load = [=](Step& s) {  // one contiguous row of the chunk's bytes
            load_rows(i, src, bytes, 0, 1, deps, s, off);
            s.acc = s.buffers.back();
        };
        st.compute = [](Step& s) { s.computed = s.loaded; };
        st.finish = [=](Step& s) {
            sink(i, TileRef{s.acc, 0, static_cast<std::int64_t>(off), 1,
                            static_cast<std::int64_t>(bytes), static_cast<std::int64_t>(op.bytes),
                            1, s.computed});
        };
        return st;
    };
    run_pipeline(static_cast<std::size_t>(chunks), make);
}

void CoreLowering::lower_single(std::size_t i) {
    const OpSpec& op = ops_[i];
    Instr in;
    in.op = static_cast<std::uint32_t>(i);
    in.waits = dep_waits(op);
    if (op.kind == OpKind::Infeed || op.kind == OpKind::Outfeed) {
        in.unit = Unit::Host;
        in.host() = {op.kind == OpKind::Infeed, op.bytes};
    } else {
        in.unit = Unit::Ici;
        CollectiveInstr coll;
        if (op.kind == OpKind::Send || op.kind == OpKind::Recv) {
            coll.role = op.kind == OpKind::Send ? CollectiveInstr::Role::kSend
                                                : CollectiveInstr::Role::kRecv;
            coll.kind = CollectiveKind::kSendRecv;
        } else {
            coll.kind = collective_kind(op.kind);
        }
        coll.bytes = op.bytes;
        // This core's replica group (the last that holds it, should a malformed list repeat
        // the core; program_signature agrees).
        if (const std::ptrdiff_t g = replica_group_of(op, core_); g >= 0)
            coll.group = op.replica_groups[static_cast<std::size_t>(g)];
        if (coll.group.empty()) {
            coll.group = op.cores;
            if (coll.group.empty()) {
                for (std::int64_t c = 0; c < opts_.cores; ++c) coll.group.push_back(c);
            }
        }
        coll.peer = op.peer;
        coll.pairs = op.pairs;
        coll.element_bytes = op.in_bytes;
        coll.instance = i;
        in.coll = std::make_shared<const CollectiveInstr>(std::move(coll));
    }
    done_[i].push_back(emit(std::move(in)));
}

}  // namespace tpusim
