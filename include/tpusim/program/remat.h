#pragma once
// Rematerialisation, as XLA's compiler does it (HloRematerialization) when a program's live
// HBM exceeds the device's memory: a cheap vector op whose result is kept across the peak for
// a later consumer (a forward activation the backward pass reads) is computed again right
// before that consumer, from operands that are live there anyway, so the first copy is freed
// after its early consumers. docs/program.md, "HBM capacity".
//
// The model: while the largest live footprint of one core (hbm_footprint) exceeds its share of
// HBM, the candidate live at the peak that frees the most is rematerialised. A candidate is a
// vector op that is elementwise or normalises rows (no reduction, no random bits, no second
// result, no table or optimizer op), runs on every core and stores its result in HBM, has
// consumers before the peak and after it (none at it, none fused to it). Its copy is a block,
// as XLA recomputes blocks of instructions: the op and, transitively, each producer whose result
// is not in HBM (earlier members of its fused kernel, values in VMEM) or is freed before the
// copy; such a producer is recomputed too where it can be (at most 16 ops), else kept alive
// until the copy reads it, which counts against what the copy frees. The copies,
// `<id>.remat`, go just before the first consumer after the peak; the consumers after the peak
// read the copy. When the candidates cannot make it fit, the program is left as it is and
// check_hbm_capacity rejects it. Traces with loops (format version 2) or per-core op sets are
// left as they are.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "tpusim/config/tpu_config.h"
#include "tpusim/trace/trace.h"

namespace tpusim {

struct RematStats {
    std::size_t ops = 0;                // ops recomputed (copies inserted)
    std::size_t kernels = 0;            // kernels they form (a value and its fused producers)
    std::int64_t peak_before = 0;       // largest live footprint of one core before
    std::int64_t peak_after = 0;        // and after
    std::int64_t recomputed_bytes = 0;  // result bytes the copies write again, per core
};

// The trace with its copies when its footprint exceeds `capacity_per_core` and recomputation
// makes it fit; nullopt when it is left as it is (it fits, or no recomputation can make it
// fit: then nothing is recomputed). `stats` (optional) says what was done.
std::optional<Trace> rematerialize(const Trace& trace, std::int64_t capacity_per_core,
                                   RematStats* stats = nullptr);

// The program the lowering runs: `trace` rematerialised when lowering.rematerialize is on and
// its footprint exceeds a core's share (nullopt: `trace` as it is), then checked: throws
// check_hbm_capacity's located error where it still does not fit.
std::optional<Trace> fit_hbm(const Trace& trace, const TpuConfig& cfg, RematStats& stats);

// One line for the run's warnings: what was recomputed and the footprint before and after.
std::string remat_summary(const RematStats& stats, std::int64_t capacity_per_core);

}  // namespace tpusim
