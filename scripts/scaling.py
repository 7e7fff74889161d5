#!/usr/bin/env python3
"""Scaling study: ResNet-50 and BERT-base training steps from a v3-8 board to the v3-2048 pod.

For every v3 slice config (configs/tpu_v3_N.json, N = 8 .. 2048) and both models, generates
the data-parallel step with `scripts/gen_trace.py ... --cores N` and replays it with
`tpusim run`:
  - fixed per-core batch (weak scaling): ResNet-50 128 images per core (the MLPerf batch of
    validation/README.md), BERT-base seq 512 with 8 sequences per core;
  - fixed global batch (strong scaling), --global: ResNet-50 4096 images, BERT-base 256
    sequences, i.e. 4096 / N resp. 256 / N per core while that is at least 1.
Writes a CSV (model, scaling, config, cores, chips, batch per core, step seconds, samples/s,
samples/s per chip, wall seconds of the run, cores simulated: 2 where SPMD symmetry let one
chip stand for the slice, docs/pods.md) and an SVG plot of samples/s per chip against chips. Slices whose run does not finish within --timeout seconds of wall time are recorded
as such and left out of the plot.

Usage: scripts/scaling.py [--tpusim build/tpusim] [--max-cores 2048] [--timeout 600]
                          [--global] [--csv docs/pods_scaling.csv] [--svg docs/pods_scaling.svg]
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLICES = [8, 32, 64, 128, 256, 512, 1024, 2048]
# model -> (gen_trace arguments, per-core batch at fixed per-core batch, global batch, unit)
MODELS = {
    "ResNet-50": (["resnet50"], 128, 4096, "images"),
    "BERT-base": (["bert", "--seq", "512"], 8, 256, "sequences"),
}


def run_point(a, tmp, model, cores, per_core):
    args, _, _, _ = MODELS[model]
    trace = os.path.join(tmp, f"{model}_{cores}_{per_core}.json")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_trace.py"), *args,
                    "--batch", str(per_core), "--cores", str(cores), "-o", trace], check=True)
    config = os.path.join(ROOT, "configs", f"tpu_v3_{cores}.json")
    start = time.monotonic()
    try:
        out = subprocess.run([a.tpusim, "run", "--config", config, "--trace", trace, "--json",
                              "-q"], check=True, capture_output=True, text=True,
                             timeout=a.timeout).stdout
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - start, None
    except subprocess.CalledProcessError as e:
        # Bad input at this point (e.g. a VMEM error of the program at this batch) is
        # recorded as not run, with tpusim's message, and the study goes on.
        print(f"  {model} v3-{cores} batch/core {per_core}: {e.stderr.strip().splitlines()[-1]}",
              flush=True)
        return None, time.monotonic() - start, None
    report = json.loads(out)
    return report["seconds"], time.monotonic() - start, report["symmetry"]["simulated_cores"]


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(MODELS), figsize=(11, 4))
    for ax, model in zip(axes, MODELS):
        for scaling, style in (("per-core batch", "o-"), ("global batch", "s--")):
            pts = [(r["chips"], r["per_chip"]) for r in rows
                   if r["model"] == model and r["scaling"] == scaling and r["per_chip"]]
            if pts:
                ax.plot(*zip(*pts), style, label=f"fixed {scaling}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("chips (v3-8 = 4 chips ... v3-2048 = 1024 chips)")
        ax.set_ylabel(f"{MODELS[model][3]}/s per chip")
        ax.set_title(f"{model} training step, Cloud TPU v3 slices (simulated)")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tpusim", default=os.path.join(ROOT, "build", "tpusim"))
    ap.add_argument("--max-cores", type=int, default=2048)
    ap.add_argument("--timeout", type=float, default=600.0,
                    help="wall seconds one run may take before it is recorded as not run")
    ap.add_argument("--global", dest="global_batch", action="store_true",
                    help="also run at fixed global batch")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--csv", default=os.path.join(ROOT, "docs", "pods_scaling.csv"))
    ap.add_argument("--svg", default=os.path.join(ROOT, "docs", "pods_scaling.svg"))
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in a.models.split(","):
            _, per_core, global_batch, _ = MODELS[model]
            for cores in (c for c in SLICES if c <= a.max_cores):
                plans = [("per-core batch", per_core)]
                if a.global_batch and global_batch // cores >= 1:
                    plans.append(("global batch", global_batch // cores))
                for scaling, b in plans:
                    sec, wall, simulated = run_point(a, tmp, model, cores, b)
                    chips = cores // 2
                    rate = b * cores / sec if sec else None
                    rows.append({"model": model, "scaling": scaling, "config": f"tpu_v3_{cores}",
                                 "cores": cores, "chips": chips, "batch_per_core": b,
                                 "step_s": sec, "samples_per_s": rate,
                                 "per_chip": rate / chips if rate else None,
                                 "wall_s": round(wall, 1), "simulated_cores": simulated})
                    r = rows[-1]
                    if sec:
                        what = (f"step {sec * 1e3:9.2f} ms, {rate:10.0f}/s, "
                                f"{r['per_chip']:7.1f}/s per chip")
                    else:
                        what = "did not finish" if wall >= a.timeout else "not run (above)"
                    print(f"{model:9} {scaling:14} v3-{cores:<5} batch/core {b:4}: {what}"
                          f"  (wall {wall:.1f} s, {simulated or '-'} cores simulated)",
                          flush=True)
    with open(a.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    plot(rows, a.svg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
