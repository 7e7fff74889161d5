#!/usr/bin/env bash
# Every malformed trace gets exit status 2 and exactly one line "error: <file>: <where>: <what>",
# never a crash or a hang. Runs `tpusim trace check` and, once it exists, `tpusim run` on each
# file of traces/bad/ (docs/trace-format.md, "Errors"). Also checks that every good trace in
# traces/ passes. Usage: bad_traces.sh path/to/tpusim (run from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
v3=configs/tpu_v3_8.json

# expect_bad FILE_STEM EXPECTED_SUBSTRING: traces/bad/STEM.json through every command that
# reads traces. The file name is part of the expected line.
commands=("trace check")
if "$bin" --help 2>/dev/null | grep -qE '^  run +'; then commands+=("run"); fi
expect_bad() {
    local f=traces/bad/$1.json want=$2 cmd
    [ -f "$f" ] || { echo "FAIL $1: $f is missing"; fails=$((fails + 1)); return; }
    for cmd in "${commands[@]}"; do
        # shellcheck disable=SC2086
        expect_error "$cmd $1" "error: $f: $want" -- $cmd --config $v3 --trace "$f"
    done
}

expect_bad not_json "line 3"
expect_bad top_level_array "the top level must be a JSON object, got an array"
expect_bad wrong_format "/format: expected \"tpusim.trace\""
expect_bad missing_format "/format: missing"
expect_bad missing_version "/version: missing"
expect_bad wrong_version "/version: unsupported version 3 (this tpusim reads versions 1 and 2)"
expect_bad unknown_top_key "/opz: unknown key"
expect_bad zero_samples_per_step "/samples_per_step: expected a positive integer, got 0"
expect_bad no_ops "/ops: the trace has no ops"
expect_bad too_many_cores "/cores: the trace needs 16 cores but the board has 8"
expect_bad unknown_kind "op \"f\": unknown kind \"fft\""
expect_bad missing_id "ops[0]: missing \"id\""
expect_bad missing_field "op \"mm\": missing \"k\""
expect_bad non_integer "op \"mm\": \"m\" must be an integer, got a non-integer number"
expect_bad string_size "op \"mm\": \"m\" must be an integer, got a string"
expect_bad zero_size "op \"mm\": \"n\" must be a positive integer, got 0"
expect_bad negative_size "op \"cp\": \"bytes\" must be a positive integer, got -4"
expect_bad absurd_size "op \"mm\": \"m\" is absurdly large"
expect_bad huge_integer "op \"mm\": \"m\" is out of range"
expect_bad overflow "op \"mm\": its FLOP count overflows 64 bits"
expect_bad unknown_key "op \"mm\": unknown key \"colz\" for a matmul op"
expect_bad wrong_type_flag "op \"mm\": \"transpose_rhs\" must be true or false"
expect_bad unknown_dtype "op \"mm\": unknown dtype \"fp8\""
expect_bad unknown_vector_op "op \"v\": unknown vector op \"frobnicate\""
expect_bad mask_not_dropout "op \"v\": \"mask\" applies to dropout and dropout_grad only"
expect_bad unknown_precision "op \"mm\": unknown precision \"max\" (expected one of: default, high, highest)"
expect_bad unknown_mask "op \"v\": unknown mask \"kept\" (expected \"saved\" or \"regenerated\")"
expect_bad row_wise_elements "op \"sm\": softmax needs \"rows\" and \"cols\""
expect_bad dangling_dep "op \"act\": dep \"nope\" names no op"
expect_bad operand_not_a_dep "op \"add\": \"operands\" names \"y\", which is not in \"deps\""
expect_bad duplicate_id "op \"mm\": duplicate id (first used by ops[0], line 2)"
expect_bad cycle "op \"a\": dependency cycle: \"a\" -> \"b\" -> \"c\" -> \"a\""
expect_bad self_dep "op \"a\": dependency cycle: it depends on itself"
expect_bad fused_without_deps "op \"g\": \"fused\" needs a producer"
expect_bad core_outside "op \"mm\": core 9 in \"cores\" is outside the program's 8 cores (0..7)"
expect_bad replica_groups_overlap "op \"ar\": core 1 appears twice in replica_groups"
expect_bad replica_groups_incomplete "op \"ar\": replica_groups must partition the op's cores; core 6 is in no group"
expect_bad replica_groups_uneven "op \"ar\": replica_groups must all have the same size (got 3 and 5)"
expect_bad partial_elements "op \"ar\": bytes 1022 is not a whole number of f32 elements"
expect_bad send_unmatched "op \"s\": no matching recv of 1024 bytes from core 0 to core 1"
expect_bad permute_twice "op \"p\": core 1 is a target twice"

# Inputs that cannot be committed as files, or that are about the file itself.
printf '' > "$tmp/empty.json"
printf '{"format": "tpusim.trace", "version": 1, "name": "\xff\xfe", "ops": []}' > "$tmp/utf8.json"
python3 -c 'print("[" * 100000 + "]" * 100000)' > "$tmp/deep.json"
for cmd in "${commands[@]}"; do
    # shellcheck disable=SC2086
    {
        expect_error "$cmd missing file" "$tmp/nope.json: cannot open" -- $cmd --config $v3 --trace "$tmp/nope.json"
        expect_error "$cmd empty file" "empty file" -- $cmd --config $v3 --trace "$tmp/empty.json"
        expect_error "$cmd bad UTF-8" "UTF-8" -- $cmd --config $v3 --trace "$tmp/utf8.json"
        expect_error "$cmd absurd nesting" "nested deeper" -- $cmd --config $v3 --trace "$tmp/deep.json"
        expect_error "$cmd no --trace" "--trace" -- $cmd --config $v3
    }
