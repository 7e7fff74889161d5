#pragma once
// Energy model constants (docs/energy.md): energies per operation, per access and per bit from
// public sources, the rule that scales them to the chip's process and voltage, and the static
// power terms. Every value is read by the energy model (include/tpusim/stats/energy.h) except
// tdp_w, which reports print beside the modelled power and never enter a computation.
#include "tpusim/config/visitor.h"

namespace tpusim {

struct EnergyConfig {
    // Scaling of the 45 nm energies: dynamic energy = C V^2 with C proportional to the
    // feature size, so E(node, V) = E45 x (node / source_node) x (V / source_vdd)^2.
    double source_node_nm = 45.0;  // Horowitz, ISSCC 2014: 45 nm at 0.9 V
    double source_vdd_v = 0.9;
    double node_nm = 16.0;  // TPU v2 and v3: TSMC 16 nm (Jouppi et al., ISCA 2021, Table 1)
    double vdd_v = 0.8;     // TSMC 16FF+ nominal core supply
    // Energies at the source node (pJ).
    double mult_bf16_pj = 1.1;        // Horowitz 2014: 16-bit FP multiply (bf16's proxy)
    double add_fp32_pj = 0.9;         // Horowitz 2014: 32-bit FP add
    double mult_fp32_pj = 3.7;        // Horowitz 2014: 32-bit FP multiply
    double vmem_pj_per_64bit = 40.0;  // Horowitz 2014 SRAM read of 64 bits, sized per bank
    // Data movement next to an arithmetic operation, as multiples of the operation's energy
    // (Chen, Emer, Sze, ISCA 2016, Eyeriss: register file 1x, PE-to-PE 2x the ALU's).
    double rf_access_ratio = 1.0;
    double pe_transfer_ratio = 2.0;
    // Off-chip (pJ per bit moved, not scaled: I/O and DRAM cells are not core logic).
    double hbm_pj_per_bit = 3.97;  // O'Connor et al., MICRO 2017: HBM2 access energy
    double ici_pj_per_bit = 2.0;   // Toifl et al., ISSCC 2015: 14 nm FinFET receiver
    double pcie_pj_per_bit = 2.0;  // the same receiver class, for the host link
    // SerDes links send idle symbols when no data flows: they draw their line-rate power at
    // all times (true) or only for the bytes moved (false).
    bool ici_always_on = true;
    // HBM2 background and refresh currents per channel (DRAMsim3, configs/HBM2_8Gb_x128.ini).
    double hbm_vdd_v = 1.2;
    double hbm_idd3n_ma = 55.0;    // active standby
    double hbm_idd5ab_ma = 250.0;  // all-bank refresh (during tRFC of every tREFI)
    // Logic leakage and clock tree per chip at vdd_v: no public figure for a TPU; 0 = not
    // modelled (docs/energy.md says what that leaves out).
    double logic_static_w = 0.0;
    // What-if: the supply follows the clock, V = vdd_v x clock / nominal_clock_mhz, and the
    // dynamic energy per operation follows V^2 (leakage V). Off: V = vdd_v at any clock.
    bool voltage_follows_clock = false;
    double nominal_clock_mhz = 940.0;
    // Window of simulated time over which the peak power is the highest average.
    double peak_window_us = 1.0;
    // Chip thermal design power, printed beside the modelled power (never used to compute it).
    double tdp_w = 450.0;

    void visit(ConfigVisitor& v) {
        v.value("source_node_nm", source_node_nm, Limits::range(1, 1000), "nm",
                "process node of the per-operation energies below (Horowitz, ISSCC 2014)");
        v.value("source_vdd_v", source_vdd_v, Limits::range(0.1, 5), "V",
                "supply voltage of the per-operation energies below");
        v.value("node_nm", node_nm, Limits::range(1, 1000), "nm",
                "the chip's process node; energies scale by node / source_node_nm");
        v.value("vdd_v", vdd_v, Limits::range(0.1, 5), "V",
                "the chip's core supply; energies scale by (vdd / source_vdd)^2");
        v.value("mult_bf16_pj", mult_bf16_pj, Limits::range(0, 1e6), "pJ",
                "bf16 multiply at the source node (MXU)");
        v.value("add_fp32_pj", add_fp32_pj, Limits::range(0, 1e6), "pJ",
                "f32 add at the source node (MXU accumulation, VPU)");
        v.value("mult_fp32_pj", mult_fp32_pj, Limits::range(0, 1e6), "pJ",
                "f32 multiply at the source node (VPU)");
        v.value("vmem_pj_per_64bit", vmem_pj_per_64bit, Limits::range(0, 1e6), "pJ",
                "VMEM SRAM access of 64 bits at the source node");
        v.value("rf_access_ratio", rf_access_ratio, Limits::range(0, 1e3), "x ALU op",
                "register-file access energy as a multiple of the ALU operation's (Eyeriss)");
        v.value("pe_transfer_ratio", pe_transfer_ratio, Limits::range(0, 1e3), "x ALU op",
                "operand transfer to a neighbouring PE as a multiple of the ALU operation's "
                "(Eyeriss)");
        v.value("hbm_pj_per_bit", hbm_pj_per_bit, Limits::range(0, 1e4), "pJ/bit",
                "HBM read or write, activation and I/O included");
        v.value("ici_pj_per_bit", ici_pj_per_bit, Limits::range(0, 1e4), "pJ/bit",
                "ICI SerDes energy per bit received");
        v.value("pcie_pj_per_bit", pcie_pj_per_bit, Limits::range(0, 1e4), "pJ/bit",
                "host link (PCIe) energy per bit moved");
        v.value("ici_always_on", ici_always_on,
                "ICI links draw their line-rate power at all times (idle symbols); false: "
                "only for the bytes moved");
        v.value("hbm_vdd_v", hbm_vdd_v, Limits::range(0.1, 5), "V", "HBM2 core supply");
        v.value("hbm_idd3n_ma", hbm_idd3n_ma, Limits::range(0, 1e5), "mA",
                "HBM2 active-standby current per channel (background power)");
        v.value("hbm_idd5ab_ma", hbm_idd5ab_ma, Limits::range(0, 1e5), "mA",
                "HBM2 all-bank refresh current per channel, drawn for tRFC of every tREFI");
        v.value("logic_static_w", logic_static_w, Limits::range(0, 1e4), "W",
                "logic leakage and clock tree per chip at vdd_v (0: not modelled)");
        v.value("voltage_follows_clock", voltage_follows_clock,
                "what-if: supply = vdd_v x clock / nominal_clock_mhz, dynamic energy x V^2, "
                "leakage x V");
        v.value("nominal_clock_mhz", nominal_clock_mhz, Limits::range(1, 10000), "MHz",
                "clock at which the supply is vdd_v (voltage_follows_clock)");
        v.value("peak_window_us", peak_window_us, Limits::range(1e-3, 1e9), "us",
                "simulated-time window over which peak power is the highest average");
        v.value("tdp_w", tdp_w, Limits::range(0, 1e4), "W",
                "chip thermal design power, printed beside the model (never used to compute)");
    }
};

}  // namespace tpusim
