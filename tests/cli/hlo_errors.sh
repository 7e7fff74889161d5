#!/usr/bin/env bash
# Every malformed HLO file in tests/data/hlo_bad/ gets exit status 2 and exactly one line
# "error: <file>:<line>:<column>: <what>" (or "error: <file>: ..." where no position applies),
# never a crash, a signal or a hang, through every command that reads HLO (docs/hlo.md,
# "Errors and warnings"). Usage: hlo_errors.sh path/to/tpusim (run from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# A hang detector, not a time bound: each command takes seconds here and about 10x that
# under the sanitizers, on a machine that may be loaded (TPUSIM_HANG_SECONDS overrides).
v3=configs/tpu_v3_8.json
dir=tests/data/hlo_bad

# expect NAME WANT: the file's error line must contain WANT (after "error: <file>").
expect() {
    local f=$dir/$1.hlo want=$2 cmd err rc lines
    [ -f "$f" ] || { echo "FAIL $1: $f is missing"; fails=$((fails + 1)); return; }
    for cmd in "run --config $v3 -q --hlo" "trace check --hlo" "import hlo"; do
        # shellcheck disable=SC2086
        err=$(timeout "$hang" "$bin" $cmd "$f" 2>&1 >/dev/null)
        rc=$?
        lines=$(printf '%s\n' "$err" | grep -c .)
        if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ] || [[ "$err" != "error: $f"* ]] ||
            [[ "$err" != *"$want"* ]]; then
            echo "FAIL $cmd $1: rc=$rc lines=$lines want '$want' got: $err"
            fails=$((fails + 1))
        else
            passes=$((passes + 1))
        fi
    done
}

expect truncated ":6:1: expected an operand name, found the end of the file"
expect unbalanced_layout ":4:16: expected the layout"
expect unclosed_computation ":3:7: computation e is not closed"
expect bad_type ":4:7: expected a shape"
expect bad_dims ":4:13: expected a dimension"
expect huge_dim ":4:11: dimension 9999999999999 is absurdly large"
expect truncated_mid ":6:1: expected ')' to close the operand list"
expect unbalanced_attr ":5:39: unbalanced '{': the file ends before its '}'"
expect huge_shape "more than 2^62 elements"
# Shardings of a module the SPMD partitioning pass partitions (docs/hlo.md).
expect spmd_device_count ":5:38: bad sharding {devices=[4,1]<=[4]}: it names 4 devices but num_partitions is 8"
expect spmd_sharding_text ":5:38: bad sharding {devices=[8;1]<=[8]}: expected ']'"
expect unknown_computation ":6:48: to_apply=%nope: no computation named nope"
expect call_cycle "a cycle through calls"
expect unknown_operand ":5:26: unknown operand z"
expect unknown_opcode ":5:8: unknown opcode frobnicate"
expect unterminated_string "unterminated string"
expect unknown_trip_count ":14:8: cannot find the trip count of while w"
expect two_modules ":8:1: a second HloModule in one file"
expect duplicate_name ":5:3: duplicate instruction name x"
expect bad_dot_dims "rhs_contracting_dims: dimension 5 is outside"
expect replica_out_of_range "names device 9 but the program runs on 4 cores"
expect empty ":1:1: expected a computation, found the end of the file"
expect extra_brace ":6:2: expected a computation name"
expect binary ":1:1: expected a computation name"
expect too_many_cores "program for 16 devices"
# Found while writing the fuzz harnesses (docs/limits.md; tests/fuzz/regressions/hlo/): each
# once crashed (stack overflow, signed overflow) or ran without end.
expect tuple_nesting ":4:77: tuple shapes nested deeper than 64 levels"
expect call_depth "computations call each other more than 64 levels deep"
expect call_fan_out "the module expands to more than 1048576 instructions"
expect huge_trip_count "while w runs more than 2^40 trips"
expect memory_space "expected S(<memory space>) in the layout"
# Found by the long fuzzing run of 2026-11-28: a garbled known_trip_count was read as the
# digits after "n" (5,444,444 trips, minutes to lower); now it is an error, as is a negative one.
expect garbled_trip_count ":18:65: backend_config of while w names known_trip_count but is not a JSON object"
expect negative_trip_count ":18:65: backend_config of while w has known_trip_count n = \"-3\", not a non-negative integer"

# The HBM capacity check on imported modules (docs/program.md, "HBM capacity"): a module
# whose parameters and live results exceed a core's HBM is a located exit-2 error from run
# and trace check; one whose single weight is read by many instructions fits (the weight is
# one parameter, not one per read).
cap=tests/data/hlo_capacity
for cmd in "run --config $v3 -q --hlo" "trace check --config $v3 --hlo"; do
    # shellcheck disable=SC2086
    err=$(timeout "$hang" "$bin" $cmd $cap/hbm_too_small.hlo 2>&1 >/dev/null)
    rc=$?
    if [ $rc -ne 2 ] || [[ "$err" != "error: $cap/hbm_too_small.hlo: op \"s\": resource exhausted: core 0 needs 24.00 GiB"* ]]; then
        echo "FAIL $cmd hbm_too_small: rc=$rc $err"
        fails=$((fails + 1))
    else
        passes=$((passes + 1))
    fi
done
# shellcheck disable=SC2086
out=$(timeout "$hang" "$bin" trace check --config $v3 --json --hlo $cap/one_weight_read_often.hlo 2>&1)
rc=$?
fp=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["hbm_footprint_bytes_per_core"])' <<<"$out" 2>/dev/null)
# 2 GiB of weight + the largest live reductions (8 results of at most 128 KiB): under 2.01 GiB.
if [ $rc -ne 0 ] || [ -z "$fp" ] || [ "$fp" -lt 2147483648 ] || [ "$fp" -gt 2158000000 ]; then
    echo "FAIL one_weight_read_often: rc=$rc footprint=$fp $(tail -c 300 <<<"$out")"
    fails=$((fails + 1))
else
    passes=$((passes + 1))
fi

echo "hlo errors: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
