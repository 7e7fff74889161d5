#!/usr/bin/env python3
"""The seed programs' figures as tpusim replays them today: the markdown table that
docs/hlo.md holds between `<!-- hlo-figures -->` and `<!-- /hlo-figures -->`, so that the
figures a user reads are the binary's (tests/cli/hlo_figures_sync.sh compares the two).

  hlo_figures.py [--tpusim build/tpusim]            prints the table
  hlo_figures.py --write                            rewrites the block in docs/hlo.md

Each row is `tpusim run --hlo MODULE --config BOARD`: the simulated step, the samples per
second of the whole board (the module's global batch over the step), the MXU utilisation, the
HBM bytes per core and what bounds the step; a module that does not fit the board's HBM
shows the located error instead.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

SEEDS = "tests/data/hlo/jax_seed_workloads"
# module stem, board, samples per step of the whole board (per-core batch x 8 cores)
ROWS = [
    ("resnet50_dp8.after_spmd_partitioning", "tpu_v3_8", 1024, "img"),
    ("resnet50_dp8.before_optimizations", "tpu_v3_8", 1024, "img"),
    ("resnet50_dp8.after_spmd_partitioning", "tpu_v2_8", 1024, "img"),
    ("roberta_base_quest_dp8.after_spmd_partitioning", "tpu_v3_8", 64, "seq"),
    ("roberta_base_quest_dp8.after_spmd_partitioning", "tpu_v2_8", 64, "seq"),
    ("resnet_unet_dp8.after_spmd_partitioning", "tpu_v3_8", 1024, "img"),
    ("resnet_unet_dp8.after_spmd_partitioning", "tpu_v2_8", 1024, "img"),
    ("lstm_imdb_dp8.after_spmd_partitioning", "tpu_v3_8", 1024, "seq"),
    ("lstm_imdb_dp8.after_spmd_partitioning", "tpu_v2_8", 1024, "seq"),
]
NAMES = {"resnet50": "ResNet-50", "roberta_base_quest": "RoBERTa-base",
         "resnet_unet": "ResNet-UNet", "lstm_imdb": "LSTM-IMDB"}
BEGIN, END = "<!-- hlo-figures -->", "<!-- /hlo-figures -->"


def row(tpusim, stem, board, samples, unit):
    with tempfile.TemporaryDirectory() as d:
        report = os.path.join(d, "r.json")
        p = subprocess.run([tpusim, "run", "-q", "--config", f"configs/{board}.json", "--hlo",
                            f"{SEEDS}/{stem}.hlo", "--report", report],
                           capture_output=True, text=True)
        model, form = stem.split("_dp8.")
        name = f"{NAMES[model]}, {form.replace('_', ' ')}"
        if p.returncode != 0:
            err = [l for l in p.stderr.splitlines() if l.startswith("error:")]
            what = err[-1] if err else f"exit {p.returncode}"
            what = re.sub(r"^error: \S+: ", "", what)
            return f"| {name} | {board} | - | - | - | - | {what} |"
        r = json.load(open(report))
    cores = r["cores"]
    gb = (r["hbm"]["bytes_read"] + r["hbm"]["bytes_written"]) / cores / 1e9
    return (f"| {name} | {board} | {r['seconds'] * 1e3:.1f} ms | "
            f"{samples / r['seconds']:,.0f} {unit}/s | {r['mxu_utilization'] * 100:.1f}% | "
            f"{gb:.1f} GB | {r['bottleneck']} |")


def table(tpusim):
    lines = ["| module | board | step | board throughput | MXU utilisation | HBM per core | "
             "bound by |", "|---|---|---:|---:|---:|---:|---|"]
    lines += [row(tpusim, *x) for x in ROWS]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tpusim", default="build/tpusim")
    ap.add_argument("--write", action="store_true", help="rewrite the block in docs/hlo.md")
    a = ap.parse_args()
    if not os.path.exists(a.tpusim):
        sys.exit(f"error: hlo_figures: {a.tpusim}: no such file (build tpusim first)")
    t = table(a.tpusim)
    if not a.write:
        sys.stdout.write(t)
        return
    doc = open("docs/hlo.md").read()
    if BEGIN not in doc or END not in doc:
        sys.exit(f"error: docs/hlo.md: no {BEGIN} ... {END} block")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    open("docs/hlo.md", "w").write(head + BEGIN + "\n" + t + END + tail)
    print("wrote the figures into docs/hlo.md")


if __name__ == "__main__":
    main()
