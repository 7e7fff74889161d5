#!/usr/bin/env bash
# `tpusim train`: bad run descriptions are located exit-2 errors, and exact step reuse gives the
# same run, to the cycle, as simulating every step (three tiny workloads, one input-bound).
# Usage: train.sh path/to/tpusim (run from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
d=tests/data/train
v3=configs/tpu_v3_8.json

run_bad() {  # NAME WANT JSON
    printf '%s' "$3" > "$tmp/$1.json"
    expect_error "$1" "$tmp/$1.json: $2" -- train --config $v3 --trace $d/mlp_step.json \
        --run "$tmp/$1.json" -q
}
ok='"format": "tpusim.run", "version": 1'
run_bad format "/format: expected \"tpusim.run\"" '{"format": "tpusim.trace", "version": 1}'
run_bad no_batch "/global_batch: missing" "{$ok, \"dataset\": {\"samples\": 10}}"
run_bad no_dataset "/dataset: missing" "{$ok, \"global_batch\": 8}"
run_bad batch_type "/global_batch: expected an integer" "{$ok, \"global_batch\": \"8\", \"dataset\": {\"samples\": 10}}"
run_bad zero_samples "/dataset/samples: expected an integer in [1," "{$ok, \"global_batch\": 8, \"dataset\": {\"samples\": 0}}"
run_bad unknown "/pipeline/prefetch: unknown key" "{$ok, \"global_batch\": 8, \"dataset\": {\"samples\": 10}, \"pipeline\": {\"prefetch\": 2}}"
run_bad source "/dataset/source: expected \"memory\", \"disk\" or \"gcs\"" "{$ok, \"global_batch\": 8, \"dataset\": {\"samples\": 10, \"source\": \"s3\"}}"
run_bad cost "/pipeline/preprocess_ms_per_sample: expected a number in [0," "{$ok, \"global_batch\": 8, \"dataset\": {\"samples\": 10}, \"pipeline\": {\"preprocess_ms_per_sample\": -1}}"
run_bad cache "/pipeline/cache: expected true or false" "{$ok, \"global_batch\": 8, \"dataset\": {\"samples\": 10}, \"pipeline\": {\"cache\": 1}}"
run_bad sources "/sources/x: expected a string" "{$ok, \"global_batch\": 8, \"dataset\": {\"samples\": 10}, \"sources\": {\"x\": 3}}"
run_bad drop "/global_batch: larger than the 10 samples" "{$ok, \"global_batch\": 16, \"drop_remainder\": true, \"dataset\": {\"samples\": 10}}"
run_bad programs "/compiled_programs: expected an integer in [1," "{$ok, \"global_batch\": 8, \"compiled_programs\": 0, \"dataset\": {\"samples\": 10}}"
run_bad top_array "/: expected an object" '[1]'
# Evaluation passes (docs/train.md, "Evaluation passes").
ev='"global_batch": 8, "dataset": {"samples": 10}'
run_bad eval_samples "/eval/samples: missing" "{$ok, $ev, \"eval\": {\"every_steps\": 2}}"
run_bad eval_key "/eval/every: unknown key" "{$ok, $ev, \"eval\": {\"samples\": 4, \"every\": 2}}"
run_bad eval_both "/eval/every_epochs: given with every_steps" "{$ok, $ev, \"eval\": {\"samples\": 4, \"every_steps\": 2, \"every_epochs\": 1}}"
run_bad eval_steps "/eval/every_steps: expected an integer in [1," "{$ok, $ev, \"eval\": {\"samples\": 4, \"every_steps\": 0}}"
run_bad eval_drop "/eval/samples: the eval batch of 8 is larger than the 4 eval samples" "{$ok, $ev, \"eval\": {\"samples\": 4, \"drop_remainder\": true}}"
run_bad eval_trace "/eval/trace: missing; evaluation passes need their step program" "{$ok, $ev, \"eval\": {\"samples\": 4}}"
run_bad eval_pipelined "/eval/pipelined: expected true or false" "{$ok, $ev, \"eval\": {\"samples\": 4, \"pipelined\": \"no\"}}"
run_bad eval_cost "/eval/preprocess_ms_per_sample: expected a number in [0," "{$ok, $ev, \"eval\": {\"samples\": 4, \"preprocess_ms_per_sample\": -2}}"
# Checkpoints (docs/train.md, "Checkpoints").
run_bad ckpt_bytes "/checkpoint/bytes: missing" "{$ok, $ev, \"checkpoint\": {\"every_steps\": 2}}"
run_bad ckpt_zero "/checkpoint/bytes: expected an integer in [1," "{$ok, $ev, \"checkpoint\": {\"bytes\": 0, \"every_steps\": 2}}"
run_bad ckpt_none "/checkpoint: no save is triggered" "{$ok, $ev, \"checkpoint\": {\"bytes\": 100}}"
run_bad ckpt_key "/checkpoint/every: unknown key" "{$ok, $ev, \"checkpoint\": {\"bytes\": 100, \"every\": 2}}"
run_bad ckpt_eval "/checkpoint/after_eval: the run has no evaluation passes" "{$ok, $ev, \"checkpoint\": {\"bytes\": 100, \"after_eval\": true}}"
run_bad ckpt_epochs "/checkpoint/every_epochs: expected an integer in [1," "{$ok, $ev, \"checkpoint\": {\"bytes\": 100, \"every_epochs\": -1}}"
# The weights' one-off transfers (docs/train.md, "Weights").
run_bad w_bytes "/weights/bytes: missing" "{$ok, $ev, \"weights\": {\"upload\": true}}"
run_bad w_zero "/weights/bytes: expected an integer in [1," "{$ok, $ev, \"weights\": {\"bytes\": 0}}"
run_bad w_key "/weights/load: unknown key" "{$ok, $ev, \"weights\": {\"bytes\": 100, \"load\": true}}"
run_bad w_none "/weights: neither upload nor download" "{$ok, $ev, \"weights\": {\"bytes\": 100, \"upload\": false, \"download\": false}}"
run_bad w_type "/weights/upload: expected true or false" "{$ok, $ev, \"weights\": {\"bytes\": 100, \"upload\": 1}}"
printf '{%s, %s}' "$ok" "$ev" > "$tmp/noeval.json"
expect_error "eval trace without eval" "/eval: missing, but an eval step program was given" -- \
    train --config $v3 --trace $d/mlp_step.json --run "$tmp/noeval.json" --eval-trace $d/mlp_eval.json -q
