#pragma once
// Matrix unit (MXU): a weight-stationary systolic array. docs/mxu.md derives the timing.
#include <cstdint>

#include "tpusim/config/visitor.h"

namespace tpusim {

struct MxuConfig {
    std::int64_t rows = 128;  // K direction: one stationary weight row per PE row
    std::int64_t cols = 128;  // N direction
    // Weights shift into the shadow buffer this many rows per cycle (rows / rate cycles).
    std::int64_t weight_load_rows_per_cycle = 1;
    // Design switches, so architects can ask what each is worth.
    bool weight_double_buffer = true;  // load the next tile while the current one computes
    bool overlap_tiles = true;         // next tile's LHS enters while the last drains
    // Fixed pipeline latencies.
    std::int64_t input_latency_cycles = 1;        // LHS from the push slot to the array edge
    std::int64_t accumulator_latency_cycles = 1;  // array bottom edge to the result buffer
    std::int64_t result_pop_latency_cycles = 1;   // result buffer to the pop slot
    // The sequencer's loop overhead between passes: the LHS push slot idles this long after
    // a pass's last row before the next pass's first (address and loop-counter updates, the
    // next pass's push setup). 0 = back to back. The board files set the value calibrated on
    // validation/measured/matmul_TPUv3_k12288.csv (docs/config.md, calibrated keys).
    std::int64_t pass_gap_cycles = 0;

    void visit(ConfigVisitor& v) {
        // Any shape: the PE model and the closed form need no power of two (docs/mxu.md).
        v.value("rows", rows, Limits::range(1, 4096), "PEs", "systolic array rows (K)");
        v.value("cols", cols, Limits::range(1, 4096), "PEs", "systolic array columns (N)");
        v.value("weight_load_rows_per_cycle", weight_load_rows_per_cycle, Limits::range(1, 4096),
                "rows/cycle", "weight rows shifted into the shadow buffer per cycle");
        v.value("weight_double_buffer", weight_double_buffer,
                "load the next weight tile into a shadow buffer while the current one computes");
        v.value("overlap_tiles", overlap_tiles,
                "stream the next tile's LHS rows while the previous tile drains");
        v.value("input_latency_cycles", input_latency_cycles, Limits::range(0, 1 << 16), "cycles",
                "LHS push slot to the array's left edge");
        v.value("accumulator_latency_cycles", accumulator_latency_cycles, Limits::range(0, 1 << 16),
                "cycles", "array bottom edge to the accumulators");
        v.value("result_pop_latency_cycles", result_pop_latency_cycles, Limits::range(0, 1 << 16),
                "cycles", "accumulators to the result pop slot");
        v.value("pass_gap_cycles", pass_gap_cycles, Limits::range(0, 1 << 20), "cycles",
                "sequencer loop overhead: idle LHS cycles between consecutive passes");
    }
};

}  // namespace tpusim
