#include "tpusim/arch/memory/hbm_calibrated.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

#include "tpusim/arch/memory/dma_chunker.h"
#include "tpusim/arch/memory/hbm_system.h"
#include "tpusim/arch/memory/hbm_traffic.h"
#include "tpusim/common/threads.h"
#include "tpusim/config/tpu_config.h"

namespace tpusim {

namespace {

// Core cycles from submit to completion of one isolated access on an idle system.
Cycle isolated_latency(const HbmConfig& cfg, double clock_mhz, std::int64_t cores, bool write) {
    HbmSystem hbm(cfg, clock_mhz, static_cast<std::uint32_t>(cores));
    HbmRequest r;
    r.addr = 0;
    r.bytes = static_cast<Bytes>(cfg.channel_width_bits / cfg.pseudo_channels / 8 *
                                 cfg.timing.burst_length);
    r.is_write = write;
    r.requester = 0;
    r.tag = 1;
    const Cycle done = run_isolated(hbm, r, 0);
    return done == kNever ? 0 : done;
}

double streaming_rate(const HbmConfig& cfg, double clock_mhz, std::int64_t cores,
                      HbmTraffic::Kind kind, std::uint64_t& bursts) {
    HbmSystem hbm(cfg, clock_mhz, static_cast<std::uint32_t>(cores));
    HbmTraffic t;
    t.kind = kind;
    t.cores.clear();
    for (std::int64_t c = 0; c < cores; ++c) t.cores.push_back(static_cast<int>(c));
    // Long enough to cover a refresh interval on every channel (tREFI ~ 4 us at 900 GB/s is
    // ~3.5 MB per chip).
    t.bytes_per_core = 4 * kMiB;
    const HbmTrafficResult r = run_hbm_traffic(hbm, t, clock_mhz);
    bursts += r.bursts;
    const double bytes =
        static_cast<double>((kind == HbmTraffic::Kind::Read ? 0 : r.bytes_written) +
                            (kind == HbmTraffic::Kind::Write ? 0 : r.bytes_read));
    return bytes / static_cast<double>(std::max<Cycle>(r.cycles, 1)) / static_cast<double>(cores);
}

}  // namespace

std::string hbm_calibration_key(const HbmConfig& cfg, double core_clock_mhz,
                                std::int64_t cores_per_chip) {
    TpuConfig holder;
    holder.hbm = cfg;
    holder.chip.clock_mhz = core_clock_mhz;
    holder.chip.cores_per_chip = cores_per_chip;
    const nlohmann::json j = config_to_json(holder);
    return j["hbm"].dump() + j["chip"].dump();
}

std::string hbm_cache_dir() {
    const char* off = std::getenv("TPUSIM_NO_CACHE");
    if (off && *off && std::string(off) != "0") return "";
    if (const char* d = std::getenv("TPUSIM_CACHE_DIR"); d && *d) return d;
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/tpusim";
    if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/tpusim";
    return "";
}

namespace {

constexpr const char* kCacheFormat = "tpusim.hbm_calibration";
constexpr int kCacheVersion = 1;

// The binary that measures: its path, size and modification time. A calibration depends on
// the burst-level model's code as much as on its config, so another build never reuses it.
std::string binary_identity() {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return "";
    const auto size = fs::file_size(exe, ec);
    if (ec) return "";
    const auto mtime = fs::last_write_time(exe, ec);
    if (ec) return "";
    return fmt::format("{} {} {}", exe.string(), size, mtime.time_since_epoch().count());
}

std::string cache_file(const std::string& dir, const std::string& key) {
    return fmt::format("{}/hbm-{:016x}.json", dir, std::hash<std::string>{}(key));
}

std::optional<HbmCalibration> read_cached(const std::string& path, const std::string& key) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_object() || j.value("format", "") != kCacheFormat ||
        j.value("version", 0) != kCacheVersion || j.value("key", "") != key)
        return std::nullopt;
    auto rate = [&](const char* k, double& out) {
        const auto it = j.find(k);
        if (it == j.end() || !it->is_number()) return false;
        out = it->get<double>();
        return std::isfinite(out) && out > 0;
    };
    auto count = [&](const char* k, auto& out) {
        const auto it = j.find(k);
        if (it == j.end() || !it->is_number_unsigned()) return false;
        out = it->get<std::decay_t<decltype(out)>>();
        return true;
    };
    HbmCalibration c;
    if (!rate("read_bytes_per_cycle", c.read_bytes_per_cycle) ||
        !rate("write_bytes_per_cycle", c.write_bytes_per_cycle) ||
        !rate("copy_bytes_per_cycle", c.copy_bytes_per_cycle) ||
        !count("read_latency", c.read_latency) || !count("write_latency", c.write_latency) ||
        !count("calibration_bursts", c.calibration_bursts))
        return std::nullopt;
    return c;
}

