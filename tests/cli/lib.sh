# Shared by the CLI tests (tests/cli/*.sh), sourced after `set -u` with the tpusim binary as $1
# (`source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"`):
#   bin            the binary, as an absolute path
#   tmp            a scratch folder, removed when the test exits
#   hang           seconds a command may take before it counts as hung ($TPUSIM_HANG_SECONDS,
#                  default 300): a hang detector, not a time bound (each command takes seconds
#                  here and about 10x that under the sanitizers, on a machine that may be loaded)
#   fails, passes  counters
#   fail MSG...    prints "FAIL MSG" and counts a failure; the test goes on
#   fatal MSG...   prints "FAIL MSG" and ends the test with status 1
#   expect_error NAME WANT -- ARGS...
#                  `tpusim ARGS` must exit with status 2 within $hang seconds and print exactly
#                  one line of printable UTF-8, "error: ..." containing WANT (the CLI's rule for
#                  bad input), run in the folder $expect_cwd (default: the current one)
#   finish         prints the counts; its status is the test's (`finish` as the last line)
# shellcheck shell=bash
bin=$(realpath "$1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
hang=${TPUSIM_HANG_SECONDS:-300}
fails=0
passes=0
expect_cwd=.

fail() {
    echo "FAIL $*"
    fails=$((fails + 1))
}

fatal() {
    echo "FAIL $*"
    exit 1
}

expect_error() {
    local name=$1 want=$2
    shift 3
    local err rc lines printable=ok
    err=$(cd "$expect_cwd" && timeout "$hang" "$bin" "$@" 2>&1 >/dev/null)
    rc=$?
    lines=$(printf '%s\n' "$err" | grep -c .)
    # Printable: valid UTF-8 without control characters, whatever bytes the input held.
    if ! printf '%s' "$err" | iconv -f UTF-8 -t UTF-8 >/dev/null 2>&1 ||
        printf '%s' "$err" | LC_ALL=C grep -q '[[:cntrl:]]'; then
        printable=no
    fi
    if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ] || [[ "$err" != error:* ]] || [[ "$err" != *"$want"* ]] ||
        [ "$printable" != ok ]; then
        echo "FAIL $name: rc=$rc lines=$lines want '$want' got: $err"
        fails=$((fails + 1))
    else
        passes=$((passes + 1))
    fi
}

finish() {
    echo "$passes passed, $fails failed"
    [ "$fails" -eq 0 ]
}
