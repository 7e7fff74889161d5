#pragma once
// Board / slice topology, chip-level and host parameters.
#include <cstdint>
#include <string>

#include "tpusim/config/visitor.h"

namespace tpusim {

// Chips form a chips_x x chips_y grid joined by ICI links. A v2-8 / v3-8 board is 2 x 2 with
// wrap-around: each chip's four links go +x, -x, +y, -y, and in a 2 x 2 grid +x and -x reach
// the same neighbour, so neighbours are joined by two links (docs/ici.md explains why).
// Pod slices (v3-32 ... v3-1024) are larger grids of the same chips.
struct BoardConfig {
    std::int64_t chips_x = 2;
    std::int64_t chips_y = 2;
    bool wraparound = true;
    // Figures quoted by the original documents for the whole board; printed beside the
    // derived figures, never used in a computation.
    double quoted_peak_tflops = 420.0;
    double quoted_memory_gb = 128.0;
    std::string quoted_note;

    std::int64_t chips() const { return chips_x * chips_y; }

    void visit(ConfigVisitor& v) {
        v.value("chips_x", chips_x, Limits::range(1, 64), "chips", "chips along x");
        v.value("chips_y", chips_y, Limits::range(1, 64), "chips", "chips along y");
        v.value("wraparound", wraparound, "torus wrap-around links on both axes");
        v.value("quoted_peak_tflops", quoted_peak_tflops, Limits::range(0, 1e7), "TFLOPS",
                "board peak quoted by the documents (reported beside the derived peak)");
        v.value("quoted_memory_gb", quoted_memory_gb, Limits::range(0, 1e7), "GB",
                "board HBM capacity quoted by the documents");
        v.value("quoted_note", quoted_note, {}, "why the quoted and derived figures differ");
    }
};

struct ChipConfig {
    std::int64_t cores_per_chip = 2;
    double clock_mhz = 940.0;

    void visit(ConfigVisitor& v) {
        v.value("cores_per_chip", cores_per_chip, Limits::range(1, 16), "cores",
                "TensorCores per chip");
        v.value("clock_mhz", clock_mhz, Limits::range(1, 10000), "MHz",
                "core clock (MXU, VPU, sequencer, VMEM, DMA engines)");
    }
};

// The host feeds the board over PCIe and dispatches each program.
struct HostConfig {
    // Only what a model reads is a key: host vCPUs and dispatch overhead come back with the
    // host model that uses them (a key nothing reads would be a silent no-op).
    double pcie_bandwidth_gbps = 16.0;  // per chip [NORn]

    void visit(ConfigVisitor& v) {
        v.value("pcie_bandwidth_gbps", pcie_bandwidth_gbps, Limits::range(0.01, 1000), "GB/s",
                "host link bandwidth per chip");
    }
};

}  // namespace tpusim