void write_cached(const std::string& dir, const std::string& path, const std::string& key,
                  const HbmCalibration& c) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return;
    const nlohmann::json j = {{"format", kCacheFormat},
                              {"version", kCacheVersion},
                              {"key", key},
                              {"read_bytes_per_cycle", c.read_bytes_per_cycle},
                              {"write_bytes_per_cycle", c.write_bytes_per_cycle},
                              {"copy_bytes_per_cycle", c.copy_bytes_per_cycle},
                              {"read_latency", c.read_latency},
                              {"write_latency", c.write_latency},
                              {"calibration_bursts", c.calibration_bursts}};
    // Written whole, then renamed over the name: a reader sees the old file or the new one.
    const std::string tmp = fmt::format("{}.{}.{:x}.tmp", path, ::getpid(),
                                        std::hash<std::thread::id>{}(std::this_thread::get_id()));
    {
        std::ofstream out(tmp);
        if (!out) return;
        out << j.dump() << '\n';
        if (!out) {
            out.close();
            fs::remove(tmp, ec);
            return;
        }
    }
    fs::rename(tmp, path, ec);
    if (ec) fs::remove(tmp, ec);
}

}  // namespace

const HbmCalibration& HbmCalibrationCache::get(const HbmConfig& cfg, double core_clock_mhz,
                                               std::int64_t cores_per_chip) {
    const std::string key = hbm_calibration_key(cfg, core_clock_mhz, cores_per_chip);
    // Read (and a bad value rejected) whether or not the calibration is measured.
    const bool parallel = worker_threads() > 1;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) return it->second;
    const std::string dir = disk_ ? hbm_cache_dir() : std::string();
    const std::string id = dir.empty() ? std::string() : binary_identity();
    if (!id.empty()) {
        const std::string full = fmt::format("{}\n{}", key, id);
        const std::string path = cache_file(dir, full);
        if (std::optional<HbmCalibration> c = read_cached(path, full))
            return entries_.emplace(key, *c).first->second;
        const HbmCalibration c = measure_hbm(cfg, core_clock_mhz, cores_per_chip, parallel);
        write_cached(dir, path, full, c);
        return entries_.emplace(key, c).first->second;
    }
    // Side by side when this process may use more than one thread (TPUSIM_THREADS): the same
    // numbers either way.
    return entries_.emplace(key, measure_hbm(cfg, core_clock_mhz, cores_per_chip, parallel))
        .first->second;
}