done
# A directory is not a trace; an object names each key once.
mkdir -p "$tmp/dir.json"
printf '{"format": "tpusim.trace", "version": 1, "version": 1, "ops": []}' > "$tmp/dup.json"
printf '%s' '{"format": "tpusim.trace", "version": 1, "name": "x", "ops": [{"id": "a\u0001\u00ff", "kind": "fft"}]}' > "$tmp/bytes.json"
for cmd in "${commands[@]}"; do
    # shellcheck disable=SC2086
    {
        expect_error "$cmd directory" "$tmp/dir.json: is a directory" -- $cmd --config $v3 --trace "$tmp/dir.json"
        expect_error "$cmd duplicate key" "line 1, column 42: duplicate key \"version\"" -- $cmd --config $v3 --trace "$tmp/dup.json"
        expect_error "$cmd control character" 'op "a\x01ÿ": unknown kind' -- $cmd --config $v3 --trace "$tmp/bytes.json"
    }
done

# HBM capacity, checked before lowering as XLA checks it at compile time: the op, the live
# footprint and the core's share of HBM (v2: 16 GiB per chip, 8 GiB per core).
mm() { printf '{"format": "tpusim.trace", "version": 1, "name": "big", "cores": 1, "ops": [{"id": "mm", "kind": "matmul", "m": %s, "k": %s, "n": %s, "dtype": "bf16"}]}' "$@"; }
mm 65536 65536 65536 > "$tmp/big_matmul.json"
expect_error "run matmul beyond HBM" 'op "mm": resource exhausted: core 0 needs 24.00 GiB of HBM live at this op (16.00 GiB of parameters, 8.00 GiB of results, this op'"'"'s 8.00 GiB included); a core has 8.00 GiB (16.00 GiB per chip shared by 2 cores)' -- \
    run --config configs/tpu_v2_8.json --trace "$tmp/big_matmul.json"
expect_error "trace check matmul beyond HBM" 'op "mm": resource exhausted: core 0 needs 24.00 GiB' -- \
    trace check --config configs/tpu_v2_8.json --trace "$tmp/big_matmul.json"
mm 2147483648 128 128 > "$tmp/tall_matmul.json"
expect_error "run m = 2^31" 'op "mm": resource exhausted: core 0 needs 1024.00 GiB' -- \
    run --config $v3 --trace "$tmp/tall_matmul.json"
printf '{"format": "tpusim.trace", "version": 1, "name": "ar", "cores": 8, "ops": [{"id": "ar", "kind": "all_reduce", "bytes": 1099511627776}]}' > "$tmp/tib.json"
expect_error "run 1 TiB all-reduce" 'op "ar": resource exhausted' -- run --config $v3 --trace "$tmp/tib.json"
# An output path that cannot be written fails before the run, not after it.
expect_error "run unwritable timeline" "no directory" -- \
    run --config $v3 --trace traces/gemm.json --timeline "$tmp/no/such/dir/t.json"
expect_error "run timeline is a directory" "is a directory" -- \
    run --config $v3 --trace traces/gemm.json --timeline "$tmp"

# A row too wide for VMEM is a lowering error: `trace check --lower` finds it without
# simulating, as `run` does; plain `trace check` does not lower.
printf '{"format": "tpusim.trace", "version": 1, "name": "wide", "ops": [{"id": "sm", "kind": "vector", "op": "softmax", "rows": 8, "cols": 8388608, "dtype": "f32"}]}' > "$tmp/wide_row.json"
expect_error "trace check --lower: a row beyond VMEM" 'op "sm": one row of 8388608 columns needs 128.00 MiB of VMEM (double buffered); the core has 16 MiB' -- \
    trace check --config $v3 --trace "$tmp/wide_row.json" --lower
expect_error "run: a row beyond VMEM" 'op "sm": one row of 8388608 columns needs 128.00 MiB' -- \
    run -q --config $v3 --trace "$tmp/wide_row.json"
if "$bin" trace check --config $v3 --trace "$tmp/wide_row.json" >/dev/null 2>&1; then
    passes=$((passes + 1))
else
    echo "FAIL trace check without --lower should not lower"
    fails=$((fails + 1))
fi
if out=$("$bin" trace check --config $v3 --trace traces/gemm.json --lower 2>&1) &&
    [[ $out == *"lowered for tpu_v3_8:"*"instructions over 1 core"* ]]; then
    passes=$((passes + 1))
else
    echo "FAIL trace check --lower on a good trace: $out"
    fails=$((fails + 1))
fi

# A board with fewer cores: the data-parallel example needs 8.
expect_error "cores beyond a 1-chip board" "/cores: the trace needs 8 cores but the board has 2" -- \
    trace check --config $v3 --set board.chips_x=1 --set board.chips_y=1 --trace traces/data_parallel_step.json

# Every bad file has a case above, and every good trace passes.
for f in traces/bad/*.json; do
    grep -q "^expect_bad $(basename "$f" .json) " "$0" || { echo "FAIL: $f has no case"; fails=$((fails + 1)); }
done
for f in traces/*.json; do
    out=$(timeout "$hang" "$bin" trace check --config $v3 --trace "$f" 2>&1)
    if [ $? -ne 0 ] || [[ "$out" != *": ok, "* ]]; then
        echo "FAIL good trace $f: $out"
        fails=$((fails + 1))
    else
        passes=$((passes + 1))
    fi
done

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