printf '{%s, %s, "eval": {"samples": 4}}' "$ok" "$ev" > "$tmp/evalcores.json"
expect_error "eval on other cores" "dp_step.json: /cores: the eval step runs on 8 cores and the training step on 1" -- \
    train --config $v3 --trace $d/mlp_step.json --run "$tmp/evalcores.json" --eval-trace $d/dp_step.json -q
# Runs too long for the host model, and absurd per-batch figures: located errors, not an
# allocation of one record per step, a multi-hour loop or a wrapped 64-bit product (the
# pipeline rule itself: tests/unit/train_pipeline_test.cpp).
run_bad huge_epoch "/dataset/samples: the run has 1099511627776 steps" "{$ok, \"global_batch\": 1, \"dataset\": {\"samples\": 1099511627776}}"
run_bad forever "/epochs: the run would last more than 2^62 core cycles" "{$ok, \"global_batch\": 1099511627776, \"dataset\": {\"samples\": 1099511627776, \"infeed_bytes_per_sample\": 1099511627776}, \"pipeline\": {\"preprocess_ms_per_sample\": 10000000}}"
run_bad many_epochs "/epochs: the run has 200000000 steps (100000 epochs x 2000 steps" "{$ok, \"global_batch\": 1, \"epochs\": 100000, \"dataset\": {\"samples\": 2000}}"
printf '{%s, "global_batch": 8, "dataset": {"samples": 10}}' "$ok" > "$tmp/noinfeed.json"
expect_error "no infeed anywhere" "/dataset/infeed_bytes_per_sample: missing" -- train --config $v3 \
    --trace traces/gemm.json --run "$tmp/noinfeed.json" -q
expect_error "missing run file" "cannot open" -- train --config $v3 --trace $d/mlp_step.json \
    --run "$tmp/nope.json" -q
expect_error "bad host key" "/host/vcpus" -- train --config $v3 --trace $d/mlp_step.json \
    --run $d/compute_bound.run.json --set host.vcpus=0 -q

