#!/usr/bin/env bash
# scripts/gen_trace.py mlperf (scripts/tracegen/mlperf.py, issue #37): every benchmark, round
# and slice of its table writes a trace that `tpusim trace check` accepts on the slice's
# config, whose top-level samples_per_step is the global batch (cores x the per-core batch the
# trace's input carries); each benchmark's smallest slice runs, at the submission's batch and
# at a per-core batch of 1; the v0.6 ResNet-50 and v0.7 BERT-Large v3-32 traces are the ones
# scripts/validate.py validates (docs/VALIDATION.md); a slice the submission did not run is one
# located error line and exit 2. Usage: mlperf_traces.sh path/to/tpusim (from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The simulated step of TRACE on CONFIG, in seconds (empty when the run fails).
step_seconds() {
    "$bin" run -q --json --config "$1" --trace "$2" 2>/dev/null |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["seconds"])'
}
gen="python3 scripts/gen_trace.py"

# "bench round cores modelled" for every entry of the table (modelled 0: a slice whose
# mechanism the traces do not have: a located error; none at present).
runs=$(cd scripts && python3 -c '
from tracegen.mlperf import BENCHES
for bench, (table, _, _) in sorted(BENCHES.items()):
    for rnd, slices in sorted(table.items()):
        for cores, sl in sorted(slices.items()):
            print(bench, rnd, cores, 0 if sl.flags.get("unsupported") else 1)') || fatal "cannot read the table of scripts/tracegen/mlperf.py"
[ -n "$runs" ] || fatal "the table of scripts/tracegen/mlperf.py is empty"

# The bytes per sample of each benchmark's first infeed: an image (ResNet-50: 224 x 224 x 3,
# SSD: 300 x 300 x 3, Mask R-CNN: 832 x 1344 x 3, bf16), or int32 token ids (BERT: 512;
# Transformer: the 256 tokens of a packed sequence; GNMT: source, target input and target
# output, each padded to 48).
per_sample() {
    case $1 in
    resnet50) echo $((224 * 224 * 3 * 2)) ;;
    bert) echo $((512 * 4)) ;;
    transformer) echo $((256 * 4)) ;;
    gnmt) echo $((3 * 48 * 4)) ;;
    ssd) echo $((300 * 300 * 3 * 2)) ;;
    maskrcnn) echo $((832 * 1344 * 3 * 2)) ;;
    *) echo 0 ;;
    esac
}

declare -A smallest
while read -r bench rnd cores modelled; do
    f="$tmp/${bench}_${rnd}_${cores}.json"
    if [ "$modelled" = 0 ]; then
        err=$($gen mlperf "$bench" --round "$rnd" --cores "$cores" -o "$f" 2>&1 >/dev/null)
        rc=$?
        if [ $rc -ne 2 ] || [ "$(grep -c . <<<"$err")" -ne 1 ] || [[ "$err" != "error: "*"not"* ]]; then
            fail "$bench $rnd $cores (not modelled): rc=$rc: $err"
        else
            passes=$((passes + 1))
        fi
        continue
    fi
    if ! $gen mlperf "$bench" --round "$rnd" --cores "$cores" -o "$f"; then
        fail "gen_trace.py mlperf $bench --round $rnd --cores $cores"
        continue
    fi
    cfg=configs/tpu_v3_$cores.json
    out=$("$bin" trace check --config "$cfg" --trace "$f" 2>&1)
    if [ $? -ne 0 ] || [[ "$out" != *": ok, "* ]]; then
        fail "trace check $bench $rnd $cores: $out"
    else
        passes=$((passes + 1))
    fi
    # samples_per_step = cores x the per-core batch that the input's bytes carry.
    check=$(python3 - "$f" "$cores" "$(per_sample "$bench")" "$bench" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
cores, per_sample = int(sys.argv[2]), int(sys.argv[3])
infeed = next(o for o in t["ops"] if o["kind"] == "infeed")
dims = t["metadata"].get("input_partition_dims")
if dims:
    # Spatial partitioning (SSD on v3-1024 and v3-2048, Mask R-CNN on v3-128 and v3-256):
    # each core holds its replica's images (replicas = num_shards), ceil(H / dims[1]) of their
    # H rows (SSD's 2x2 space-to-depth image has 150, else 300; Mask R-CNN's, always
    # space-to-depth, 832 / 2; the other dims are 1): per sample that share of the bytes.
    h = 832 // 2 if sys.argv[4] == "maskrcnn" else \
        150 if t["metadata"].get("conv0_space_to_depth") else 300
    per_sample = per_sample // h * -(-h // dims[1])
    cores = t["metadata"]["num_shards"]
per_core, rem = divmod(infeed["bytes"], per_sample)
sps = t.get("samples_per_step")
if rem or not per_sample:
    print(f"input of {infeed['bytes']} bytes is not whole samples of {per_sample}")
elif sps != cores * per_core or t["metadata"].get("global_batch") != sps:
    print(f"samples_per_step {sps}, metadata global_batch {t['metadata'].get('global_batch')}, "
          f"expected {cores} cores x {per_core} per core")
elif t["cores"] != int(sys.argv[2]):
    print(f"cores {t['cores']}, expected {sys.argv[2]}")
PY
)
    if [ -n "$check" ]; then fail "$bench $rnd $cores: $check"; else passes=$((passes + 1)); fi
    key="$bench"
    if [ -z "${smallest[$key]:-}" ] || [ "$cores" -lt "$(cut -d' ' -f2 <<<"${smallest[$key]}")" ]; then
        smallest[$key]="$rnd $cores"
    fi
