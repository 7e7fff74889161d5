#!/usr/bin/env python3
"""Run the same programs on both HBM models and print how far the fast one is from its reference.

`tpusim run` serves HBM traffic from the calibrated transaction model by default
(sim.hbm_model=calibrated: rates and latencies measured on the burst-level model at start);
`--set sim.hbm_model=burst` runs the burst-level model itself (banks, JEDEC timing, FR-FCFS,
refresh), the reference, one to two orders of magnitude slower. This script replays a set of
one-core programs on configs/tpu_v3_8.json with both and prints cycles and the difference, so a
change to either model shows what it does to their agreement. docs/hbm.md ("Known limitation")
explains the differences it shows today: the turnaround of programs that read and write (the
calibrated path charges a steady copy's), refresh in the latency (small dependent transfers).

Usage: scripts/crosscheck_hbm.py [--tpusim build/tpusim] [--config configs/tpu_v3_8.json]
                                 [--only NAME,...] [--set KEY=VALUE ...]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from validate import one_op_trace, run_guarded, run_trace_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def op_trace(name, op):
    return one_op_trace(dict(op, id=name))


# (name, what it stands for, one-op trace or gen_trace.py arguments)
CASES = [
    ("gelu_32M", "streaming copy (GELU of 32 M f32 elements)",
     op_trace("gelu_32M", {"kind": "vector", "op": "gelu", "elements": 32 * 2**20,
                           "dtype": "f32"})),
    ("adam_7M", "seven interleaved streams (Adam on 7 M f32 parameters)",
     op_trace("adam_7M", {"kind": "vector", "op": "adam", "elements": 7 * 2**20,
                          "dtype": "f32"})),
    ("attention_bmm", "small dependent transfers (48 batched 128 x 128 x 64 bf16 matmuls)",
     op_trace("attention_bmm", {"kind": "matmul", "m": 128, "k": 128, "n": 64, "batch": 48,
                                "dtype": "bf16"})),
    ("gemm_4096x256x256", "small-K/N GEMM",
     op_trace("gemm_4096x256x256", {"kind": "matmul", "m": 4096, "k": 256, "n": 256,
                                    "dtype": "bf16"})),
    ("gemm_16384x128x128", "thin GEMM, read and write streams",
     op_trace("gemm_16384x128x128", {"kind": "matmul", "m": 16384, "k": 128, "n": 128,
                                     "dtype": "bf16"})),
    ("scale_tile", "one 8 x 128 f32 tile in and out (a minimal kernel)",
     op_trace("scale_tile", {"kind": "vector", "op": "scale", "rows": 8, "cols": 128,
                             "dtype": "f32"})),
    ("bert_1layer", "BERT training step, one layer, seq 128, batch 4",
     ["bert", "--layers", "1", "--seq", "128", "--batch", "4", "--cores", "1"]),
    ("resnet50_b8", "ResNet-50 training step, batch 8, 112 x 112",
     ["resnet50", "--batch", "8", "--cores", "1", "--image", "112", "--no-space-to-depth"]),
]


def cycles(tpusim, config, trace, model, sets):
    return run_trace_file(tpusim, config, trace, [f"sim.hbm_model={model}", *sets])["cycles"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tpusim", default=os.path.join(ROOT, "build", "tpusim"))
    ap.add_argument("--config", default=os.path.join(ROOT, "configs", "tpu_v3_8.json"))
    ap.add_argument("--only", default="", help="comma-separated case names (default: all)")
    ap.add_argument("--set", action="append", default=[], dest="sets",
                    help="a config override for both runs, e.g. hbm.timing.tRFC=0 (repeatable)")
    a = ap.parse_args()
    only = [x for x in a.only.split(",") if x]
    names = [c[0] for c in CASES]
    unknown = [x for x in only if x not in names]
    if unknown:
        print(f"crosscheck_hbm: unknown case {unknown[0]!r} (cases: {', '.join(names)})",
              file=sys.stderr)
        return 2
    print("| case | what | calibrated | burst-level | calibrated vs burst |")
    print("|---|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, what, spec in CASES:
            if only and name not in only:
                continue
            path = os.path.join(tmp, name + ".json")
            if isinstance(spec, dict):
                with open(path, "w") as f:
                    json.dump(spec, f)
            else:
                subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_trace.py"),
                                *spec, "-o", path], check=True, stdout=subprocess.DEVNULL)
            cal = cycles(a.tpusim, a.config, path, "calibrated", a.sets)
            ref = cycles(a.tpusim, a.config, path, "burst", a.sets)
            print(f"| {name} | {what} | {cal:,} | {ref:,} | {(cal - ref) / ref * 100:+.1f}% |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(run_guarded(main, "crosscheck_hbm"))