# Reuse vs --no-reuse: the whole run (every epoch, the time split, each step's device cycles)
# must agree to the cycle.
compare() {  # NAME CONFIG TRACE RUN EXPECTED_VERDICT [--set ...]
    local name=$1 cfg=$2 trace=$3 run=$4 verdict=$5
    shift 5
    if ! "$bin" train --config "$cfg" --trace "$trace" --run "$run" --json -q "$@" > "$tmp/reuse.json" ||
        ! "$bin" train --config "$cfg" --trace "$trace" --run "$run" --json -q --no-reuse "$@" > "$tmp/full.json"; then
        echo "FAIL $name: train failed"
        fails=$((fails + 1))
        return
    fi
    if python3 - "$tmp/reuse.json" "$tmp/full.json" "$verdict" <<'PY'; then
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
want = sys.argv[3]
errs = []
if a["reused_steps"] == 0: errs.append("reuse run reused nothing")
if b["reused_steps"] != 0: errs.append("--no-reuse run reused steps")
if b["simulated_steps"] != b["steps"]: errs.append("--no-reuse did not simulate every step")
for k in ("total_cycles", "epochs_seconds", "time_split", "mxu_busy", "mxu_busy_first_epoch",
          "verdict", "first_steps", "what_ifs"):
    if a[k] != b[k]: errs.append(f"{k}: reuse {a[k]} != full {b[k]}")
steady = a["device_steps"][-1]
for i, s in enumerate(b["device_steps"][1:], 1):
    if s != steady: errs.append(f"step {i}: {s} != steady {steady}")
# Evaluation passes: the same passes and time, every simulated eval step the reused one.
ea, eb = a["eval"], b["eval"]
if ea["passes"] > 0:
    if ea["reused_steps"] == 0: errs.append("reuse run reused no eval step")
    if eb["reused_steps"] != 0 or eb["simulated_steps"] != eb["steps"]:
        errs.append("--no-reuse did not simulate every eval step")
    if eb["steps"] != ea["passes"] * ea["steps_per_pass"]: errs.append("eval steps != passes x steps")
    if a["time_split"]["eval"] <= 0: errs.append("no eval time")
    for i, s in enumerate(eb["device_steps"]):
        if s != ea["device_steps"][-1]: errs.append(f"eval step {i}: {s} != {ea['device_steps'][-1]}")
for k in ("passes", "steps", "seconds", "step_seconds"):
    if ea[k] != eb[k]: errs.append(f"eval {k}: reuse {ea[k]} != full {eb[k]}")
if a["verdict"] != want: errs.append(f"verdict {a['verdict']}, expected {want}")
if errs: print("\n".join(errs))
sys.exit(1 if errs else 0)
PY
        passes=$((passes + 1))
    else
        echo "FAIL $name: reuse and full simulation differ"
        fails=$((fails + 1))
    fi
}
# The tiny steps take microseconds: a 1 us dispatch keeps the first run compute-bound.
compare "mlp, compute-bound" $v3 $d/mlp_step.json $d/compute_bound.run.json compute-bound \
    --set host.dispatch_us=1
compare "mlp, input-bound" $v3 $d/mlp_step.json $d/input_bound.run.json input-bound
compare "data-parallel" configs/tpu_v2_8.json $d/dp_step.json $d/dp.run.json communication-bound
# With evaluation passes: one per epoch (the eval trace named in the run, a padded last eval
# batch, an input-bound pipeline), and every 2 steps of a data-parallel run (--eval-trace, the
# forward step of dp_step.json: its matmul without the gradient all-reduce).
compare "mlp, eval per epoch" $v3 $d/mlp_step.json $d/eval_epoch.run.json input-bound
compare "data-parallel, eval every 2 steps" configs/tpu_v2_8.json $d/dp_step.json \
    $d/dp_eval.run.json communication-bound --eval-trace $d/dp_eval.json
# Checkpoint saves after every eval pass and every 3rd step (docs/train.md, "Checkpoints").
compare "data-parallel, eval every 2 steps, checkpoints" configs/tpu_v2_8.json $d/dp_step.json \
    $d/dp_ckpt.run.json checkpoint-bound --eval-trace $d/dp_eval.json
# A TPU Node (Colab: the runtime's measured transfer path) with eval batches fed one at a time.
compare "mlp on a TPU Node, unpipelined eval" configs/colab_v2_8.json $d/mlp_step.json \
    $d/node_eval.run.json input-bound --set host.compile_base_s=0

# The Node transfer of a batch follows from the config's keys: the call's latency plus the batch
# at the slowest of PCIe per chip, the network and the runtime's path (docs/train.md, infeed).
if "$bin" config --dump --config configs/colab_v2_8.json > "$tmp/colab.json" &&
    "$bin" train --config configs/colab_v2_8.json --trace $d/mlp_step.json \
        --run $d/node_eval.run.json --json -q > "$tmp/node.json" &&
    python3 - "$tmp/colab.json" "$tmp/node.json" <<'PY'; then