HbmCalibration measure_hbm(const HbmConfig& cfg, double core_clock_mhz, std::int64_t cores_per_chip,
                           bool parallel) {
    // Five independent runs of the burst-level model, each on its own HbmSystem: run side by
    // side they give the same numbers (measure_hbm(..., false) is the serial reference,
    // tests/unit/hbm_calibrated_test.cpp).
    HbmCalibration c;
    using K = HbmTraffic::Kind;
    std::uint64_t bursts[3] = {0, 0, 0};
    std::vector<std::function<void()>> runs = {
        [&] {
            c.read_bytes_per_cycle =
                streaming_rate(cfg, core_clock_mhz, cores_per_chip, K::Read, bursts[0]);
        },
        [&] {
            c.write_bytes_per_cycle =
                streaming_rate(cfg, core_clock_mhz, cores_per_chip, K::Write, bursts[1]);
        },
        [&] {
            c.copy_bytes_per_cycle =
                streaming_rate(cfg, core_clock_mhz, cores_per_chip, K::Copy, bursts[2]);
        },
        [&] {
            c.read_latency = isolated_latency(cfg, core_clock_mhz, cores_per_chip, false);
            c.write_latency = isolated_latency(cfg, core_clock_mhz, cores_per_chip, true);
        }};
    if (parallel) {
        // The longest run (the copy) on this thread, the others beside it.
        std::vector<std::thread> threads;
        for (std::size_t r = 0; r < runs.size(); ++r) {
            if (r != 2) threads.emplace_back(runs[r]);
        }
        runs[2]();
        for (auto& t : threads) t.join();
    } else {
        for (auto& r : runs) r();
    }
    c.calibration_bursts = bursts[0] + bursts[1] + bursts[2];
    return c;
}

HbmCalibratedModel::HbmCalibratedModel(const HbmConfig& cfg, double core_clock_mhz,
                                       std::int64_t cores_per_chip, const HbmCalibration& cal)
    : cfg_(cfg),
      cal_(cal),
      halves_(cores_per_chip),
      half_bytes_(cfg.capacity_bytes() / static_cast<Bytes>(cores_per_chip)),
      free_at_(static_cast<std::size_t>(cores_per_chip), 0),
      until_(static_cast<std::size_t>(cores_per_chip) * 2, 0),
      unpaired_(static_cast<std::size_t>(cores_per_chip) * 2, 0),
      remote_free_at_(static_cast<std::size_t>(cores_per_chip), 0.0),
      burst_bytes_(std::max<Bytes>(static_cast<Bytes>(cfg.channel_width_bits / cfg.pseudo_channels /
                                                      8 * cfg.timing.burst_length),
                                   1)) {
    // A half's peak in bytes per core cycle; a core reading the other half draws at most
    // remote_bandwidth_fraction of it (the burst-level model's admission rate, hbm_system.cpp).
    const double half_peak =
        cfg.peak_bytes_per_second() / static_cast<double>(cores_per_chip) / (core_clock_mhz * 1e6);
    if (half_peak > 0) remote_cycles_per_byte_ = 1.0 / (cfg.remote_bandwidth_fraction * half_peak);
    // A copy moves B read and B written in 2B / copy_rate cycles instead of B / read_rate +
    // B / write_rate: the difference, per byte of either direction, is what a transfer pays
    // when it turns the bus around (transfer()).
    if (cal_.copy_bytes_per_cycle > 0) {
        turnaround_cycles_per_byte_ =
            std::max(0.0, (2.0 / cal_.copy_bytes_per_cycle - 1.0 / cal_.read_bytes_per_cycle -
                           1.0 / cal_.write_bytes_per_cycle) /
                              2.0);
    }
    if (half_bytes_ > 0 && (half_bytes_ & (half_bytes_ - 1)) == 0) {
        half_shift_ = 0;
        while ((Bytes{1} << half_shift_) != half_bytes_) ++half_shift_;
    }
    cycles_per_byte_[0] = 1.0 / cal_.read_bytes_per_cycle;
    cycles_per_byte_[1] = 1.0 / cal_.write_bytes_per_cycle;
    stats_.counter("bytes_read", bytes_read_, "B", "bytes read (whole bursts)");
    stats_.counter("bytes_written", bytes_written_, "B", "bytes written (whole bursts)");
    stats_.counter("requests", requests_, "requests", "transfers served");
    stats_.counter("remote_requests", remote_requests_, "requests",
                   "transfers to the other core's half");
    stats_.counter("busy_cycles", busy_cycles_, "cycles",
                   "core cycles the halves spent transferring, summed over halves");
    stats_.formula(
        "calibrated_read_bytes_per_cycle", [this] { return cal_.read_bytes_per_cycle; }, "B/cycle",
        "sustained streaming read rate of one half, from the burst-level model");
    stats_.formula(
        "calibrated_copy_bytes_per_cycle", [this] { return cal_.copy_bytes_per_cycle; }, "B/cycle",
        "sustained streaming copy rate (read + written) of one half");
    stats_.formula(
        "calibrated_write_bytes_per_cycle", [this] { return cal_.write_bytes_per_cycle; },
        "B/cycle", "sustained streaming write rate of one half, from the burst-level model");
}

