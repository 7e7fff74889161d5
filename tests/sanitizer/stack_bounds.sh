#!/usr/bin/env bash
# Sanitizer builds only (registered when TPUSIM_SANITIZE=ON). Checks, deterministically, the
# mechanism behind LeakSanitizer's "Tracer caught signal 11" at exit (see
# include/tpusim/common/sanitizer.h): after a SystemC simulation the main thread's stack bounds
# that ASan hands to the leak scan must contain the stack pointer. Before the fix they were the
# (unmapped, reused) stack of the last SC_THREAD that ended, and LSan logged "stack pointer not
# in stack range" before scanning foreign pages; whether that crashed depended on mmap
# placement, so a plain rerun could pass by luck. This check does not depend on luck.
# Usage: stack_bounds.sh path/to/tpusim path/to/tpusim_system_tests (run from the source root)
set -u
bin=$1
system_tests=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL $*"; exit 1; }
# log_threads makes the leak scan print each thread's stack range and whether SP lies in it.
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}verbosity=1:log_threads=1"

check() {
    local what=$1 log=$2
    grep -q "Processing thread" "$log" || fail "$what: no leak scan ran (is this an ASan build?)"
    if grep -q "stack pointer not in stack range" "$log"; then
        grep -E "Stack at|stack pointer|guard page" "$log" | head -n 4
        fail "$what: the leak scan was given a stack that is not the main thread's"
    fi
    echo "ok: $what"
}

# A system test whose SC_THREAD ends before sc_start returns (the case that went wrong).
"$system_tests" "Vpu module finishes programs at the VpuTiming cycle" > "$tmp/sys.log" 2>&1 ||
    { tail -n 20 "$tmp/sys.log"; fail "system test exited with $?"; }
check "system test process" "$tmp/sys.log"

# The CLI elaborates the whole board and runs a trace to its end.
"$bin" run --config configs/tpu_v3_8.json --trace traces/gemm.json --quiet > "$tmp/cli.log" 2>&1 ||
    { tail -n 20 "$tmp/cli.log"; fail "tpusim run exited with $?"; }
check "tpusim run process" "$tmp/cli.log"
# Inside the simulation too: a thread process that ended (the sequencer's, once its program was
# issued) left ASan on its stack, and the next thread's first call of a noreturn function
# logged "ignoring requested __asan_handle_no_return" (src/arch/core/sequencer.h: it parks now).
if grep -q "ignoring requested __asan_handle_no_return" "$tmp/cli.log"; then
    grep -A1 "ignoring requested" "$tmp/cli.log"
    fail "tpusim run process: ASan lost track of the running thread stack during the simulation"
fi
echo "ok: no stale stack bounds during the simulation"
