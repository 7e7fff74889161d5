#include "tpusim/program/from_trace.h"

#include <algorithm>

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

std::vector<OpSpec> op_specs(const Trace& trace) {
    std::vector<OpSpec> out;
    out.reserve(trace.ops.size());
    for (const TraceOp& op : trace.ops) {
        OpSpec s;
        s.id = op.id;
        s.kind = op_kind_name(op.kind);
        // 8-bit data moves packed like bf16 on the VPU (docs/program.md).
        s.in_bytes = std::max<std::int64_t>(dtype_bytes(op.dtype), 2);
        s.out_bytes = std::max<std::int64_t>(dtype_bytes(op.out_dtype), 2);
        s.deps = op.deps;
        s.fused = op.fused;
        for (int c : op.cores) s.cores.push_back(c);
        switch (op.kind) {
            case OpKind::Matmul:
            case OpKind::Conv2d: {
                const MatmulShape mm =
                    op.kind == OpKind::Matmul ? op.matmul : conv_as_matmul(op.conv);
                s.kind = "matmul";
                s.batch = mm.batch;
                s.m = mm.m;
                s.k = mm.k;
                s.n = mm.n;
                break;
            }
            case OpKind::Vector: {
                const VectorOpInfo& info = vector_op_info(op.vector.op);
                s.vop = info.name;
                s.rows = op.vector.rows;
                s.cols = op.vector.cols;
                s.vector_inputs = info.inputs;
                // Whole rows per chunk only where the VPU reduces along the row (softmax,
                // layernorm, reductions); bias_add and batchnorm chunk freely.
                s.rowwise = is_row_vector_op(s.vop);
                shape_elementwise(s, 1024);
                break;
            }
            default:
                s.bytes = static_cast<Bytes>(op.bytes);
                for (const auto& g : op.replica_groups) {
                    // The program layer needs this core's group only; groups are a partition,
                    // so the lowering picks the one holding the core (see lower_single).
                    for (int c : g) s.group.push_back(c);
                    s.group.push_back(-1);  // group separator
                }
                s.peer = op.peer;
                for (const auto& [a, b] : op.source_target_pairs) s.pairs.emplace_back(a, b);
                break;
        }
        out.push_back(std::move(s));
    }
    return out;
}

Program lower_trace(const Trace& trace, const TpuConfig& cfg) {
    LoweringOptions opts;
    opts.cores = trace.cores;
    return lower_ops(op_specs(trace), cfg, opts, trace.path.empty() ? trace.name : trace.path);
}

}  // namespace tpusim