import json, sys
cfg, rep = (json.load(open(p)) for p in sys.argv[1:3])
h = cfg["host"]
chips = cfg["board"]["chips_x"] * cfg["board"]["chips_y"]
batch = 64 * 65536  # global_batch x infeed_bytes_per_sample of node_eval.run.json
rate = min(h["network_bandwidth_gbps"], h["node_transfer_gbps"]) * 1e9
want = max(batch / chips / (h["pcie_bandwidth_gbps"] * 1e9),
           h["node_transfer_latency_us"] * 1e-6 + batch / rate)
got = rep["host"]["infeed_seconds_per_batch"]
clock_hz = cfg["chip"]["clock_mhz"] * 1e6
ok = h["access"] == "node" and h["node_transfer_gbps"] > 0 and abs(got - want) * clock_hz <= 1
if not ok: print(f"infeed per batch {got} s, expected {want} s from the config")
# The transfer-bound run's lever: half the bytes sent to the Node shortens its epoch.
half = [w for w in rep["what_ifs"] if w["change"].startswith("half the input bytes")]
if len(half) != 1 or not half[0]["epoch_seconds"] < rep["epoch_seconds"]:
    print(f"no shorter 'half the input bytes' what-if: {rep['what_ifs']}")
    ok = False
sys.exit(0 if ok else 1)
PY
    passes=$((passes + 1))
else
    echo "FAIL Node transfer per batch does not follow from the config"
    fails=$((fails + 1))
fi

# The timeline has the three lanes, and every step lies on the device lane after its infeed.
if "$bin" train --config $v3 --trace $d/mlp_step.json --run $d/input_bound.run.json -q \
    --timeline "$tmp/tl.json" >/dev/null && python3 - "$tmp/tl.json" <<'PY'; then
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
lanes = {e["args"]["name"] for e in ev if e.get("name") == "thread_name"}
assert lanes == {"input pipeline", "infeed", "device"}, lanes
spans = {(e["tid"], e["name"]): e for e in ev if e["ph"] == "X"}
for i in range(10):
    step, feed = spans[(2, f"step {i}")], spans[(1, f"batch {i}")]
    assert step["ts"] >= feed["ts"] + feed["dur"] - 1e-6, i
PY
    passes=$((passes + 1))
else
    echo "FAIL timeline"
    fails=$((fails + 1))
fi

# With a validation pass per epoch, the eval steps lie on the device lane between the epoch's
# last training step and the next epoch's first, each after its eval batch's infeed.
if "$bin" train --config $v3 --trace $d/mlp_step.json --run $d/eval_epoch.run.json -q \
    --timeline "$tmp/tle.json" >/dev/null && python3 - "$tmp/tle.json" <<'PY'; then
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
spans = {(e["tid"], e["name"]): e for e in ev if e["ph"] == "X"}
end = lambda e: e["ts"] + e["dur"]
for i in range(5):  # the eval pass: 6 steps of 128 samples
    step, feed = spans[(2, f"eval step {i}")], spans[(1, f"eval batch {i}")]
    assert step["ts"] >= end(feed) - 1e-6, i
    if i: assert step["ts"] >= end(spans[(2, f"eval step {i - 1}")]) - 1e-6, i
assert spans[(2, "eval step 0")]["ts"] >= end(spans[(2, "step 4")]) - 1e-6
assert spans[(2, "step 5")]["ts"] >= end(spans[(2, "eval step 5")]) - 1e-6
PY
    passes=$((passes + 1))
else
    echo "FAIL timeline with eval steps"
    fails=$((fails + 1))
fi

# The saves lie on the device lane after their step (and its eval pass) and before the next
# step: 100 MB from one chip at the v2-8 config's PCIe rate each.
if "$bin" train --config configs/tpu_v2_8.json --trace $d/dp_step.json --run $d/dp_ckpt.run.json \
    --eval-trace $d/dp_eval.json -q --timeline "$tmp/tlc.json" >/dev/null &&
    "$bin" config --dump --config configs/tpu_v2_8.json > "$tmp/v2.json" &&
    python3 - "$tmp/tlc.json" "$tmp/v2.json" <<'PY'; then
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
pcie = json.load(open(sys.argv[2]))["host"]["pcie_bandwidth_gbps"]
spans = {(e["tid"], e["name"]): e for e in ev if e["ph"] == "X"}
end = lambda e: e["ts"] + e["dur"]
saves = sorted(n for (t, n) in spans if t == 2 and n.startswith("checkpoint after step"))
assert saves == [f"checkpoint after step {i}" for i in (1, 2, 3)], saves
for i in (1, 2, 3):
    c = spans[(2, f"checkpoint after step {i}")]
    assert abs(c["dur"] - 1e8 / (pcie * 1e9) * 1e6) < 0.01, c  # us
    assert c["ts"] >= end(spans[(2, f"step {i}")]) - 1e-6, i
    assert spans[(2, f"step {i + 1}")]["ts"] >= end(c) - 1e-6, i
