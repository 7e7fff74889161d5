#pragma once
// The kinds of trace ops, shared by the trace reader, the program layer (OpSpec::kind) and the
// run report. The one string <-> kind mapping is in src/trace/trace_ops.cpp: the reader parses
// "kind" with it, reports print op_kind_name.

namespace tpusim {

// Collectives come last, from AllReduce on (is_collective relies on it).
enum class OpKind {
    Matmul,
    Conv2d,
    Vector,
    Copy,
    Infeed,
    Outfeed,
    AllReduce,
    ReduceScatter,
    AllGather,
    AllToAll,
    CollectivePermute,
    Send,
    Recv
};

const char* op_kind_name(OpKind k);  // as in the file: "matmul", "all_reduce", ...
bool is_collective(OpKind k);        // all_reduce ... recv: traffic on the ICI

}  // namespace tpusim
