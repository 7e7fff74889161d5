#!/usr/bin/env bash
# Every kind of bad input gets exit status 2 and exactly one line "error: <file>: ...", never
# a crash. Usage: bad_inputs.sh path/to/tpusim (run from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

v3=configs/tpu_v3_8.json
printf '' > "$tmp/empty.json"
printf '{"name": "x",' > "$tmp/truncated.json"
printf '{"name": "x", "mxu": {"rows": 128, "colz": 4}}' > "$tmp/unknown.json"
printf '{"mxu": {"rows": "big"}}' > "$tmp/type.json"
printf '{"hbm": {"bank_groups": 3}}' > "$tmp/pow2.json"
printf '{"chip": {"clock_mhz": 0}}' > "$tmp/zero.json"
printf '{"hbm": {"stacks": -4}}' > "$tmp/negative.json"
printf '{"extends": "b.json"}' > "$tmp/a.json"
printf '{"extends": "a.json"}' > "$tmp/b.json"
printf '{"extends": "missing.json"}' > "$tmp/dangling.json"
printf '{"name": "\xff\xfe"}' > "$tmp/utf8.json"
python3 -c 'print("[" * 100000 + "]" * 100000)' > "$tmp/deep.json"
printf '[1, 2]' > "$tmp/array.json"
printf '{"mxu": {"rows": 1.5}}' > "$tmp/float.json"
printf '{"mxu": {"rows": 99999999999999999999999}}' > "$tmp/huge.json"
printf '{"extends": "/dev/zero"}' > "$tmp/device.json"
head -c 17000000 /dev/zero > "$tmp/big.json"

expect_error "missing file" "cannot open" -- info --config "$tmp/nope.json"
expect_error "empty file" "empty file" -- info --config "$tmp/empty.json"
expect_error "truncated JSON" "line 1" -- info --config "$tmp/truncated.json"
expect_error "unknown key" "/mxu/colz" -- info --config "$tmp/unknown.json"
expect_error "wrong type" "/mxu/rows" -- info --config "$tmp/type.json"
expect_error "not a power of two, and why" "/hbm/bank_groups: expected a power of two (the HBM address map takes it as a bit field)" -- info --config "$tmp/pow2.json"
expect_error "zero clock" "/chip/clock_mhz" -- info --config "$tmp/zero.json"
expect_error "negative size" "/hbm/stacks" -- info --config "$tmp/negative.json"
expect_error "extends cycle" "extends cycle" -- info --config "$tmp/a.json"
expect_error "dangling extends" "dangling.json: /extends: names $tmp/missing.json, which does not exist" -- info --config "$tmp/dangling.json"
# A mistyped name: the referring file, its key, and the file it probably meant.
cp configs/tpu_v3_8.json "$tmp/tpu_v3_8.json"
printf '{"extends": "tpu_v3_9.json"}' > "$tmp/typo.json"
expect_error "extends typo" "typo.json: /extends: names $tmp/tpu_v3_9.json, which does not exist (did you mean \"tpu_v3_8.json\"?)" -- info --config "$tmp/typo.json"
# Mistyped commands and keys get the closest name.
expect_error "mistyped command" "tpusim: unknown command \"runn\" (did you mean \"run\"?) (see tpusim --help)" -- runn
expect_error "mistyped subcommand" "tpusim bench: unknown command \"mxx\" (did you mean \"mxu\"?)" -- bench mxx --config $v3
expect_error "unknown command" "tpusim: unknown command \"foo\" (see tpusim --help)" -- foo
expect_error "mistyped key" "/mxu/rowz: unknown key \"rowz\" (did you mean \"rows\"?) (known keys:" -- info --config $v3 --set mxu.rowz=3
expect_error "bad UTF-8" "UTF-8" -- info --config "$tmp/utf8.json"
expect_error "absurd nesting" "nested deeper" -- info --config "$tmp/deep.json"
expect_error "not an object" "top level" -- info --config "$tmp/array.json"
expect_error "float for integer" "expected an integer" -- info --config "$tmp/float.json"
expect_error "huge integer" "/mxu/rows" -- info --config "$tmp/huge.json"
expect_error "no config" "--config" -- info
expect_error "unknown command" "tpusim" -- frobnicate
expect_error "--set without =" "--set mxu.rows" -- info --config $v3 --set mxu.rows
expect_error "--set unknown key" "/mxu/depth" -- info --config $v3 --set mxu.depth=3
expect_error "--set bad choice" "/ici/all_reduce_algorithm" -- info --config $v3 --set ici.all_reduce_algorithm=tree
# Found by the fuzzers (docs/fuzzing.md; tests/fuzz/regressions/config/): a --set value that is
# not UTF-8 once escaped as an internal error from the JSON writer.
expect_error "--set not UTF-8" "--set: the override is not valid UTF-8" -- info --config $v3 --set $'mxu=\xbd'
expect_error "--set not UTF-8, config dump" "not valid UTF-8" -- config --dump --config $v3 --set $'name=\xbd'
# Reads stop at a cap (docs/limits.md): a device or an endless file cannot fill the memory.
expect_error "extends a device" "which is not a regular file" -- info --config "$tmp/device.json"
expect_error "config over 16 MiB" "larger than 16 MiB" -- info --config "$tmp/big.json"

