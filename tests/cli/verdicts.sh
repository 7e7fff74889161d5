#!/usr/bin/env bash
# Bottleneck verdicts on constructed one-op programs, one for each verdict: compute, hbm,
# vector (alone and fused into a matmul), ici, host, latency. For each the test also checks
# that the verdicts use one rule: the run's verdict follows from its utilization figures,
# and the op's from its busy cycles and bytes over its duration (docs/program.md).
# Usage: verdicts.sh path/to/tpusim (run from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
v3=configs/tpu_v3_8.json
status=0

# case name, expected verdict, cores, ops (JSON)
check() {
    local name=$1 expect=$2 cores=$3 ops=$4
    printf '{"format": "tpusim.trace", "version": 1, "name": "%s", "cores": %s, "ops": [%s]}\n' \
        "$name" "$cores" "$ops" > "$tmp/$name.json"
    if ! "$bin" run --config $v3 --trace "$tmp/$name.json" --quiet --json > "$tmp/$name.out"; then
        echo "FAIL $name: tpusim run exited with $?"
        status=1
        return
    fi
    python3 - "$tmp/$name.out" "$name" "$expect" <<'PY' || status=1
import json, sys
r = json.load(open(sys.argv[1])); name, expect = sys.argv[2], sys.argv[3]
cfg = r["config"]
def rule(mxu, hbm, vpu, ici, host):
    shares = [(mxu, "compute"), (hbm, "hbm"), (vpu, "vector"), (ici, "ici"), (host, "host")]
    if max(s for s, _ in shares) < 0.5:
        return "latency"
    return max(shares, key=lambda s: s[0])[1]
u = r["utilization"]
run_rule = rule(u["mxu_busy"], u["hbm_bandwidth"], u["vpu_busy"], u["ici_busy"], u["host_busy"])
# The first op: its group holds the ops fused into it, directly or along a chain.
ops = r["ops"]
head = ops[0]
by_id = {o["id"]: o for o in ops}
def root(o):
    while o["bottleneck"].startswith("fused into "):
        o = by_id[o["bottleneck"][len("fused into "):]]
    return o
group = [o for o in ops if root(o) is head]
if name in ("vector", "fused_vector") and len(group) < 3:
    print(f"FAIL {name}: the fused ops did not fuse: {[o['bottleneck'] for o in ops]}")
    sys.exit(1)
d = max(o["end_cycle"] for o in group) - min(o["start_cycle"] for o in group)
cores = r["cores"]
busy = {k: sum(o["unit_busy_cycles"][k] for o in group) for k in ["MXU", "VPU", "ICI", "host"]}
hbm_bytes = sum(o["hbm_bytes"] for o in group)
core_bw = r["hbm"]["peak_gbps_per_chip"] * 1e9 / cfg["chip"]["cores_per_chip"]
span = d * cores
op_rule = rule(busy["MXU"] / (span * cfg["core"]["mxus"]),
               hbm_bytes / (span / (cfg["chip"]["clock_mhz"] * 1e6) * core_bw),
               busy["VPU"] / span, busy["ICI"] / span, busy["host"] / span)
errors = []
if r["bottleneck"] != expect:
    errors.append(f'run verdict {r["bottleneck"]}, expected {expect} (utilization {u})')
if head["bottleneck"] != expect:
    errors.append(f'op verdict {head["bottleneck"]}, expected {expect}')
if run_rule != r["bottleneck"]:
    errors.append(f'run verdict {r["bottleneck"]} but its utilization says {run_rule}')
if op_rule != head["bottleneck"]:
    errors.append(f'op verdict {head["bottleneck"]} but its busy cycles say {op_rule}')
if errors:
    print(f"FAIL {name}: " + "; ".join(errors))
    sys.exit(1)
print(f"ok   {name}: {expect}")
PY
}

# MXU-bound: 2*4096^3 FLOP take 4096^3/(2*128*128) = 1.05 M cycles on 2 MXUs; the operands
# (96 MiB through HBM) take ~0.2 M cycles at a core's 478 B/cycle.
check compute compute 1 \
    '{"id": "mm", "kind": "matmul", "m": 4096, "k": 4096, "n": 4096, "dtype": "bf16"}'
# A copy does no arithmetic: 256 MiB read and written through the core's HBM share.
check hbm hbm 1 '{"id": "cp", "kind": "copy", "bytes": 268435456}'
# Elementwise ops chained in VMEM (exp -> tanh -> gelu -> sigmoid fused): the VPU does four
# ops per element on 4 B/element of HBM traffic. (One elementwise op alone is HBM-bound on a
# TPU: the VPU does 2048 32-bit ops per cycle, a core's HBM share moves ~478 B per cycle.)
check vector vector 1 \
    '{"id": "e", "kind": "vector", "op": "exp", "rows": 4096, "cols": 1024, "dtype": "bf16"},
     {"id": "t", "kind": "vector", "op": "tanh", "rows": 4096, "cols": 1024, "dtype": "bf16", "deps": ["e"], "fused": true},
     {"id": "g", "kind": "vector", "op": "gelu", "rows": 4096, "cols": 1024, "dtype": "bf16", "deps": ["t"], "fused": true},
     {"id": "s", "kind": "vector", "op": "sigmoid", "rows": 4096, "cols": 1024, "dtype": "bf16", "deps": ["g"], "fused": true}'
# Attention scores with softmax and dropout fused in (BERT-base): their VPU work counts on
# the VPU within the matmul's verdict.
check fused_vector vector 1 \
    '{"id": "scores", "kind": "matmul", "m": 512, "k": 64, "n": 512, "batch": 96, "dtype": "bf16"},
     {"id": "softmax", "kind": "vector", "op": "softmax", "rows": 49152, "cols": 512, "dtype": "bf16", "deps": ["scores"], "fused": true},
     {"id": "dropout", "kind": "vector", "op": "dropout", "rows": 49152, "cols": 512, "dtype": "bf16", "deps": ["softmax"], "fused": true}'
# 64 MiB all-reduced over 8 cores: ~2 x 7/8 x 64 MiB per core over the links.
check ici ici 8 '{"id": "ar", "kind": "all_reduce", "bytes": 67108864}'
# 64 MiB over a 16 GB/s PCIe link.
check host host 1 '{"id": "in", "kind": "infeed", "bytes": 67108864}'
# A 512-byte copy: DMA setup and HBM latency, nothing near saturation.
check latency latency 1 '{"id": "cp", "kind": "copy", "bytes": 512}'
exit $status
