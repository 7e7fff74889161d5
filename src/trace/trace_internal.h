#pragma once
// Shared by the trace reader and the size helpers: FLOP and byte figures in 128-bit
// arithmetic, so that the reader can reject an op whose figures do not fit in 63 bits before
// anyone computes them in 64.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "tpusim/trace/trace.h"

namespace tpusim::trace_detail {

using Wide = unsigned __int128;

// Every size field is at most this (2^40): far beyond any real tensor dimension, small enough
// that a product of two sizes cannot overflow 128 bits.
inline constexpr std::int64_t kMaxSize = std::int64_t{1} << 40;

Wide wide_flops(const TraceOp& op);
std::vector<Wide> wide_operand_bytes(const TraceOp& op);
Wide wide_bytes_out(const TraceOp& op);
std::int64_t group_size(const TraceOp& op);

bool parse_kind(const std::string& s, OpKind& out);
bool parse_dtype(const std::string& s, DType& out);
bool parse_vector_op(const std::string& s, VectorOp& out);
std::string kind_names();       // "matmul, conv2d, ..." for messages
std::string dtype_names();      // "bf16, f16, ..."
std::string vector_op_names();  // "add, sub, ..."

}  // namespace tpusim::trace_detail

namespace tpusim::trace_detail {

// One op object -> TraceOp with every field checked except deps (ids returned in dep_ids) and
// cross-op facts. `where` for messages: op "<id>" once the id is known, else ops[<index>].
TraceOp parse_op(const nlohmann::json& j, std::size_t index, std::int64_t program_cores,
                 const std::string& file, std::vector<std::string>& dep_ids);

// Resolves deps, rejects duplicate ids, dangling deps and cycles (naming the ids on the
// cycle), orders ops topologically and checks fused ops and send/recv pairing.
void link_ops(Trace& t, const std::vector<std::vector<std::string>>& dep_ids);

// Version 2: reads the `loops` table (null: none) and the carried deps (carried_ids[k] of the
// op with id carried_owner[k]) of a trace already linked, and checks that every body is one
// run of ops in dependency order, that carried deps stay in their body and that no fused op
// crosses a loop's boundary.
void link_loops(Trace& t, const nlohmann::json* loops,
                const std::vector<std::vector<std::string>>& carried_ids,
                const std::vector<std::string>& carried_owner);

// `op "<id>"` as an InputError location.
std::string op_where(const std::string& id);

}  // namespace tpusim::trace_detail
