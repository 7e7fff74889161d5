#pragma once
// HBM organisation and JEDEC HBM2 timing. Timing values are in HBM clock cycles (tCK); the
// HBM clock is half the data rate (DDR). Sources of every value: docs/hbm.md.
#include <cstdint>
#include <string>

#include "tpusim/config/visitor.h"

namespace tpusim {

// Why the HBM geometry keys are powers of two: HbmAddressMap cuts a physical address into
// offset, column, bank, bank-group, row, pseudo-channel, channel and stack bit fields.
inline constexpr const char* kAddressBits = "the HBM address map takes it as a bit field";

struct HbmTimingConfig {
    // Defaults: TPU v3 (HBM clock 878.9 MHz, tCK 1.138 ns). The nanosecond values of
    // DRAMsim3's configs/HBM2_8Gb_x128.ini (tCK = 1 ns) converted to this tCK, rounded up
    // (tREFI rounded down), with JEDEC's 350 ns tRFC for 8 Gb dies; docs/hbm.md has the table.
    std::int64_t burst_length = 4;  // BL4 on a 64-bit pseudo-channel: 32 B per burst
    std::int64_t tCL = 13;          // 14 ns
    std::int64_t tWL = 4;           // 4 tCK (a latency setting in clocks)
    std::int64_t tRCD = 13;         // 14 ns
    std::int64_t tRP = 13;          // 14 ns
    std::int64_t tRAS = 30;         // 34 ns
    std::int64_t tCCD_S = 2;        // = BL/2: one burst per two clocks on the pseudo-channel
    std::int64_t tCCD_L = 4;        // same bank group: twice tCCD_S, as in DRAMsim3 and Ramulator
    std::int64_t tRRD_S = 4;        // 4 ns
    std::int64_t tRRD_L = 6;        // 6 ns
    std::int64_t tFAW = 27;         // 30 ns
    std::int64_t tWTR_S = 6;        // 6 ns
    std::int64_t tWTR_L = 8;        // 8 ns
    std::int64_t tRTW = 13;     // tCL + BL/2 + 2 - tWL: read data off the bus plus 2 tCK turnaround
    std::int64_t tWR = 15;      // 16 ns
    std::int64_t tRTP = 6;      // 6 ns (tRTP_L)
    std::int64_t tREFI = 3427;  // 3.9 us
    std::int64_t tRFC = 308;    // 350 ns (8 Gb die)

    void visit(ConfigVisitor& v) {
        const auto pos = Limits::range(1, 1 << 16);  // JEDEC timings, in tCK
        const auto nn = Limits::range(0, 1 << 16);
        v.value("burst_length", burst_length, Limits::pow2_max(64, kAddressBits), "beats",
                "burst length (BL)");
        v.value("tCL", tCL, pos, "tCK", "read column access latency (CAS)");
        v.value("tWL", tWL, nn, "tCK", "write latency");
        v.value("tRCD", tRCD, pos, "tCK", "activate to column command");
        v.value("tRP", tRP, pos, "tCK", "precharge period");
        v.value("tRAS", tRAS, pos, "tCK", "activate to precharge");
        v.value("tCCD_S", tCCD_S, pos, "tCK", "column to column, different bank group");
        v.value("tCCD_L", tCCD_L, pos, "tCK", "column to column, same bank group");
        v.value("tRRD_S", tRRD_S, pos, "tCK", "activate to activate, different bank group");
        v.value("tRRD_L", tRRD_L, pos, "tCK", "activate to activate, same bank group");
        v.value("tFAW", tFAW, nn, "tCK", "four-activate window");
        v.value("tWTR_S", tWTR_S, nn, "tCK", "write to read, different bank group");
        v.value("tWTR_L", tWTR_L, nn, "tCK", "write to read, same bank group");
        v.value("tRTW", tRTW, nn, "tCK", "read to write turnaround");
        v.value("tWR", tWR, nn, "tCK", "write recovery");
        v.value("tRTP", tRTP, nn, "tCK", "read to precharge");
        v.value("tREFI", tREFI, pos, "tCK", "refresh interval");
        v.value("tRFC", tRFC, nn, "tCK", "refresh cycle time");
    }
};

struct HbmConfig {
    // Organisation per chip: stacks -> channels -> pseudo-channels -> bank groups -> banks.
    std::int64_t stacks = 4;
    std::int64_t channels_per_stack = 8;
    std::int64_t pseudo_channels = 2;  // per channel (HBM2 pseudo-channel mode)
    std::int64_t bank_groups = 4;      // per pseudo-channel
    std::int64_t banks_per_group = 4;
    std::int64_t rows = 32768;              // per bank
    std::int64_t row_bytes = 1024;          // page size per pseudo-channel
    std::int64_t channel_width_bits = 128;  // per channel; a pseudo-channel has half
    double data_rate_mtps = 1757.8125;      // mega-transfers per second per pin
    HbmTimingConfig timing;
    // Controller.
    // Bank group below column: consecutive bursts on a pseudo-channel alternate bank groups, so a
    // stream is paced by tCCD_S rather than tCCD_L (docs/hbm.md).
    std::string address_mapping = "ro-ba-co-bg-pc-ch-st";
    std::int64_t read_queue_depth = 32;
    std::int64_t write_queue_depth = 32;
    double write_drain_high = 0.75;  // start draining writes at this queue fill
    double write_drain_low = 0.25;   // stop draining at this fill
    // Writes a drain serves before it hands the bus back to waiting reads (gem5's
    // min_writes_per_switch; 0: the watermarks alone). Calibrated in the board files
    // (docs/config.md, "Calibrated keys").
    std::int64_t writes_per_switch = 0;
    // Each TensorCore owns half of the chip's HBM; the other half is reached through the chip.
    std::int64_t remote_latency_cycles = 64;  // core cycles added to a remote access
    double remote_bandwidth_fraction = 0.5;   // of the remote half's peak a core can draw

