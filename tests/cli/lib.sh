# Shared by the CLI tests (tests/cli/*.sh), sourced after `set -u` with the tpusim binary as $1:
#   bin            the binary, as an absolute path
#   tmp            a scratch folder, removed when the test exits
#   fails, passes  counters
#   expect_error NAME WANT -- ARGS...
#                  `tpusim ARGS` must exit with status 2 and print exactly one line,
#                  "error: ..." containing WANT (the CLI's rule for bad input), run in the folder
#                  $expect_cwd (default: the current one)
#   finish         prints the counts; its status is the test's (`finish` as the last line)
# shellcheck shell=bash
bin=$(realpath "$1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
passes=0
expect_cwd=.

expect_error() {
    local name=$1 want=$2
    shift 3
    local err rc lines
    err=$(cd "$expect_cwd" && "$bin" "$@" 2>&1 >/dev/null)
    rc=$?
    lines=$(printf '%s\n' "$err" | grep -c .)
    if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ] || [[ "$err" != error:* ]] || [[ "$err" != *"$want"* ]]; then
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
