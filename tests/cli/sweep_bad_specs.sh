#!/usr/bin/env bash
# Every bad sweep spec in tests/data/sweep/bad/ and every bad database path gets exit status 2
# and one located line "error: <file>: <JSON pointer>: <what was expected>" before any point
# runs. Usage: sweep_bad_specs.sh path/to/tpusim (run from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
b=$(realpath tests/data/sweep/bad)
expect_cwd=$tmp  # a relative --db lands in the scratch folder
good=$(realpath tests/data/sweep/small_valid.json)  # every point valid
small=$(realpath tests/data/sweep/small.json)        # 8 points with an MXU above the limit

expect_error "unknown top-level key" "bad/unknown_top_key.json: /axis: unknown key \"axis\"" -- sweep "$b/unknown_top_key.json"
expect_error "unknown config key" "/axes/0/values/0: unknown config key \"mxu.rowz\"" -- sweep "$b/unknown_config_key.json"
expect_error "empty axis" "/axes/0/values: empty axis" -- sweep "$b/empty_axis.json"
expect_error "empty range" "/axes/0/range: empty axis" -- sweep "$b/empty_range.json"
expect_error "type mismatch" "/axes/0/values/1: mxu.rows takes an integer, got a string \"big\"" -- sweep "$b/type_mismatch.json"
expect_error "type mismatch, boolean" "/axes/0/values/0: board.wraparound takes a boolean" -- sweep "$b/type_mismatch_bool.json"
expect_error "zip of unequal lengths" "/axes/0/zip/1: zipped axes need equal lengths" -- sweep "$b/zip_lengths.json"
expect_error "unknown workload parameter" "/axes/0/values/0: no workload has a parameter \"batch\"" -- sweep "$b/unknown_param.json"
expect_error "a section, not a key" "/axes/0/values/0: \"mxu\" is a config section" -- sweep "$b/section_key.json"
expect_error "scale gives a fraction" "/axes/0/scale/0: 128 x 1.3 is not an integer" -- sweep "$b/scale_not_integer.json"
expect_error "scale out of range" "/axes/0/scale/0: 128 x 1e+300 is out of the integer range" -- sweep "$b/scale_out_of_range.json"
expect_error "key with a tilde" "/axes/0/values/0: unknown config key \"mxu.rows~2\"" -- sweep "$b/key_tilde.json"
expect_error "no variants" "/axes/0/variants: empty axis" -- sweep "$b/empty_variants.json"
expect_error "no workloads" "/workloads: expected a non-empty array" -- sweep "$b/no_workloads.json"
expect_error "no base" "no_base.json: missing \"base\"" -- sweep "$b/no_base.json"
expect_error "missing base config" "/base: config" -- sweep "$b/missing_base.json"
expect_error "generator without output" "/workloads/0/generate: the generator's argv must name \"{output}\"" -- sweep "$b/generate_no_output.json"
expect_error "truncated JSON" "truncated.json: line 1" -- sweep "$b/truncated.json"
expect_error "no spec file" "nope.json" -- sweep nope.json
expect_error "bad shard" "--shard: 3/3: expected I/N" -- sweep "$good" --shard 3/3 --db x.sqlite
expect_error "database in a missing folder" "cannot write the database: no directory" -- sweep "$good" --db /nonexistent/x.sqlite
expect_error "database path is a folder" "the database path is a directory" -- sweep "$good" --db "$tmp"
printf 'not sqlite at all, just text that is long enough to hold a header......................................' > "$tmp/text.sqlite"
expect_error "database that is not SQLite" "text.sqlite: cannot use the database" -- sweep "$good" --db "$tmp/text.sqlite"
mkdir -p "$tmp/ro" && touch "$tmp/ro/x.sqlite" && chmod 0444 "$tmp/ro/x.sqlite" && chmod 0555 "$tmp/ro"
if [ "$(id -u)" -ne 0 ]; then
    expect_error "read-only database" "x.sqlite: cannot write the database" -- sweep "$good" --db "$tmp/ro/x.sqlite"
fi
chmod 0755 "$tmp/ro"
expect_error "merge of a missing file" "nope.sqlite: no such database file" -- sweep merge --db m.sqlite nope.sqlite
expect_error "csv of a missing database" "nope.sqlite: no such database file" -- sweep --db nope.sqlite --csv -

# Checked before any point runs as well: every point's config (unless --keep-going) and every
# workload file. No database is created.
expect_error "invalid config of a point" "/small.json: point 2 (gemm board=v3-8 mxu.cols=8192 mxu.rows=8192 hbm.data_rate_mtps=1757.8125): its config is invalid: --set mxu.rows=8192: /mxu/rows: expected an integer in [1, 4096], got 8192 (every point's config is checked" -- sweep "$small" --db nodb.sqlite
[ ! -e "$tmp/nodb.sqlite" ] && passes=$((passes + 1)) || fail "a refused spec created its database"
src=$(pwd)
sed -e "s|\.\./\.\./\.\./|$src/|g" -e 's/"trace": "small_gemm.json"/"trace": "no_such_trace.json"/' \
    "$good" > "$tmp/missing_trace.json"
expect_error "missing trace" "missing_trace.json: /workloads/0/trace: names $tmp/no_such_trace.json, which does not exist (point 0:" -- sweep "$tmp/missing_trace.json" --db nodb.sqlite --keep-going

finish
