#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run):
#   1. scripts/setup.sh (missing Debian packages only)
#   2. build/ (RelWithDebInfo, -Werror) and ctest over every test: unit, system, CLI
#   3. fuzz smoke: every libFuzzer harness for FUZZ_SMOKE_SECONDS (scripts/fuzz.sh, build-fuzz/)
#   4. build-asan/ (AddressSanitizer + UndefinedBehaviorSanitizer, -O1) and ctest again
# Exits non-zero if any build or test fails or a fuzzer finds anything. Wall times of the parts
# are printed at the end. CI's budget is 20 min; a fresh clone on 2 cores without ccache took
# 677 s (2026-11-27: normal part 191 s with a 108 s build, fuzz smoke 146 s with an 81 s build,
# ASan+UBSan part 340 s with a 210 s build; 1310 s of CPU in all), and 792 s in a second run
# on a shared machine (187 s, 165 s, 440 s). About half is compiling:
# keep new sources in the unity batches (CMakeLists.txt, TPUSIM_UNITY_BUILD).
#
# Environment:
#   JOBS=N             parallel build and test jobs (default: nproc)
#   TPUSIM_SKIP_FUZZ=1 skip part 3 (quick local runs; CI never sets it)
#   FUZZ_SMOKE_SECONDS=N  seconds per harness in part 3 (default 15; two harnesses at a time)
#   TPUSIM_SKIP_ASAN=1 skip part 4 (quick local runs; CI never sets it)
#   ASAN_EXCLUDE=REGEX ctest names not run under the sanitizers. Default: system tests whose
#                      Catch2 name ends in "(slow)" — give a system TEST_CASE that suffix when it
#                      takes more than ~10 s under ASan, so that CI stays within its 20 min,
#                      and the whole-model HLO replays (label hlo_replay).
#   SYSTEM_REPEAT=N    runs of each SystemC system test under the sanitizers (default 3)
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
# -g1 (line tables: file:line in backtraces, no variable info) compiles ~30% faster than
# RelWithDebInfo's -g (run.cpp: 9.4 s against 13.2 s of CPU), and compiling is most of CI.
bash scripts/build.sh -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
normal_build_s=$((SECONDS - start))
ctest --test-dir build --output-on-failure -j "$JOBS"
normal_s=$((SECONDS - start))

# --- fuzz smoke -----------------------------------------------------------------------------
# A short run of every harness from the seed corpus: a regression that a fuzzer finds within
# seconds cannot land (docs/fuzzing.md; scripts/fuzz.sh 600 is the long run).
fuzz_s=skipped
if [[ "${TPUSIM_SKIP_FUZZ:-0}" != "1" ]]; then
    start=$SECONDS
    bash scripts/fuzz.sh "${FUZZ_SMOKE_SECONDS:-15}"
    fuzz_s="$((SECONDS - start)) s"
fi

if [[ "${TPUSIM_SKIP_ASAN:-0}" == "1" ]]; then
    echo "test.sh: normal part ${normal_s} s (build ${normal_build_s} s); fuzz smoke ${fuzz_s};" \
         "sanitizer part skipped (TPUSIM_SKIP_ASAN=1)"
    exit 0
fi

# --- ASan + UBSan build -------------------------------------------------------------------
# Every sanitizer option, and why:
#   detect_leaks=1          LeakSanitizer on in every process, the SystemC ones included. It
#                           works there because sc_main re-announces the main stack to ASan after
#                           the simulation (include/tpusim/common/sanitizer.h: SystemC ends a
#                           thread process without the fiber annotation, so the exit-time scan
#                           was handed a dead coroutine's stack and crashed in its tracer);
#                           tests/sanitizer/stack_bounds.sh checks that mechanism directly.
#   abort_on_error=0        a report exits with an error status instead of SIGABRT, so ctest
#                           prints the report and goes on with the other tests.
#   strict_string_checks=1  str* interceptors check the whole string, not only the bytes read.
#   suppressions=...        tests/sanitizer/lsan.supp: libsystemc-only frames (none needed today;
#                           the file says how to add one without hiding tpusim's own leaks).
#   print_suppressions=0    keeps the log to the reports that matter.
#   print_stacktrace=1      UBSan prints where the undefined behaviour happened.
#   halt_on_error=1         UBSan stops at the first error (with -fno-sanitize-recover in
#                           CMakeLists.txt), so a test cannot pass after undefined behaviour.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1"
export LSAN_OPTIONS="suppressions=$root/tests/sanitizer/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# catch_discover_tests names system tests "system:<Catch2 name>" (no space after the colon).
# The whole-model HLO replays (about a minute in the normal build) exercise the reader and the
# lowering that the HLO tests and the fuzz replays already run under the sanitizers, on inputs
# 10-100x larger: under ASan they would take most of CI's budget, so they run in the normal
# build only.
ASAN_EXCLUDE=${ASAN_EXCLUDE:-'^system:.*\(slow\)$|^cli: hlo whole-model replays$|^cli: hlo mobilenet replay$'}
# SystemC system tests run SYSTEM_REPEAT times each under the sanitizers (stop at the first
# failure): a failure that comes and goes, as the exit-time leak scan did, shows up in CI
# rather than in a user's run.
SYSTEM_REPEAT=${SYSTEM_REPEAT:-3}

start=$SECONDS
# A Debug build type keeps assertions on; -O1 keeps the sanitized tests fast enough; -g1
# (line tables only) keeps file:line in sanitizer stacks and compiles faster than -g.
BUILD_DIR=build-asan bash scripts/build.sh -DTPUSIM_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1"
asan_build_s=$((SECONDS - start))
ctest --test-dir build-asan --output-on-failure -j "$JOBS" -E "$ASAN_EXCLUDE|^system:"
ctest --test-dir build-asan --output-on-failure -j "$JOBS" -R '^system:' -E "$ASAN_EXCLUDE" \
    --repeat "until-fail:$SYSTEM_REPEAT"
asan_s=$((SECONDS - start))

echo "test.sh: all passed; normal part ${normal_s} s (build ${normal_build_s} s)," \
     "fuzz smoke ${fuzz_s}, ASan+UBSan part ${asan_s} s (build ${asan_build_s} s)" \
     "(system tests ${SYSTEM_REPEAT}x under ASan; excluded: /${ASAN_EXCLUDE}/); ${SECONDS} s in all"
