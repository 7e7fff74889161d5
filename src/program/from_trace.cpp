#include "tpusim/program/from_trace.h"

#include <algorithm>
#include <optional>

#include "tpusim/program/hbm_footprint.h"
#include "tpusim/program/remat.h"
#include "tpusim/program/vector_lowering.h"

namespace tpusim {

namespace {

// A vector op given as `elements` (rows = 1) is laid out as full vregs: rows of
// lanes x sublanes... the VPU sees the same elements either way; chunking needs rows.
void shape_elementwise(OpSpec& s, std::int64_t lane_width) {
    if (s.rows == 1 && s.cols > lane_width && !s.rowwise) {
        s.rows = (s.cols + lane_width - 1) / lane_width;
        s.cols = lane_width;
    }
}

}  // namespace

std::vector<std::size_t> issue_order(const Trace& trace) {
    const std::size_t n = trace.ops.size();
    std::vector<bool> deferred(n, false), emitted(n, false);
    std::vector<std::size_t> order;
    order.reserve(n);
    // Emits deferred op d after its deferred ancestors (all earlier in the trace, and trace
    // order is a topological order, so emitting them sorted by index is valid).
    std::vector<std::size_t> stack, need;
    auto emit_with_ancestors = [&](std::size_t d) {
        stack.assign(1, d);
        need.clear();
        emitted[d] = true;  // marks "collected"; the op is emitted below
        while (!stack.empty()) {
            const std::size_t x = stack.back();
            stack.pop_back();
            need.push_back(x);
            for (std::size_t p : trace.ops[x].deps) {
                if (deferred[p] && !emitted[p]) {
                    emitted[p] = true;
                    stack.push_back(p);
                }
            }
        }
        std::sort(need.begin(), need.end());
        order.insert(order.end(), need.begin(), need.end());
    };
    // A loop's body stays one run of ops (each trip is issued whole): the order is found
    // within each segment, the ops between loops and each body alone.
    std::vector<std::size_t> cuts{0};
    for (const auto& l : trace.loops) {
        cuts.push_back(l.first);
        cuts.push_back(l.first + l.count);
    }
    cuts.push_back(n);
    for (std::size_t seg = 0; seg + 1 < cuts.size(); ++seg) {
        const std::size_t b = cuts[seg], e = cuts[seg + 1];
        for (std::size_t i = b; i < e; ++i) {
            const TraceOp& op = trace.ops[i];
            bool waits = false;
            for (std::size_t p : op.deps)
                waits = waits || deferred[p] || is_collective(trace.ops[p].kind);
            // Collectives themselves start as early as they can. A fused op whose producer is
            // deferred is deferred with it (emitted in trace order, so still right after it).
            if (waits && !is_collective(op.kind)) {
                deferred[i] = true;
                continue;
            }
            for (std::size_t p : op.deps)
                if (deferred[p] && !emitted[p]) emit_with_ancestors(p);
            emitted[i] = true;
            order.push_back(i);
        }
        for (std::size_t i = b; i < e; ++i)
            if (!emitted[i]) emit_with_ancestors(i);
    }
    return order;
}

std::vector<OpSpec> op_specs(const Trace& trace) {
    const std::vector<std::size_t> order = issue_order(trace);
    std::vector<std::size_t> position(order.size());
    for (std::size_t k = 0; k < order.size(); ++k) position[order[k]] = k;
    std::vector<OpSpec> out;
    out.reserve(trace.ops.size());
    for (const std::size_t index : order) {
        const TraceOp& op = trace.ops[index];
        OpSpec s;
        s.id = op.id;
        s.kind = op.kind;
        // Sizes as stored in HBM: 8-bit arrays move one byte per element (XLA's TPU layout
        // packs four to a 32-bit word); the VPU works on them widened (vpu_element_bytes).
        s.in_bytes = dtype_bytes(op.dtype);
        s.out_bytes = dtype_bytes(op.out_dtype);
        s.lhs_bytes = dtype_bytes(op.lhs_type());
        s.mxu_passes = precision_passes(op);
        s.rhs_bytes = dtype_bytes(op.rhs_type());
        for (std::size_t d : op.deps) s.deps.push_back(position[d]);
        for (std::size_t d : op.carried) s.carried.push_back(position[d]);
        s.operands = op.operands;
        s.fused = op.fused;
        for (int v : op.vmem_operands) {
            if (op.kind == OpKind::Vector)
                s.vmem_inputs |= 1u << v;
            else
                (v == 0 ? s.lhs_in_vmem : s.rhs_in_vmem) = true;
        }
        s.result_in_vmem = op.result_in_vmem;
        for (int c : op.cores) s.cores.push_back(c);
        switch (op.kind) {
            case OpKind::Matmul:
            case OpKind::Conv2d: {
                const MatmulShape mm =
                    op.kind == OpKind::Matmul ? op.matmul : conv_as_matmul(op.conv);
                s.kind = OpKind::Matmul;
                s.batch = mm.batch;
                s.m = mm.m;
                s.k = mm.k;
                s.n = mm.n;
                if (op.kind == OpKind::Conv2d) {
                    const Conv2dShape& c = op.conv;
                    s.conv = {c.h, c.w, c.c_in, c.kh, c.kw, c.stride_h, c.out_h(), c.out_w()};
                }
                break;
            }
            case OpKind::Vector: {
                const VectorOpInfo& info = vector_op_info(op.vector.op);
                s.vop = op.vector.op;
                // The saved-mask forms have bodies of their own. The mask is a pred array:
                // dropout's second result, dropout_grad's second operand, read from its
                // dropout's second result array.
                if (op.vector.saved_mask) {
                    s.saved_mask = true;
                    if (op.vector.op == VectorOp::Dropout) s.output_elem = {0, 1};
                    if (op.vector.op == VectorOp::DropoutGrad) {
                        s.input_elem = {0, 1};
                        s.operand_array = {0, 1};
                    }
                }
                s.rows = op.vector.rows;
                s.cols = op.vector.cols;
                s.vector_inputs = vector_inputs(op.vector);
                s.vector_outputs = info.reduces ? 1 : vector_outputs(op.vector);
                // Whole rows per chunk only where the VPU reduces along the row (softmax,
                // layernorm, reductions); bias_add and batchnorm chunk freely.
                s.rowwise = is_row_vector_op(op.vector.op);
                s.vector_flops = static_cast<double>(op_flops(op));
                shape_elementwise(s, 1024);
                break;
            }
            default:
                s.bytes = static_cast<Bytes>(op.bytes);
                for (const auto& g : op.replica_groups)
                    s.replica_groups.emplace_back(g.begin(), g.end());
                s.peer = op.peer;
                for (const auto& [a, b] : op.source_target_pairs) s.pairs.emplace_back(a, b);
                break;
        }
        out.push_back(std::move(s));
    }
    return out;
}

Program lower_trace(const Trace& trace, const TpuConfig& cfg, std::int64_t lowered_trips) {
    // Before lowering: a program that cannot fit fails as XLA's compiler fails it, and the
    // lowering's memory grows with the program's instructions, not with tensor sizes.
    // A program over the limit is first rematerialised as XLA's compiler would.
    RematStats remat;
    const std::optional<Trace> fitted = fit_hbm(trace, cfg, remat);
    const Trace& t = fitted ? *fitted : trace;
    LoweringOptions opts;
    opts.cores = t.cores;
    // issue_order keeps every body where it is, so a loop's ops keep their indices.
    for (const auto& l : t.loops) opts.loops.push_back({l.first, l.count, l.trips, lowered_trips});
    Program p = lower_ops(op_specs(t), cfg, opts, t.path.empty() ? t.name : t.path);
    p.rematerialized_ops = remat.ops;
    if (remat.ops > 0)
        p.warnings.insert(p.warnings.begin(), remat_summary(remat, hbm_bytes_per_core(cfg)));
    return p;
}

}  // namespace tpusim
