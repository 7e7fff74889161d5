#pragma once
// What the per-kind lowerings of one core's stream share (private to the program layer): the
// instruction stream being appended to, the VMEM ring and the HBM buffers, and one record per
// op (OpState). The lowerings themselves (lower_matmul.cpp, lower_vector.cpp,
// lower_transfer.cpp) only add instructions through it; CoreLowering drives them in program
// order.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tpusim/common/error.h"
#include "tpusim/program/lowering.h"
#include "tpusim/program/vector_lowering.h"
#include "tpusim/program/vmem_ring.h"

namespace tpusim {

using Waits = std::vector<std::uint32_t>;

inline void append_waits(Waits& to, const Waits& from) {
    to.insert(to.end(), from.begin(), from.end());
}

// A VMEM buffer that found no room beside the buffers held at the time (pinned accumulators
// and weight tiles fragment the ring). lower_ops retries the op that owns the pipeline with a
// smaller tile plan; past that it is the located input error it derives from.
class VmemExhausted : public InputError {
 public:
    VmemExhausted(std::string file, std::string where, std::string what, std::size_t op)
        : InputError(std::move(file), std::move(where), std::move(what)), op_(op) {}
    std::size_t op() const { return op_; }

 private:
    std::size_t op_;
};

// An HBM buffer an op reads: where it starts and how many bytes it holds.
struct HbmSrc {
    Addr addr = 0;
    Bytes size = 0;
};

// A block of an op's result resident in VMEM: rows x cols starting at (row0, col0) of a
// tensor with `total_cols` columns.
struct TileRef {
    Addr vmem = 0;
    std::int64_t row0 = 0, col0 = 0, rows = 0, cols = 0, total_cols = 0;
    std::int64_t elem = 4;
    Waits ready;              // instructions that produce it
    std::int64_t output = 0;  // which result array of a multi-output vector op (adam: p, m, v)
};

// A pipeline step: loads (DMA in) for a step are emitted before the computes of the previous
// step; `finish` runs one step later still (write-back), so the sequencer never stalls on a
// write-back while the units have queued work.
struct PipelineStep {
    std::function<void(PipelineStep&)> load, compute, finish;
    Waits loaded, computed;
    std::vector<Addr> buffers;  // operand buffers the computes read
    Addr acc = 0, weights = 0;  // buffers released by finish
};

// Fusion: how a fused consumer attaches to its producer's tiles. The producer's lowering hands
// each result tile to LoweringContext::sink, which passes it to the consumer's lowering while
// the tile is in VMEM (the consumer then lowers itself tile by tile, inside the producer's
// pipeline) instead of writing it to HBM.
class TileConsumer {
 public:
    virtual ~TileConsumer() = default;
    // Op `i` (a fused consumer) processes `tile` of its producer's result.
    virtual void consume_tile(std::size_t i, TileRef tile) = 0;
};

// What the lowering keeps per op on this core.
struct OpState {
    Addr out_addr = 0;     // HBM address of its result
    Bytes out_size = 0;    // and the bytes its buffer holds
    Waits done;            // its final instructions on this core
    Waits prev_done;       // a loop body op: `done` of the previous trip
    bool in_loop = false;  // in a loop body
    bool lowered = false;
    std::int64_t consumer = -1;  // its fused consumer, lowered inline, or -1
    std::size_t consumers = 0;   // ops that read its result (through HBM or in VMEM)
    std::uint32_t last_vpu = 0;  // its last VPU instruction (the VPU runs its queue in order)
    Bytes hbm_bytes = 0;         // bytes it moves between HBM and VMEM on this core
};

class LoweringContext {
 public:
    using Buffer = VmemRing::Buffer;

    LoweringContext(const TpuConfig& cfg, const LoweringOptions& opts, std::int64_t core,
                    const std::vector<OpSpec>& ops, std::string trace_name);

    const TpuConfig& cfg() const { return cfg_; }
    const LoweringOptions& opts() const { return opts_; }
    std::int64_t core() const { return core_; }
    const std::vector<OpSpec>& ops() const { return ops_; }
    const OpSpec& op(std::size_t i) const { return ops_[i]; }
    const std::string& trace_name() const { return trace_name_; }
    OpState& state(std::size_t i) { return state_[i]; }
    const OpState& state(std::size_t i) const { return state_[i]; }
    VmemRing& vmem() { return vmem_; }
    std::vector<OpInfo>& infos() { return *infos_; }
    void set_infos(std::vector<OpInfo>& infos) { infos_ = &infos; }
    void set_tile_consumer(TileConsumer* c) { tile_consumer_ = c; }
    // The loop trip being lowered (0 outside loops).
    std::int64_t trip() const { return trip_; }
    void set_trip(std::int64_t t) { trip_ = t; }

    // The instruction stream: emit() appends and returns the instruction's index.
    std::uint32_t emit(Instr in);
    // The next emit() keeps the instruction's waits and op for watched() (loop reuse).
    void watch_next_emit() { watch_next_ = true; }
    const std::vector<std::uint32_t>& watched_waits() const { return watched_waits_; }
    std::uint32_t watched_op() const { return watched_op_; }
    void hold_at_most(std::size_t n) { hold_limit_ = n; }
    void set_sink(std::function<void(Instr&&)> sink) { sink_ = std::move(sink); }
    bool overflowed() const { return overflowed_; }
    std::size_t count() const { return count_; }
    InstrList take_instrs() { return std::move(instrs_); }
    [[noreturn]] void too_many() const;