done <<<"$runs"

# Each benchmark's smallest slice runs, at the submission's batch and at one sample per core;
# its step is positive and the smaller batch's is shorter.
for bench in "${!smallest[@]}"; do
    read -r rnd cores <<<"${smallest[$bench]}"
    cfg=configs/tpu_v3_$cores.json
    full="$tmp/${bench}_${rnd}_${cores}.json"
    one="$tmp/${bench}_one.json"
    $gen mlperf "$bench" --round "$rnd" --cores "$cores" --per-core-batch 1 -o "$one" ||
        { fail "gen_trace.py mlperf $bench --per-core-batch 1"; continue; }
    s_full=$(step_seconds "$cfg" "$full")
    s_one=$(step_seconds "$cfg" "$one")
    if python3 -c "import sys; a, b = float('$s_full' or 0), float('$s_one' or 0); sys.exit(not 0 < b < a)"; then
        passes=$((passes + 1))
    else
        fail "$bench $rnd on $cores cores: step ${s_full:-none} s at the submission's batch, ${s_one:-none} s at 1 per core"
    fi
done

# The validated traces (scripts/validate.py's flags, docs/VALIDATION.md) are these benchmarks'.
$gen resnet50 --batch 128 --cores 32 --no-space-to-depth --optimizer lars -o "$tmp/v_rn.json"
$gen bert --batch 14 --cores 32 --layers 24 --hidden 1024 --heads 16 --ffn 4096 --seq 512 \
    --vocab 30522 --predictions 76 --optimizer lamb --f32-layernorm --clip-global-norm -o "$tmp/v_bert.json"
for pair in "v_rn resnet50_v0.6_32" "v_bert bert_v0.7_32"; do
    read -r a b <<<"$pair"
    if python3 -c "import json, sys; x, y = (json.load(open(f'$tmp/{n}.json')) for n in ('$a', '$b')); sys.exit(x['ops'] != y['ops'] or x.get('parameter_bytes') != y.get('parameter_bytes'))"; then
        passes=$((passes + 1))
    else
        fail "$b differs from the trace validate.py validates ($a)"
    fi
done

# MLPerf Inference v0.5 ResNet-50, offline, one v3-8: every core runs its own batch of 256,
# forward only, no collective; its matrix FLOPs are the forward convolutions and the classifier
# of 2048 images (2 x 4.09 GMAC per image, counted here from the architecture), and it runs.
$gen mlperf resnet50 --round v0.5 --inference --scenario offline --cores 8 -o "$tmp/inf.json" ||
    fatal "mlperf resnet50 --inference"
