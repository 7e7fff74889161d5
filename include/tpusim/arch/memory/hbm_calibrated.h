#pragma once
// Calibrated transaction-level HBM model for whole-program runs.
//
// The burst-level model (HbmSystem: banks, JEDEC timing, FR-FCFS, refresh) is the reference.
// It costs about a microsecond of wall time per 32-byte burst, so a training step that moves
// tens of GB would take minutes. For `tpusim run` the chip's HBM is instead served as one
// FIFO transfer queue per TensorCore half, whose sustained read and write rates and idle
// latency are *measured* on the burst-level model for the same config when the simulator
// starts (streaming reads, streaming writes and one isolated access; once per config in the
// simulator's HbmCalibrationCache).
// Read/write turnaround between interleaved streams is charged from the measured copy rate:
// the bytes of a transfer that meet bytes of the other direction still queued on its half pay
// the turnaround a copy pays for both (transfer()). A core's transfers from the other half
// are paced at hbm.remote_bandwidth_fraction of that half's peak, as the burst-level model
// admits them.
// What it leaves out: bank conflicts of non-streaming patterns, refresh in the latency
// (docs/hbm.md) and interference between the two halves; `--set sim.hbm_model=burst` runs the
// reference instead. tests/unit/hbm_calibrated_test.cpp checks the two against each other on
// streaming traffic, local and remote; scripts/crosscheck_hbm.py on whole programs.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tpusim/common/types.h"
#include "tpusim/config/hbm_config.h"
#include "tpusim/stats/stats.h"

namespace tpusim {

struct HbmCalibration {
    double read_bytes_per_cycle = 0;  // per core half, core cycles, streaming
    double write_bytes_per_cycle = 0;
    // Streaming copy (every core reads one stream and writes another): bytes read plus
    // written per cycle. Below the read and write rates by the read/write turnaround of the
    // controller's write drains (docs/hbm.md).
    double copy_bytes_per_cycle = 0;
    Cycle read_latency = 0;  // an isolated access on an idle system, core cycles
    Cycle write_latency = 0;
    std::uint64_t calibration_bursts = 0;  // bursts the burst-level model simulated
};

// Runs the burst-level model: its independent runs on threads side by side (parallel) or one
// after another (the same numbers, bit for bit).
HbmCalibration measure_hbm(const HbmConfig& cfg, double core_clock_mhz, std::int64_t cores_per_chip,
                           bool parallel);

// What a calibration depends on, as text: the HBM config, the core clock and the cores per
// chip. Equal keys give equal calibrations.
std::string hbm_calibration_key(const HbmConfig& cfg, double core_clock_mhz,
                                std::int64_t cores_per_chip);

// Calibrations by key, each measured once per cache (on threads when this process may use more
// than one, TPUSIM_THREADS). The Simulator owns one and hands it to the board, whose chips share
// their entry. Thread-safe.
//
// On disk too (docs/hbm.md, "Calibration cache"): a calibration is a pure function of its key
// and of the burst-level model's code, so with `disk` on, one measured by this same binary
// (its path, size and modification time are part of the key) for the same key is read from
// the cache directory instead of measured again, and a new one is written there: the
// directory is $TPUSIM_CACHE_DIR, else $XDG_CACHE_HOME/tpusim, else $HOME/.cache/tpusim.
// A file is used only when its format, version and whole key match and every figure is a
// finite number in range; anything else (a damaged file, another binary's) is measured again
// and replaced. Files are written whole (a temporary file renamed), so parallel runs share
// the directory safely; one that cannot be written is silently skipped (the cache only saves
// time). TPUSIM_NO_CACHE=1 or `run --no-cache` turn it off; the figures are the same either
// way, bit for bit (tests/cli/hbm_cache.sh).
class HbmCalibrationCache {
 public:
    explicit HbmCalibrationCache(bool disk = false) : disk_(disk) {}
    // Contract: the reference stays valid while the cache lives.
    const HbmCalibration& get(const HbmConfig& cfg, double core_clock_mhz,
                              std::int64_t cores_per_chip);

 private:
    std::mutex mu_;
    std::map<std::string, HbmCalibration> entries_;
    bool disk_;
};

// The directory of the on-disk calibration cache ("" when none can be named, or when
// TPUSIM_NO_CACHE is set to anything but 0).
std::string hbm_cache_dir();

class HbmCalibratedModel {
 public:
    // `cal`: the calibration of this config (HbmCalibrationCache::get or measure_hbm).
    HbmCalibratedModel(const HbmConfig& cfg, double core_clock_mhz, std::int64_t cores_per_chip,
                       const HbmCalibration& cal);

    // A transfer of rows x row_bytes starting at `addr`, requested at `now` by a core of the
    // chip: returns the core cycle its last byte has landed. The half that owns `addr` serves
    // it; from the other core's half it also takes hbm.remote_latency_cycles more, and the
    // requesting core draws at most hbm.remote_bandwidth_fraction of that half's peak (its
    // remote transfers are paced one after another at that rate, as the burst-level model
    // admits their bursts).
    Cycle transfer(Addr addr, Bytes bytes, bool is_write, int requester, Cycle now);
    // The bytes `rows` rows of `row_bytes`, `stride` apart from `addr`, move through the HBM:
    // whole bursts, as the burst-level model moves them (a row that starts or ends inside a
    // burst costs all of it).
    Bytes bytes_moved(Addr addr, std::int64_t rows, Bytes row_bytes, Bytes stride) const;

    const HbmCalibration& calibration() const { return cal_; }
    StatGroup& stats() { return stats_; }
    // Registered in stats() as bytes_read and bytes_written.
    const std::uint64_t& bytes_read() const { return bytes_read_; }
    const std::uint64_t& bytes_written() const { return bytes_written_; }

 private:
    HbmConfig cfg_;
    HbmCalibration cal_;
    std::int64_t halves_;
    Bytes half_bytes_;
    int half_shift_ = -1;         // log2(half_bytes_) when a power of two
    std::vector<Cycle> free_at_;  // per half: when its queue drains
    // Per half x 2 + direction (1: write): when its last transfer's service ends, and its
    // queued bytes not yet interleaved with bytes of the other direction.
    std::vector<Cycle> until_;
    std::vector<Bytes> unpaired_;
    double turnaround_cycles_per_byte_ = 0;  // per byte of each direction a copy interleaves
    double remote_cycles_per_byte_ = 0;      // 1 / (remote_bandwidth_fraction x a half's peak)
    std::vector<double> remote_free_at_;     // per requesting core: its remote pacing ends
    // A transfer's service per byte by is_write, the bus not turning.
    double cycles_per_byte_[2] = {0, 0};
    std::uint64_t bytes_read_ = 0, bytes_written_ = 0, requests_ = 0, remote_requests_ = 0;
    std::uint64_t busy_cycles_ = 0;
    Bytes burst_bytes_ = 32;  // one pseudo-channel burst: channel width / pseudo-channels x BL
    StatGroup stats_{"hbm", "HBM of one chip (calibrated transaction model)"};
};

}  // namespace tpusim