    Buffer alloc(Bytes bytes, bool pinned, Waits& waits, std::size_t op);
    Addr hbm_alloc(Bytes bytes);
    static constexpr Bytes kHbmAlign = 4096;  // HBM buffers start on 4 KiB
    // The HBM buffer of input operand `which` of op i, which the op views as `bytes`: its
    // dependency's result (TraceOp::operands), or a parameter of that size.
    HbmSrc operand(std::size_t i, std::size_t which, Bytes bytes);
    // Result array k of op i's buffer (a multi-output vector op's arrays lie side by side).
    HbmSrc result_array(std::size_t i, std::int64_t k) const;
    // Throws the located error of a block read or written past the buffer that holds it.
    void check_block(std::size_t i, const char* what, const DmaDescriptor& d, HbmSrc buf) const;
    // Keeps a read block `d` inside the buffer `buf` of its source (see the .cpp).
    static void wrap_block(DmaDescriptor& d, HbmSrc buf);
    // Keeps a fused op's tile block `d` (of a grid of `grid_bytes`) inside `buf`, its array.
    static void fit_block(DmaDescriptor& d, HbmSrc buf, std::int64_t grid_bytes);
    bool on_this_core(const OpSpec& op) const;
    // Adds to op i's HBM bytes on this core.
    void count_hbm(std::size_t i, Bytes bytes) { state_[i].hbm_bytes += bytes; }
    Waits dep_waits(const OpSpec& op) const;
    // The waits of `from` that emit() would keep: those no earlier instruction of the stream
    // waits on (covered_ only grows, so dropping them before an emit changes nothing). A
    // consumer's waits start as its producers' every write-back; copying only these keeps
    // lowering linear in the instructions.
    void append_uncovered(Waits& to, const Waits& from) const;
    // Drops the covered waits from `w` in place (a list kept only to wait on: an op's
    // dependencies, read again by each of its pipeline steps).
    void drop_covered(Waits& w) const;
    Waits uncovered(const Waits& from) const {
        Waits w;
        append_uncovered(w, from);
        return w;
    }
    std::optional<std::size_t> inline_consumer(std::size_t op) const;

    // Runs `count` steps made on demand by make(s): only three steps exist at a time, so an
    // op's tiles are never all materialised (lowering memory follows the instructions).
    void run_pipeline(std::size_t count, const std::function<PipelineStep(std::size_t)>& make);
    // Op i's DMA of rows [r0, r0 + rows) of `row_bytes` each, from the HBM array at `src` into
    // a fresh VMEM buffer, after `after`; the DMA and the buffer are added to `s`. The rows
    // stay inside the source's buffer (wrap_block).
    // `at`: a byte offset into the source where row 0 starts.
    void load_rows(std::size_t i, HbmSrc src, Bytes row_bytes, std::int64_t r0, std::int64_t rows,
                   const Waits& after, PipelineStep& s, Bytes at = 0);
    // Delivers a result tile of op `i`: to its fused consumer, or back to HBM.
    void sink(std::size_t i, TileRef tile);
    void write_back(std::size_t i, const TileRef& tile);  // a result tile of op i to HBM
    // Rows of the array whose tiles reach fused op i (its chain's first producer).
    std::int64_t tile_grid_rows(std::size_t i) const;

 private:
    HbmSrc param(std::size_t i, std::size_t which, Bytes bytes);
    [[noreturn]] void past_share(const Instr& in) const;

    const TpuConfig& cfg_;
    LoweringOptions opts_;
    std::int64_t core_;
    const std::vector<OpSpec>& ops_;
    std::string trace_name_;
    std::vector<OpState> state_;
    InstrList instrs_;
    std::size_t count_ = 0, hold_limit_ = ~std::size_t{0};
    bool overflowed_ = false;
    std::function<void(Instr&&)> sink_;
    VmemRing vmem_;
    bool watch_next_ = false;
    std::vector<std::uint32_t> watched_waits_;
    std::uint32_t watched_op_ = 0;
    Addr hbm_size_, hbm_next_ = 0;
    std::map<std::pair<std::size_t, std::size_t>, HbmSrc> param_addr_;  // body ops' parameters
    std::int64_t trip_ = 0;
    std::vector<OpInfo>* infos_ = nullptr;
    TileConsumer* tile_consumer_ = nullptr;
    // Instructions some earlier instruction of the stream waits on. The sequencer issues in
    // order, so they have completed before any later instruction issues: waiting on them
    // again changes no cycle, and emit() drops them (a consumer's chunks would otherwise
    // each list every write-back of the producer).
    std::vector<bool> covered_;
};

// The bytes an op's result takes in HBM, as its write-back lays it out: a vector op's rows in
// whole tiles of the VPU's lanes (VectorLowering::lower).
Bytes output_bytes(const OpSpec& op, std::int64_t lanes);
// layernorm_grad / batchnorm_grad: dgamma and dbeta follow the result.
bool has_column_sums(const OpSpec& op);

}  // namespace tpusim
