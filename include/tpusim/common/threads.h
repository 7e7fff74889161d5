#pragma once
// How many threads one tpusim process may keep busy at once. Work that can run side by side in
// one process (today: the HBM calibration's four burst-level runs) uses at most this many.
//
// The environment variable TPUSIM_THREADS sets it (a positive integer); unset, it is the
// machine's hardware threads. `tpusim sweep -j N` sets it to max(1, cores / N) in its workers,
// so N worker processes do not each try to use the whole machine.
namespace tpusim {

// Throws InputError naming TPUSIM_THREADS when it is set to anything but an integer in
// [1, 4096].
int worker_threads();

}  // namespace tpusim
