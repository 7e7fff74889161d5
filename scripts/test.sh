#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run):
#   1. scripts/setup.sh (missing Debian packages only)
#   2. build/ (RelWithDebInfo, -Werror) and ctest over every test: unit, system, CLI
#   3. build-asan/ (AddressSanitizer + UndefinedBehaviorSanitizer, -O1) and ctest again
# Exits non-zero if any build or test fails. Wall times of both parts are printed at the end.
#
# Environment:
#   JOBS=N             parallel build and test jobs (default: nproc)
#   TPUSIM_SKIP_ASAN=1 skip part 3 (quick local runs; CI never sets it)
#   ASAN_EXCLUDE=REGEX ctest names not run under the sanitizers. Default: system tests whose
#                      Catch2 name ends in "(slow)" — give a system TEST_CASE that suffix when it
#                      takes more than ~10 s under ASan, so the suite stays within CI's 15 min.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)
JOBS=${JOBS:-$(nproc)}
export JOBS
# No SystemC banner from the test discovery that runs at build time.
export SC_COPYRIGHT_MESSAGE=DISABLE

bash scripts/setup.sh

# --- normal build -------------------------------------------------------------------------
start=$SECONDS
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$JOBS"
normal_s=$((SECONDS - start))

if [[ "${TPUSIM_SKIP_ASAN:-0}" == "1" ]]; then
    echo "test.sh: normal part ${normal_s} s; sanitizer part skipped (TPUSIM_SKIP_ASAN=1)"
    exit 0
fi

# --- ASan + UBSan build -------------------------------------------------------------------
# Leak checks are on; libsystemc's own allocations that live until exit are suppressed
# (tests/sanitizer/lsan.supp, limited to libsystemc frames). UBSan stops at the first error
# (-fno-sanitize-recover in CMakeLists.txt) and prints its stack.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1"
export LSAN_OPTIONS="suppressions=$root/tests/sanitizer/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ASAN_EXCLUDE=${ASAN_EXCLUDE:-'^system: .*\(slow\)$'}

start=$SECONDS
# A Debug build type keeps assertions on; -O1 keeps the sanitized tests fast enough; -g1
# (line tables only) keeps file:line in sanitizer stacks and compiles faster than -g.
BUILD_DIR=build-asan bash scripts/build.sh -DTPUSIM_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1"
ctest --test-dir build-asan --output-on-failure -j "$JOBS" -E "$ASAN_EXCLUDE"
asan_s=$((SECONDS - start))

echo "test.sh: all passed; normal part ${normal_s} s, ASan+UBSan part ${asan_s} s" \
     "(excluded under ASan: /${ASAN_EXCLUDE}/)"