assert c["ts"] >= end(spans[(2, "eval step 3")]) - 1e-6  # step 3's save follows its pass
PY
    passes=$((passes + 1))
else
    echo "FAIL timeline with checkpoints"
    fails=$((fails + 1))
fi

# The weights' upload lies on the device lane after the compile (1 s here) and before step 0,
# the download after the last step; each is 100 MB over one chip's PCIe link on the v3-8
# config, and the report's split adds up to the run.
printf '%s' "{$ok, \"global_batch\": 8, \"epochs\": 2, \"dataset\": {\"samples\": 32}, \"weights\": {\"bytes\": 100000000}}" \
    > "$tmp/weights.run.json"
if "$bin" train --config $v3 --trace $d/mlp_step.json --run "$tmp/weights.run.json" -q \
    --set host.compile_base_s=1 --timeline "$tmp/tlw.json" --json > "$tmp/w.json" &&
    "$bin" config --dump --config $v3 > "$tmp/v3.json" &&
    python3 - "$tmp/tlw.json" "$tmp/v3.json" "$tmp/w.json" <<'PY'; then
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
pcie = json.load(open(sys.argv[2]))["host"]["pcie_bandwidth_gbps"]
rep = json.load(open(sys.argv[3]))
spans = {(e["tid"], e["name"]): e for e in ev if e["ph"] == "X"}
end = lambda e: e["ts"] + e["dur"]
up, down = spans[(2, "weights upload")], spans[(2, "weights download")]
us = 1e8 / (pcie * 1e9) * 1e6
assert abs(up["dur"] - us) < 0.01 and abs(down["dur"] - us) < 0.01, (up, down, us)
assert abs(up["ts"] - end(spans[(2, "compile")])) < 1e-6, up
assert spans[(2, "step 0")]["ts"] >= end(up) - 1e-6
w = rep["weights"]
assert w["bytes"] == 100000000
assert abs(w["seconds"] - w["upload_seconds"] - w["download_seconds"]) < 1e-9, w
assert abs(rep["time_split"]["weights"] - w["seconds"]) < 1e-9
assert abs(sum(rep["time_split"].values()) - rep["total_seconds"]) < 1e-6, rep["time_split"]
# The download is in the run, not in an epoch; the upload is in the first epoch.
assert abs(rep["total_seconds"] - sum(rep["epochs_seconds"]) - w["download_seconds"]) < 1e-6
PY
    passes=$((passes + 1))
else
    echo "FAIL weights upload and download"
    fails=$((fails + 1))
fi

# The Siamese encoder of gen_trace.py bert --seq2 (the RoBERTa/QUEST case) runs the same encoder
# on a second sequence: with seq2 = seq, its encoder is the single-sequence step at twice the
# batch, so the matmul FLOPs agree except the head (one prediction per sample: P x h x vocab
# forward and two such products backward, for 1 sample fewer) and nothing else.
gen_b() {  # OUT ARGS...
    local out=$1
    shift
    python3 scripts/gen_trace.py bert --layers 1 --seq 64 --hidden 128 --heads 2 --ffn 256 \
        --vocab 512 --predictions 1 --cores 1 "$@" -o "$out"
}
if gen_b "$tmp/siam.json" --batch 1 --seq2 64 && gen_b "$tmp/b2.json" --batch 2 &&
    "$bin" run --config $v3 --trace "$tmp/siam.json" --json > "$tmp/siam.out" &&
    "$bin" run --config $v3 --trace "$tmp/b2.json" --json > "$tmp/b2.out" &&
    python3 - "$tmp/siam.out" "$tmp/b2.out" <<'PY'; then
import json, sys
siam, b2 = (json.load(open(f))["mxu_flops"] for f in sys.argv[1:])
# The head's matmuls: transform (1 x 128 x 128) forward, dx and dw backward, and the logits
# (1 x 128 x 512) forward, d(transform) and d(embedding) backward: 2 FLOPs per MAC.
head_per_sample = 2 * 3 * (128 * 128 + 128 * 512)
assert siam == b2 - head_per_sample, (siam, b2, head_per_sample)
PY
    passes=$((passes + 1))
else
    echo "FAIL siamese encoder FLOPs"
    fails=$((fails + 1))
fi

finish
