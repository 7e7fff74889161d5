#pragma once
// Lowering of a whole trace for one TensorCore (private to the program layer).
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tpusim/program/lowering.h"
#include "tpusim/program/vector_lowering.h"
#include "tpusim/program/vmem_ring.h"

namespace tpusim {

// A block of an op's result resident in VMEM: rows x cols starting at (row0, col0) of a
// tensor with `total_cols` columns.
inline void append_waits(std::vector<std::uint32_t>& to, const std::vector<std::uint32_t>& from) {
    to.insert(to.end(), from.begin(), from.end());
}

// An HBM buffer an op reads: where it starts and how many bytes it holds.
struct HbmSrc {
    Addr addr = 0;
    Bytes size = 0;
};

struct TileRef {
    Addr vmem = 0;
    std::int64_t row0 = 0, col0 = 0, rows = 0, cols = 0, total_cols = 0;
    std::int64_t elem = 4;
    std::vector<std::uint32_t> ready;  // instructions that produce it
    std::int64_t output = 0;  // which result array of a multi-output vector op (adam: p, m, v)
};

class CoreLowering {
 public:
    CoreLowering(const TpuConfig& cfg, const LoweringOptions& opts, std::int64_t core,
                 const std::vector<OpSpec>& ops, std::string trace_name);
    // The core's instruction stream; DMA HBM addresses relative to the core's HBM share.
    // Empty when the stream overflowed the held limit (hold_at_most) or went to a sink.
    InstrList run(std::vector<OpInfo>& infos);
    // Holds at most `n` instructions: past that, run() only counts them (overflowed()).
    void hold_at_most(std::size_t n) { hold_limit_ = n; }
    // Hands every instruction to `sink` instead of holding it.
    void set_sink(std::function<void(Instr&&)> sink) { sink_ = std::move(sink); }
    bool overflowed() const { return overflowed_; }
    std::size_t count() const { return count_; }  // instructions emitted
    // Per op: the bytes it moves between HBM and VMEM on this core (after run()).
    const std::vector<Bytes>& hbm_bytes() const { return hbm_bytes_; }

 private:
    using Waits = std::vector<std::uint32_t>;
    using Buffer = VmemRing::Buffer;
    // A pipeline step: loads (DMA in) for a step are emitted before the computes of the
    // previous step; `finish` runs one step later still (write-back), so the sequencer never
    // stalls on a write-back while the units have queued work.
    struct Step {
        std::function<void(Step&)> load, compute, finish;
        Waits loaded, computed;
        std::vector<Addr> buffers;  // operand buffers the computes read
        Addr acc = 0, weights = 0;  // buffers released by finish
    };
    // Runs `count` steps made on demand by make(s): only three steps exist at a time, so an
    // op's tiles are never all materialised (lowering memory follows the instructions).
    void run_pipeline(std::size_t count, const std::function<Step(std::size_t)>& make);

    std::uint32_t emit(Instr in);
    Buffer alloc(Bytes bytes, bool pinned, Waits& waits, std::size_t op);
    Addr hbm_alloc(Bytes bytes);
    // The HBM buffer of input operand `which` of op i, which the op views as `bytes`: its
    // dependency's result (TraceOp::operands), or a parameter of that size.
    HbmSrc operand(std::size_t i, std::size_t which, Bytes bytes);
    HbmSrc param(std::size_t i, std::size_t which, Bytes bytes);
    // Throws the located error of a block read or written past the buffer that holds it.
    void check_block(std::size_t i, const char* what, const DmaDescriptor& d, HbmSrc buf) const;
    [[noreturn]] void past_share(const Instr& in) const;
    // Keeps a read block `d` inside the buffer `buf` of its source (see the .cpp).
    static void wrap_block(DmaDescriptor& d, HbmSrc buf);
    // Keeps a fused op's tile block `d` (of a grid of `grid_bytes`) inside `buf`, its array.
    static void fit_block(DmaDescriptor& d, HbmSrc buf, std::int64_t grid_bytes);
    static constexpr Bytes kHbmAlign = 4096;  // HBM buffers start on 4 KiB
    bool on_this_core(const OpSpec& op) const;
    // Adds to op i's HBM bytes on this core.
    void count_hbm(std::size_t i, Bytes bytes);
    Waits dep_waits(const OpSpec& op) const;
    std::optional<std::size_t> inline_consumer(std::size_t op) const;

