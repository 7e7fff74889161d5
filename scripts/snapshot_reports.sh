#!/usr/bin/env bash
# Every output a user reads, for a restructuring that must leave them byte-identical: the text,
# JSON report and per-op CSV of `run` on every committed trace (v2-8 and v3-8) and on the seed
# HLO modules, `train` on two case studies, the bench commands, `info` and `info --modules`.
# Wall-clock figures and the git revision are blanked; everything else is kept as printed.
#
#   scripts/snapshot_reports.sh OUT_DIR [path/to/tpusim]      then: diff -r OLD_DIR NEW_DIR
#
# tests/golden/check_golden.py guards the simulated mechanism in ctest; this script is the
# wider, slower check (about two minutes on two cores) to run before and after a refactoring.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:?usage: scripts/snapshot_reports.sh OUT_DIR [path/to/tpusim]}
bin=${2:-build/tpusim}
mkdir -p "$out"
v2=configs/tpu_v2_8.json
v3=configs/tpu_v3_8.json
seeds=tests/data/hlo/jax_seed_workloads

# Wall seconds, rates per wall second and the revision change from run to run.
scrub() {
    sed -E -e 's/"(wall_seconds|cpu_seconds|wall_s|cpu_s|[a-z_]*per_(cpu_|wall_)?second)": *[-0-9.e+]+/"\1": 0/g' \
        -e 's/"git_revision": *"[^"]*"/"git_revision": ""/g' \
        -e "s#$out/gen/#GEN/#g" \
        -e 's/(simulated|ran|imported|read) in [0-9.]+ s wall.*/\1 in - s wall/' \
        -e 's/[0-9.]+ s wall/- s wall/g'
}

# case NAME tpusim-args...: text, JSON report and op CSV of one run.
run_case() {
    local name=$1
    shift
    local rc=0
    "$bin" "$@" -q --report "$out/$name.report.json" --ops "$out/$name.ops.csv" \
        >"$out/$name.txt" 2>&1 || rc=$?
    echo "exit $rc" >>"$out/$name.txt"
    for f in "$out/$name.txt" "$out/$name.report.json"; do
        [[ -f $f ]] && scrub <"$f" >"$f.tmp" && mv "$f.tmp" "$f"
    done
    return 0
}

for t in traces/*.json; do
    stem=$(basename "$t" .json)
    run_case "run_v3_$stem" run --config $v3 --trace "$t"
    [[ $stem == bert_base_train_step ]] || run_case "run_v2_$stem" run --config $v2 --trace "$t"
done
for h in "$seeds"/*.hlo; do
    stem=$(basename "$h" .hlo)
    run_case "hlo_v3_$stem" run --config $v3 --hlo "$h"
done
run_case hlo_v2_lstm run --config $v2 --hlo "$seeds/lstm_imdb_dp8.after_spmd_partitioning.hlo"
run_case hlo_v3_lstm_nopasses run --config $v3 --hlo-passes none \
    --hlo "$seeds/lstm_imdb_dp8.after_spmd_partitioning.hlo"

mkdir -p "$out/gen"
python3 scripts/gen_trace.py resnet50 --batch 128 --cores 8 -o "$out/gen/resnet50.json" >/dev/null
python3 scripts/gen_trace.py bert --batch 8 --seq 512 --cores 8 -o "$out/gen/bert.json" >/dev/null
run_case gen_v3_resnet50 run --config $v3 --trace "$out/gen/resnet50.json"
run_case gen_v2_resnet50 run --config $v2 --trace "$out/gen/resnet50.json"
run_case gen_v3_bert run --config $v3 --trace "$out/gen/bert.json"
run_case gen_v3_32_resnet50 run --config configs/tpu_v3_32.json --trace "$out/gen/resnet50.json"

for c in lstm_imdb kaggle_classifier; do
    TPUSIM_BIN=$bin TPUSIM_CASE_DIR="$out/gen" examples/run_case.sh $c --json -q 2>&1 |
        scrub >"$out/train_$c.json" || echo "exit $?" >>"$out/train_$c.json"
done

for b in "mxu --m 1024 --k 1024 --n 1024" "mxu --m 256 --k 256 --n 256 --fidelity pe" "peak" \
    "hbm --mib-per-core 16" "ici --sizes 1KiB 1MiB 64MiB"; do
    name=bench_$(echo "$b" | tr -c 'a-zA-Z0-9\n' _)
    # shellcheck disable=SC2086
    "$bin" bench $b --config $v3 --json 2>&1 | scrub >"$out/$name.json" || echo "exit $?" >>"$out/$name.json"
done
"$bin" info --config $v3 >"$out/info_v3.txt" 2>&1 || true
"$bin" info --config $v2 --modules >"$out/info_modules_v2.txt" 2>&1 || true
rm -rf "$out/gen"
echo "$(ls "$out" | wc -l) files in $out"
