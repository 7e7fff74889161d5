#pragma once
// Board / slice topology, chip-level and host parameters.
#include <array>
#include <cstdint>
#include <string>

#include "tpusim/config/visitor.h"

namespace tpusim {

// Chips form a chips_x x chips_y grid joined by ICI links. A v2-8 / v3-8 board is 2 x 2 with
// wrap-around: each chip's four links go +x, -x, +y, -y, and in a 2 x 2 grid +x and -x reach
// the same neighbour, so neighbours are joined by two links (docs/ici.md explains why).
// Pod slices (v3-32 ... v3-2048) are larger grids of the same chips.
//
// A slice is a rectangle cut out of its pod's 2-D torus (pod_chips_x x pod_chips_y; 0: the
// board is a machine of its own). The pod's wrap-around links close a ring only along an axis
// the slice spans whole: a v3-1024 (16 x 32 chips of the 32 x 32 pod) wraps along y only, a
// v3-32 (4 x 4) along neither (docs/pods.md, "Wrap-around").
struct BoardConfig {
    std::int64_t chips_x = 2;
    std::int64_t chips_y = 2;
    bool wraparound = true;
    std::int64_t pod_chips_x = 0;
    std::int64_t pod_chips_y = 0;
    // Figures quoted by the original documents for the whole board; printed beside the
    // derived figures, never used in a computation.
    double quoted_peak_tflops = 420.0;
    double quoted_memory_gb = 128.0;
    std::string quoted_note;

    std::int64_t chips() const { return chips_x * chips_y; }
    // Whether the ring along `dim` (0: x, 1: y) is closed by a wrap-around link: the torus
    // has them and the board spans its pod's whole side (or is not cut from a pod).
    bool wraps(int dim) const {
        const std::int64_t n = dim == 0 ? chips_x : chips_y;
        const std::int64_t pod = dim == 0 ? pod_chips_x : pod_chips_y;
        return wraparound && (pod == 0 || pod == n);
    }

    void visit(ConfigVisitor& v) {
        v.value("chips_x", chips_x, Limits::range(1, 64), "chips", "chips along x");
        v.value("chips_y", chips_y, Limits::range(1, 64), "chips", "chips along y");
        v.value("wraparound", wraparound,
                "torus wrap-around links, along every axis the board spans its pod's whole side");
        v.value("pod_chips_x", pod_chips_x, Limits::range(0, 64), "chips",
                "chips along x of the pod the board is cut from (0: the board is the machine); "
                "a slice narrower than its pod has no wrap-around along x");
        v.value("pod_chips_y", pod_chips_y, Limits::range(0, 64), "chips",
                "chips along y of the pod the board is cut from (0: the board is the machine)");
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

// The host feeds the board over PCIe and dispatches each program. The keys past the PCIe link
// are read by `tpusim train` (include/tpusim/train/input_pipeline.h): the host CPUs that run the
// input pipeline, where the data comes from, the per-step launch cost and the XLA compile.
enum class HostAccess { Vm, Node };
inline constexpr std::array<const char*, 2> kHostAccessNames = {"vm", "node"};

struct HostConfig {
    double pcie_bandwidth_gbps = 16.0;  // per chip [NORn]
    // A TPU VM runs the input pipeline on the TPU host; a TPU Node (Colab, Kaggle in 2020-21)
    // runs it on a separate user VM that sends every batch over the network to the TPU host.
    HostAccess access = HostAccess::Vm;
    std::int64_t vcpus = 96;              // TPU VM v2-8 / v3-8 host [Cloud TPU docs]
    double network_bandwidth_gbps = 4.0;  // user VM -> TPU host (node) and GCS reads
    // TPU Node: the framework runtime's own path for an input batch (serialise on the user VM,
    // gRPC, deserialise on the TPU host), measured end to end; 0: only the network decides.
    double node_transfer_gbps = 0.0;
    double node_transfer_latency_us = 0.0;  // per batch transfer call, payload-independent
    double disk_read_gbps = 0.5;            // local disk of the machine running the pipeline
    double dispatch_us = 100.0;             // validation/README.md section 2: ~0.1 ms floor
    double compile_base_s = 0.0;
    double compile_ms_per_op = 0.0;

    void visit(ConfigVisitor& v) {
        v.value("pcie_bandwidth_gbps", pcie_bandwidth_gbps, Limits::range(0.01, 1000), "GB/s",
                "host link bandwidth per chip");
        v.choice("access", access, kHostAccessNames,
                 "vm: input pipeline on the TPU host; node: on a user VM, batches cross the "
                 "network to the TPU host (train)");
        v.value("vcpus", vcpus, Limits::range(1, 4096), "vCPUs",
                "CPUs that run the input pipeline's map stage (train)");
        v.value("network_bandwidth_gbps", network_bandwidth_gbps, Limits::range(0.001, 1000),
                "GB/s", "user VM -> TPU host (node access) and Cloud Storage reads (train)");
        v.value("node_transfer_gbps", node_transfer_gbps, Limits::range(0, 1000), "GB/s",
                "node access: the runtime's effective rate for an input batch, user VM -> TPU "
                "host (gRPC path); the slower of it and the network decides; 0: network only "
                "(train)");
        v.value("node_transfer_latency_us", node_transfer_latency_us, Limits::range(0, 1e7), "us",
                "node access: fixed time of one batch transfer call (train)");
        v.value("disk_read_gbps", disk_read_gbps, Limits::range(0.001, 1000), "GB/s",
                "local disk read bandwidth of the pipeline's machine (train)");
        v.value("dispatch_us", dispatch_us, Limits::range(0, 1e7), "us",
                "host time to launch one step; the board idles meanwhile (train)");
        v.value("compile_base_s", compile_base_s, Limits::range(0, 1e5), "s",
                "XLA compile before the first step: fixed part (train)");
        v.value("compile_ms_per_op", compile_ms_per_op, Limits::range(0, 1e6), "ms",
                "XLA compile before the first step: per op of the step program (train)");
    }
};

}  // namespace tpusim