python3 - "$tmp/inf.json" <<'PY' && passes=$((passes + 1)) || fail "the inference trace"
import json, sys
t = json.load(open(sys.argv[1]))
assert t["samples_per_step"] == 2048, t["samples_per_step"]
kinds = {o["kind"] for o in t["ops"]}
assert "all_reduce" not in kinds and not any("grad" in o["id"] for o in t["ops"]), kinds
assert sum(o["kind"] == "infeed" for o in t["ops"]) == 1
B = 256
macs = 0
hw, c = 112, 64
macs += hw * hw * 7 * 7 * 3 * 64
hw = 56
for si, (w, n) in enumerate([(64, 3), (128, 4), (256, 6), (512, 3)]):
    for b in range(n):
        s = 2 if b == 0 and si > 0 else 1
        o = hw // s
        if b == 0:
            macs += o * o * c * 4 * w
        macs += hw * hw * c * w + o * o * 9 * w * w + o * o * w * 4 * w
        hw, c = o, 4 * w
macs += 2048 * 1000
mm = sum(2 * o["batch"] * o["c_out"] * o["kh"] * o["kw"] * o["c_in"] *
         -(-o["h"] // o["stride_h"]) * -(-o["w"] // o["stride_w"])
         for o in t["ops"] if o["kind"] == "conv2d")
mm += sum(2 * o["m"] * o["k"] * o["n"] for o in t["ops"] if o["kind"] == "matmul")
assert mm == 2 * B * macs, (mm, 2 * B * macs)
PY
"$bin" run --config configs/tpu_v3_8.json --trace "$tmp/inf.json" -q > /dev/null ||
    fail "run of the inference trace"

# Every MLPerf Inference v0.5 offline benchmark (INFERENCE_BENCHES: ResNet-50, SSD-Large,
# GNMT) on one v3-8: the trace checks, its samples_per_step is 8 x the batch its input carries
# (bytes per sample: 224 x 224 x 3 8-bit pixels; 1200 x 1200 int32 words of packed pixels; a
# source of 160 int32 ids and its length), it has no collective, and it runs at one sample per
# core (the submissions' batches run in scripts/mlperf.py: SSD-Large and GNMT take about a
# minute each, ten under the sanitizers).
inf_sample() {
    case $1 in
    resnet50) echo $((224 * 224 * 3)) ;;
    ssd-large) echo $((1200 * 1200 * 4)) ;;
    gnmt) echo $(((160 + 1) * 4)) ;;
    *) echo 0 ;;
    esac
}
inf_benches=$(cd scripts && python3 -c '
from tracegen.mlperf import INFERENCE_BENCHES
print(" ".join(sorted(INFERENCE_BENCHES)))') || fatal "cannot read INFERENCE_BENCHES"
for bench in $inf_benches; do
    f="$tmp/inf_$bench.json"
    $gen mlperf "$bench" --round v0.5 --inference --scenario offline --cores 8 -o "$f" ||
        { fail "mlperf $bench --inference"; continue; }
    out=$("$bin" trace check --config configs/tpu_v3_8.json --trace "$f" 2>&1)
    if [ $? -ne 0 ] || [[ "$out" != *": ok, "* ]]; then fail "trace check $bench --inference: $out"; fi
    python3 - "$f" "$(inf_sample "$bench")" <<'PY' && passes=$((passes + 1)) || fail "the $bench inference trace"
import json, sys
t = json.load(open(sys.argv[1]))
per_sample = int(sys.argv[2])
infeed = [o for o in t["ops"] if o["kind"] == "infeed"]
assert len(infeed) == 1 and per_sample, infeed
per_core, rem = divmod(infeed[0]["bytes"], per_sample)
assert rem == 0 and t["samples_per_step"] == 8 * per_core == t["metadata"]["global_batch"], \
    (infeed[0]["bytes"], t["samples_per_step"])
assert t["cores"] == 8 and not any(o["kind"] in ("all_reduce", "reduce_scatter", "all_gather")
                                   for o in t["ops"])
PY
    $gen mlperf "$bench" --round v0.5 --inference --scenario offline --cores 8 \
        --per-core-batch 1 -o "$tmp/inf_one.json" || { fail "mlperf $bench --inference, 1 per core"; continue; }
    s=$(step_seconds configs/tpu_v3_8.json "$tmp/inf_one.json")
    if python3 -c "import sys; sys.exit(not float('${s:-0}') > 0)"; then
        passes=$((passes + 1))
    else
        fail "run of the $bench inference trace: ${s:-no step}"
    fi
done

# SSD-Large's shapes from the code (ssd_constants.py, ssd_architecture.py): the class heads
# (3x3, stride 3) cover 15,130 anchors of 81 classes; each of the 80 object classes has its
# NMS (a self-suppression loop on one tile of 256); the class top-k sorts every image's and
# class's row of 15,130 scores (one row a trip: 128 x 81 trips).
python3 - "$tmp/inf_ssd-large.json" <<'PY' && passes=$((passes + 1)) || fail "SSD-Large's shapes"
import json, sys
t = json.load(open(sys.argv[1]))
heads = [o for o in t["ops"] if o["kind"] == "conv2d" and o["id"].endswith(".class.conv")]
anchors = sum(-(-o["h"] // o["stride_h"]) * -(-o["w"] // o["stride_w"]) * o["c_out"] // 81
              for o in heads)
assert len(heads) == 6 and anchors == 15130, (len(heads), anchors)
nms = [lp for lp in t["loops"] if lp["id"].endswith(".nms.self")]
assert len(nms) == 80, len(nms)
ops = {o["id"]: o for o in t["ops"]}
assert all(ops[lp["body"][1]]["elements"] == 128 * 256 * 256 for lp in nms)
rows = next(lp for lp in t["loops"] if lp["id"] == "post.class_topk_rows")
assert rows["trips"] == 128 * 81, rows
PY

# GNMT's beam search from the code (nmt.py defaults, model.py, beam_search_decoder.py): the
# decode loop runs its bound, tgt_max_len_infer = 160 trips, on 128 x 10 hypotheses, each
# trip projecting them to the 32,316 subwords and sorting each row for its top 10; the
# encoder's five recurrent loops run the longest source branch, 128 steps.
python3 - "$tmp/inf_gnmt.json" <<'PY' && passes=$((passes + 1)) || fail "GNMT's beam search"
import json, sys
t = json.load(open(sys.argv[1]))
loops = {lp["id"]: lp for lp in t["loops"]}
ops = {o["id"]: o for o in t["ops"]}
dec = loops["decode"]
assert dec["trips"] == 160, dec["trips"]
proj = ops["dec.projection"]
assert (proj["m"], proj["k"], proj["n"]) == (128 * 10, 1024, 32316), proj
assert "dec.projection" in dec["body"] and "beam.topk_words" in dec["body"]
enc = [lp for k, lp in loops.items() if k.startswith("enc.")]
assert len(enc) == 5 and all(lp["trips"] == 128 for lp in enc), enc
PY

# Bad input: one located error line, exit 2 (not argparse's usage).
for args in "bert --round v0.7 --cores 8" "resnet50 --round v0.9 --cores 32" \
    "transformer --round v0.6 --cores 32 --per-core-batch 0" "gnmt --round v0.6 --cores 32 --bucket 5" \
    "bert --round v0.7 --cores 32 --bucket 1" \
    "resnet50 --round v0.5 --inference --scenario server --cores 8" \
    "bert --round v0.7 --inference --scenario offline --cores 32" \
    "resnet50 --round v0.5 --inference --scenario offline --cores 32" \
    "resnet50 --round v0.6 --scenario offline --cores 32" \
    "ssd-large --round v0.5 --cores 8" \
    "gnmt --round v0.5 --inference --scenario offline --cores 8 --bucket 4"; do
    # shellcheck disable=SC2086
    err=$($gen mlperf $args -o "$tmp/bad.json" 2>&1 >/dev/null)
    rc=$?
    if [ $rc -ne 2 ] || [ "$(grep -c . <<<"$err")" -ne 1 ] || [[ "$err" != "error: gen_trace.py mlperf "* ]]; then
        fail "mlperf $args: rc=$rc: $err"
    else
        passes=$((passes + 1))
    fi
done
finish
