#pragma once
// One lowering per kind of op (private to the program layer). Each appends an op's
// instructions to the stream through the LoweringContext it is given; CoreLowering picks the
// lowering by the op's kind.
#include <cstddef>
#include <cstdint>
#include <map>

#include "lowering_context.h"

namespace tpusim {

// Matmuls and convolutions as implicit GEMMs (lower_matmul.cpp): tiles sized to VMEM, weight
// tiles split between the core's MXUs, operand DMAs one pipeline step ahead of the MXU work.
class MatmulLowering {
 public:
    explicit MatmulLowering(LoweringContext& c) : c_(c) {}
    void lower(std::size_t i);

 private:
    LoweringContext& c_;
};

// Vector ops (lower_vector.cpp): chunks of whole rows, XLA's statistics kernels of an unfused
// row normalisation, and a fused op on its producer's tiles (the TileConsumer of fusion).
class VectorLowering : public TileConsumer {
 public:
    explicit VectorLowering(LoweringContext& c) : c_(c) {}
    void lower(std::size_t i);
    // Op i is the fused consumer of `in`, a tile of its producer's result in VMEM.
    void consume_tile(std::size_t i, TileRef in) override;
    // layernorm_grad / batchnorm_grad: dgamma and dbeta, summed over every row in VMEM, go to
    // HBM after the dx array once the op's last VPU instruction is done.
    void write_column_sums(std::size_t i);

 private:
    // Rows per chunk of a vector op whose rows take `row_bytes` of VMEM (docs/program.md).
    std::int64_t rows_per_chunk(const OpSpec& op, Bytes row_bytes, std::int64_t out_bytes) const;
    // One statistics kernel of a row normalisation (XLA's separate reduction fusion): a full
    // pass over the op's input `src` (rows of `cols` lanes) that starts after `after`, with
    // the row reduction `body` on the VPU; with `keep`, it also writes a full-size
    // intermediate there, rows of `keep_row` bytes (softmax's exp(x - max)). Returns what the
    // next kernel waits for: its last VPU instruction, or the intermediate's stores.
    Waits statistics_pass(std::size_t i, VectorOp body, HbmSrc src, std::int64_t cols, Waits after,
                          const HbmSrc* keep, Bytes keep_row);
    // Op i's HBM buffer of `bytes` for an intermediate of its own (allocated once).
    HbmSrc intermediate(std::size_t i, Bytes bytes);

    LoweringContext& c_;
    std::map<std::size_t, HbmSrc> intermediates_;
};

// Data movement through the core (lower_transfer.cpp): copies in chunks through VMEM, and
// infeed / outfeed as one host-link instruction.
class TransferLowering {
 public:
    explicit TransferLowering(LoweringContext& c) : c_(c) {}
    void lower(std::size_t i);

 private:
    void lower_copy(std::size_t i);
    LoweringContext& c_;
};

// Collectives and send / recv (lower_transfer.cpp): one ICI instruction over this core's
// replica group (or its peer).
class CollectiveLowering {
 public:
    explicit CollectiveLowering(LoweringContext& c) : c_(c) {}
    void lower(std::size_t i);

 private:
    LoweringContext& c_;
};

}  // namespace tpusim
