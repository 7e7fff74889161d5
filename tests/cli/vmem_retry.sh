#!/usr/bin/env bash
# A matmul whose pipeline's next buffer finds no free stretch of the VMEM ring (pinned buffers
# fragment it) is lowered again with half its tile budget, with a warning, instead of stopping
# the program (docs/program.md, "VMEM"). BERT at seq 512, 4 sequences, 4 layers on one core
# stopped at l0.ffn_out.dx ("needs a 4.00 MiB VMEM buffer beside 7.00 MiB already held").
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
python3 scripts/gen_trace.py bert --seq 512 --batch 4 --cores 1 --layers 4 --no-embeddings \
    -o "$tmp/bert.json" || fatal "gen_trace.py bert"
"$bin" run --config configs/tpu_v3_8.json --trace "$tmp/bert.json" -q --report "$tmp/r.json" \
    > /dev/null 2> "$tmp/err.txt" || fatal "run: $(head -2 "$tmp/err.txt")"
n=$(grep -c '^warning: .*op "l0.ffn_out.dx": its tiles take 1/2 of the VMEM budget' "$tmp/err.txt")
[[ "$n" == 1 ]] && passes=$((passes + 1)) ||
    fail "expected one warning for l0.ffn_out.dx, got: $(cat "$tmp/err.txt")"
[[ $(grep -c '^warning:' "$tmp/err.txt") == 1 ]] && passes=$((passes + 1)) ||
    fail "other ops were retried too: $(cat "$tmp/err.txt")"
# The retried op still does all its work: the report's matrix FLOPs are the trace's.
want=$("$bin" trace check --config configs/tpu_v3_8.json --trace "$tmp/bert.json" --json 2>/dev/null |
    python3 -c "import json,sys; print(int(json.load(sys.stdin)['flops_by_kind']['matmul']))")
got=$(python3 -c "import json,sys; print(int(json.load(open(sys.argv[1]))['mxu_flops']))" "$tmp/r.json")
[[ "$got" == "$want" ]] && passes=$((passes + 1)) ||
    fail "matrix FLOPs: the run did $got, the trace has $want"
# trace check --lower lowers the same way: no error.
"$bin" trace check --config configs/tpu_v3_8.json --trace "$tmp/bert.json" --lower > "$tmp/check.txt" 2>&1 &&
    passes=$((passes + 1)) || fail "trace check --lower: $(tail -2 "$tmp/check.txt")"
finish