Bytes HbmCalibratedModel::bytes_moved(Addr addr, std::int64_t rows, Bytes row_bytes,
                                      Bytes stride) const {
    return strided_bursts(addr, rows, row_bytes, stride, burst_bytes_) * burst_bytes_;
}

Cycle HbmCalibratedModel::transfer(Addr addr, Bytes bytes, bool is_write, int requester,
                                   Cycle now) {
    // A shift where a half is a power of two bytes (every shipped config): the same quotient
    // without a 64-bit division per transfer.
    const Addr index =
        half_shift_ >= 0 ? addr >> half_shift_ : addr / std::max<Bytes>(half_bytes_, 1);
    const auto half =
        static_cast<std::size_t>(std::min<Addr>(index, static_cast<Addr>(halves_ - 1)));
    const bool remote = requester >= 0 && static_cast<std::size_t>(requester) != half;
    const Cycle start = std::max(now, free_at_[half]);
    // Reads and writes queued together on a half interleave in the controller, which turns
    // the bus between its batches of each (hbm.writes_per_switch, the drain watermarks). A copy
    // pays turnaround_cycles_per_byte_ on every byte of both directions, so each byte of this
    // transfer that meets a byte of the other direction still queued (not yet met by another)
    // pays it for the two; a lone stream, or the part of one beyond the other's bytes, pays
    // nothing. Bytes whose service has ended are no longer queued.
    const std::size_t d = half * 2 + (is_write ? 1 : 0), other = half * 2 + (is_write ? 0 : 1);
    if (until_[other] <= now) unpaired_[other] = 0;
    if (until_[d] <= now) unpaired_[d] = 0;
    const Bytes paired = std::min(bytes, unpaired_[other]);
    unpaired_[other] -= paired;
    unpaired_[d] += bytes - paired;
    // std::ceil without the library call: the same for every product below 2^63.
    const double exact = static_cast<double>(bytes) * cycles_per_byte_[is_write ? 1 : 0] +
                         static_cast<double>(2 * paired) * turnaround_cycles_per_byte_;
    auto service = static_cast<Cycle>(exact);
    if (static_cast<double>(service) < exact) ++service;
    free_at_[half] = start + service;
    until_[d] = free_at_[half];
    busy_cycles_ += service;
    ++requests_;
    if (remote) ++remote_requests_;
    (is_write ? bytes_written_ : bytes_read_) += bytes;
    Cycle served = free_at_[half];
    if (remote && static_cast<std::size_t>(requester) < remote_free_at_.size()) {
        // The requester's remote share paces its bytes: they have all crossed no earlier than
        // its remote transfers before them plus these bytes at that share.
        double& paced = remote_free_at_[static_cast<std::size_t>(requester)];
        paced = std::max(paced, static_cast<double>(now)) +
                static_cast<double>(bytes) * remote_cycles_per_byte_;
        served = std::max(served, static_cast<Cycle>(std::ceil(paced)));
    }
    const Cycle latency = (is_write ? cal_.write_latency : cal_.read_latency) +
                          (remote ? static_cast<Cycle>(cfg_.remote_latency_cycles) : 0);
    return served + latency;
}

}  // namespace tpusim