    void lower_op(std::size_t i);
    void lower_loop(const LoopSpec& l);
    [[noreturn]] void too_many() const;
    void lower_matmul(std::size_t i);
    void lower_vector(std::size_t i);
    // Rows per chunk of a vector op whose rows take `row_bytes` of VMEM (docs/program.md).
    std::int64_t vector_chunk_rows(const OpSpec& op, Bytes row_bytes, std::int64_t out_bytes) const;
    // One statistics kernel of a row normalisation (XLA's separate reduction fusion): a full
    // pass over the op's input `src` (rows of `cols` lanes) that starts after `after`, with
    // the row reduction `body` on the VPU. Returns its last VPU instruction.
    std::uint32_t lower_statistics_pass(std::size_t i, VectorOp body, HbmSrc src, std::int64_t cols,
                                        const Waits& after);
    // Op i's DMA of rows [r0, r0 + rows) of `row_bytes` each, from the HBM array at `src` into
    // a fresh VMEM buffer, after `after`; the DMA and the buffer are added to `s`. The rows
    // stay inside the source's buffer (wrap_block).
    // `at`: a byte offset into the source where row 0 starts.
    void load_rows(std::size_t i, HbmSrc src, Bytes row_bytes, std::int64_t r0, std::int64_t rows,
                   const Waits& after, Step& s, Bytes at = 0);
    void lower_copy(std::size_t i);
    void lower_single(std::size_t i);
    // Delivers a result tile of op `i`: to its fused consumer, or back to HBM.
    void sink(std::size_t i, TileRef tile);
    void write_back(std::size_t i, const TileRef& tile);  // a result tile of op i to HBM
    void consume_tile(std::size_t i, TileRef in);         // op i is the fused consumer
    // Rows of the array whose tiles reach fused op i (its chain's first producer).
    std::int64_t tile_grid_rows(std::size_t i) const;
    // Result array k of op i's buffer (a multi-output vector op's arrays lie side by side).
    HbmSrc result_array(std::size_t i, std::int64_t k) const;
    // layernorm_grad / batchnorm_grad: dgamma and dbeta, summed over every row in VMEM, go to
    // HBM after the dx array once the op's last VPU instruction is done.
    void write_column_sums(std::size_t i);

    const TpuConfig& cfg_;
    LoweringOptions opts_;
    std::int64_t core_;
    const std::vector<OpSpec>& ops_;
    std::string trace_name_;
    InstrList instrs_;
    std::size_t count_ = 0, hold_limit_ = ~std::size_t{0};
    bool overflowed_ = false;
    std::function<void(Instr&&)> sink_;
    std::vector<Bytes> hbm_bytes_;
    VmemRing vmem_;
    Addr hbm_size_, hbm_next_ = 0;
    std::vector<Addr> out_addr_;    // HBM address of each op's result
    std::vector<Bytes> out_size_;   // and the bytes its buffer holds
    std::vector<Waits> done_;       // per op: its final instructions on this core
    std::vector<Waits> prev_done_;  // loop body ops: done_ of the previous trip
    std::vector<bool> in_loop_;     // per op: in a loop body
    std::map<std::pair<std::size_t, std::size_t>, HbmSrc> param_addr_;  // body ops' parameters
    std::int64_t trip_ = 0;                                             // of the loop being lowered
    std::vector<std::int64_t> consumer_;  // fused consumer lowered inline, or -1
    std::vector<std::size_t> consumers_count_;
    std::vector<bool> lowered_;
    // Per op: its last VPU instruction (the VPU runs its queue in order), for the column sums.
    std::vector<std::uint32_t> last_vpu_;
    std::vector<OpInfo>* infos_ = nullptr;
    // Instructions some earlier instruction of the stream waits on. The sequencer issues in
    // order, so they have completed before any later instruction issues: waiting on them
    // again changes no cycle, and emit() drops them (a consumer's chunks would otherwise
    // each list every write-back of the producer).
    std::vector<bool> covered_;
};

}  // namespace tpusim