    double clock_mhz() const { return data_rate_mtps / 2.0; }
    std::int64_t pseudo_channels_total() const { return channels() * pseudo_channels; }
    // Bytes one burst moves on a pseudo-channel (32 B for 64 bit x BL4).
    std::int64_t burst_bytes() const {
        return channel_width_bits / pseudo_channels / 8 * timing.burst_length;
    }
    std::int64_t channels() const { return stacks * channels_per_stack; }
    double peak_bytes_per_second() const {
        return static_cast<double>(channels() * channel_width_bits / 8) * data_rate_mtps * 1e6;
    }
    std::uint64_t capacity_bytes() const {
        return static_cast<std::uint64_t>(channels() * pseudo_channels * bank_groups *
                                          banks_per_group) *
               static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(row_bytes);
    }

    void visit(ConfigVisitor& v) {
        v.value("stacks", stacks, Limits::range(1, 16), "stacks", "HBM stacks per chip");
        v.value("channels_per_stack", channels_per_stack, Limits::pow2_max(64, kAddressBits),
                "channels", "channels per stack");
        v.value("pseudo_channels", pseudo_channels, Limits::pow2_max(4, kAddressBits),
                "pseudo-channels", "pseudo-channels per channel");
        v.value("bank_groups", bank_groups, Limits::pow2_max(16, kAddressBits), "bank groups",
                "bank groups per pseudo-channel");
        v.value("banks_per_group", banks_per_group, Limits::pow2_max(16, kAddressBits), "banks",
                "banks per bank group");
        v.value("rows", rows, Limits::pow2_max(1 << 20, kAddressBits), "rows", "rows per bank");
        v.value("row_bytes", row_bytes, Limits::pow2_max(1 << 16, kAddressBits), "B",
                "row (page) size per pseudo-channel");
        v.value("channel_width_bits", channel_width_bits, Limits::pow2_max(1024, kAddressBits),
                "bits", "data bus width per channel");
        v.value("data_rate_mtps", data_rate_mtps, Limits::range(100, 20000), "MT/s",
                "data rate per pin (the HBM clock is half of it)");
        v.section("timing", timing, "JEDEC HBM2 timing parameters");
        v.value(
            "address_mapping", address_mapping, {},
            "address bit order above the burst offset, most significant first (ro, ba, bg, co, pc, "
            "ch, st); the TensorCore that owns the address is above all of them");
        v.value("read_queue_depth", read_queue_depth, Limits::range(1, 4096), "requests",
                "read queue per pseudo-channel");
        v.value("write_queue_depth", write_queue_depth, Limits::range(1, 4096), "requests",
                "write queue per pseudo-channel");
        v.value("write_drain_high", write_drain_high, Limits::fraction(), "fraction",
                "write queue fill that starts a write drain");
        v.value("write_drain_low", write_drain_low, Limits::fraction(), "fraction",
                "write queue fill that ends a write drain");
        v.value("writes_per_switch", writes_per_switch, Limits::range(0, 1 << 20), "bursts",
                "writes a drain serves before it hands the bus back to waiting reads (0: until "
                "the low watermark)");
        v.value("remote_latency_cycles", remote_latency_cycles, Limits::range(0, 1e6), "cycles",
                "extra core cycles to reach the other core's half of the HBM");
        v.value("remote_bandwidth_fraction", remote_bandwidth_fraction, Limits::range(0.01, 1),
                "fraction", "share of the remote half's peak one core can draw");
    }
};

}  // namespace tpusim
