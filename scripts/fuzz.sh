#!/usr/bin/env bash
# Coverage-guided fuzzing of the input readers (docs/fuzzing.md).
#   scripts/fuzz.sh [SECONDS]     (default 60 seconds per harness)
# Builds the libFuzzer harnesses into build-fuzz/ (clang, ASan + UBSan, only the layer libraries
# they link), runs each for SECONDS, and prints executions/s and coverage per harness. Exits
# non-zero when any harness found a crash, a leak, undefined behaviour, a timeout or an
# out-of-memory; the input that did it is kept in tests/fuzz/regressions/<harness>/ (minimised
# when it is a crash), where the normal build's "fuzz: replay" tests run it from then on.
#
# Per harness, libFuzzer reads the committed seeds (tests/fuzz/corpus/<harness>/) and its
# working corpus build-fuzz/corpus/<harness>/, which keeps what earlier runs found; after the
# run the working corpus is merged (-merge=1) into a minimal set with the same coverage.
#
# Environment:
#   FUZZ_HARNESSES="config trace ..."  the harnesses to run (default: all)
#   FUZZ_PARALLEL=N                    harnesses run at once (default 2)
#   FUZZ_FORK=N                        libFuzzer's fork mode, N jobs per harness, going on
#                                      past findings (default 0: one process per harness).
#                                      A long run on a big machine: FUZZ_FORK=3 FUZZ_PARALLEL=6
#   JOBS=N                             parallel build jobs (default: nproc)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)
seconds=${1:-60}
harnesses=(${FUZZ_HARNESSES:-config trace trace_sim hlo sweep_spec run_description})
parallel=${FUZZ_PARALLEL:-2}
fork_args=()
if ((${FUZZ_FORK:-0} > 0)); then
    fork_args=(-fork="$FUZZ_FORK" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
fi
out=build-fuzz

targets=""
for h in "${harnesses[@]}"; do targets+="fuzz_$h "; done
# -O1 and line tables only, as the sanitizer build: fast enough to fuzz, quick to compile.
build_start=$SECONDS
CXX=${FUZZ_CXX:-clang++} BUILD_DIR=$out TARGETS="$targets" bash scripts/build.sh \
    -DTPUSIM_FUZZ=ON -DTPUSIM_BUILD_TESTS=OFF -DTPUSIM_WERROR=OFF -DCMAKE_BUILD_TYPE=Debug \
    "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -gline-tables-only" >/dev/null
build_s=$((SECONDS - build_start))

export SC_COPYRIGHT_MESSAGE=DISABLE TPUSIM_SOURCE_DIR="$root"
export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1"
export LSAN_OPTIONS="suppressions=$root/tests/sanitizer/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

dict_of() { [[ $1 == hlo ]] && echo tests/fuzz/hlo.dict || echo tests/fuzz/json.dict; }

# One harness: run, keep the finding, merge the corpus. Writes $out/logs/<h>.log.
fuzz_one() {
    local h=$1 bin=$out/tests/fuzz/fuzz_$1 log=$out/logs/$1.log
    local work=$out/corpus/$h art=$out/artifacts/$h/
    mkdir -p "$work" "$art" "$out/logs"
    local rc=0
    nice -n 10 "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -dict="$(dict_of "$h")" -artifact_prefix="$art" -print_final_stats=1 \
        -detect_leaks=1 "${fork_args[@]}" "$work" "tests/fuzz/corpus/$h" >"$log" 2>&1 || rc=$?
    # Findings go to the regressions the normal build replays; crashes minimised first.
    for f in "$art"crash-* "$art"leak-* "$art"timeout-* "$art"oom-*; do
        [[ -f $f ]] || continue
        mkdir -p "tests/fuzz/regressions/$h"
        local keep
        keep="tests/fuzz/regressions/$h/$(basename "$f")"
        if [[ $(basename "$f") == crash-* ]]; then
            "$bin" -minimize_crash=1 -max_total_time=60 -timeout=10 -exact_artifact_path="$keep" \
                "$f" >>"$out/logs/$h.minimize.log" 2>&1 || true
        fi
        [[ -f $keep ]] || cp "$f" "$keep"
        rm -f "$f"
        echo "fuzz: $h: kept $keep" >>"$log"
        # Fork mode goes on past a finding and may exit 0: a kept input is a finding.
        [[ $rc != 0 ]] || rc=1
    done
    # The working corpus, minimised: the inputs that reach new coverage.
    local merged=$out/corpus/$h.merged
    rm -rf "$merged" && mkdir -p "$merged"
    if "$bin" -merge=1 -timeout=10 -rss_limit_mb=2048 "$merged" "$work" \
        >"$out/logs/$h.merge.log" 2>&1; then
        rm -rf "$work" && mv "$merged" "$work"
    fi
    echo "$rc" >"$out/logs/$h.rc"
}

rm -f "$out"/logs/*.rc
running=0
for h in "${harnesses[@]}"; do
    fuzz_one "$h" &
    running=$((running + 1))
    if ((running >= parallel)); then
        wait -n || true
        running=$((running - 1))
    fi
done
wait || true

# Summary from libFuzzer's last status line and final stats.
status=0
printf '%-15s %8s %8s %10s %10s %8s  %s\n' harness exec/s cov ft execs rss_mb result
for h in "${harnesses[@]}"; do
    log=$out/logs/$h.log
    rc=$(cat "$out/logs/$h.rc" 2>/dev/null || echo 1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -n 1)
    # Fork mode prints no final stats: its last status line has the runs and the rate.
    [[ -n $runs ]] || runs=$(sed -n 's/^#\([0-9]*\):.*/\1/p' <<<"$last")
    [[ -n $eps ]] || eps=$(sed -n 's/.* exec\/s \([0-9]*\).*/\1/p' <<<"$last")
    result=ok
    if [[ $rc != 0 ]]; then
        result="FINDING (exit $rc): $(grep -m1 -E '^==[0-9]+==ERROR|^SUMMARY|runtime error|fuzz: ' \
            "$log" || echo "see $log")"
        status=1
    fi
    printf '%-15s %8s %8s %10s %10s %8s  %s\n' "$h" "${eps:--}" "${cov:--}" "${ft:--}" \
        "${runs:--}" "${rss:--}" "$result"
done
echo "fuzz: ${seconds} s per harness (build ${build_s} s, ${SECONDS} s in all); logs in $out/logs/," \
     "findings in tests/fuzz/regressions/"
exit $status