# The thread cap of one process (include/tpusim/common/threads.h), for run and for sweep.
TPUSIM_THREADS=abc expect_error "TPUSIM_THREADS=abc" 'TPUSIM_THREADS: expected an integer' -- \
    run --config $v3 --trace traces/gemm.json -q
TPUSIM_THREADS=0 expect_error "TPUSIM_THREADS=0" 'TPUSIM_THREADS: expected an integer' -- \
    sweep scripts/bench_sweep.json --db "$tmp/threads.sqlite" --quiet

# The TPU Node transfer keys of `tpusim train` (docs/train.md): out of range in a config file
# or on the command line, located by file and key, before anything runs.
printf '{"extends": "%s", "host": {"access": "node", "node_transfer_gbps": 5000}}\n' \
    "$PWD/configs/colab_v2_8.json" > "$tmp/node_rate.json"
expect_error "node transfer rate over 1000 GB/s" "node_rate.json: /host/node_transfer_gbps" -- \
    train --config "$tmp/node_rate.json" --trace traces/gemm.json --run examples/lstm_imdb.run.json
expect_error "--set node transfer latency over 10 s" "/host/node_transfer_latency_us" -- \
    train --config configs/colab_v2_8.json --set host.node_transfer_latency_us=1e8 \
    --trace traces/gemm.json --run examples/lstm_imdb.run.json

# Every numeric parameter set to -1 or to a non-number is rejected, naming the key.
keys=$("$bin" config --keys | awk -F'|' '$3 ~ /integer|number/ {gsub(/[ `]/, "", $2); print $2}')
nkeys=0
for key in $keys; do
    nkeys=$((nkeys + 1))
    ptr="/${key//./\/}"
    expect_error "--set $key=-1" "$ptr" -- info --config $v3 --set "$key=-1"
    expect_error "--set $key=abc" "$ptr" -- info --config $v3 --set "$key=abc"
done
[ "$nkeys" -ge 20 ] || { echo "FAIL: only $nkeys numeric keys found"; fails=$((fails + 1)); }

# A file given to the wrong option says which option it belongs to.
expect_error "trace as --hlo" "(this looks like JSON: a trace goes to --trace, a board configuration to --config)" -- run --config $v3 --hlo traces/gemm.json
expect_error "hlo as --trace" "(this looks like XLA HLO text: give it with --hlo)" -- run --config $v3 --trace tests/data/hlo/jax_seed_workloads/lstm_imdb_dp8.after_spmd_partitioning.hlo
expect_error "trace as --config" "traces/gemm.json: /cores: unknown key \"cores\" (known keys:" -- run --config traces/gemm.json --trace traces/gemm.json
expect_error "trace as --config, hint" "(this looks like a tpusim trace: give it with --trace)" -- run --config traces/gemm.json --trace traces/gemm.json
expect_error "config as --trace" "/board: unknown key (expected format, version, name, description, cores, ops, parameter_bytes, samples_per_step, metadata, loops) (this looks like a board configuration: give it with --config)" -- run --config $v3 --trace $v3

# config --keys --config F: F's values, not the defaults (which differ from the shipped boards').
"$bin" config --keys --config $v3 | grep -q '^| `mxu.pass_gap_cycles` | integer | 19 |' &&
    "$bin" config --keys --config $v3 | head -1 | grep -q '| value in tpu_v3_8 |' &&
    "$bin" config --keys | grep -q '^| `mxu.pass_gap_cycles` | integer | 0 |' &&
    "$bin" config --keys --config $v3 --set mxu.pass_gap_cycles=7 | grep -q '^| `mxu.pass_gap_cycles` | integer | 7 |' &&
    passes=$((passes + 1)) || fail "config --keys --config: the values in effect"
expect_error "config --set without --config" "--set needs --config" -- config --set mxu.rows=8

finish
