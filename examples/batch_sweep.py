#!/usr/bin/env python3
"""Per-core batch what-if for a seed case (docs/case-studies.md, "Per-core batch"): for each
per-core batch, generate the case's step program with scripts/gen_trace.py --batch B, run
`tpusim run` for the board step and `tpusim train` for the epoch with the case's config and
run description (global batch = B x 8 cores; everything else as committed), and print a
Markdown table.

  examples/batch_sweep.py lstm_imdb|kaggle_classifier [--batches 8,16,...] [--bin build/tpusim]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORES = 8
# The generator arguments of examples/run_case.sh, less --batch.
CASES = {
    "lstm_imdb": ("configs/colab_v2_8.json",
                  ["lstm", "--seq", "500", "--embedding", "128", "--units", "32",
                   "--vocab", "10000"]),
    "kaggle_classifier": ("configs/kaggle_v3_8.json", ["resnet50", "--no-space-to-depth"]),
    "resnet_unet": ("configs/colab_v2_8.json",
                    ["unet", "--image", "96", "--in-channels", "6", "--classes", "2"]),
}


def run_json(cmd):
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--batches", default="8,16,32,64,100,128,256",
                    help="per-core batches, comma-separated")
    ap.add_argument("--bin", default=os.environ.get("TPUSIM_BIN", "build/tpusim"))
    a = ap.parse_args(argv)
    cfg, gen = CASES[a.case]
    with open(os.path.join(ROOT, "examples", a.case + ".run.json")) as f:
        run = json.load(f)
    print(f"{a.case} on {os.path.basename(cfg)}: {run['dataset']['samples']} samples per epoch")
    print()
    print("| per-core batch | board step (ms) | board samples/s | MXU busy (step) | "
          "MXU padding | epoch (s) | verdict |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for b in [int(x) for x in a.batches.split(",")]:
            trace = os.path.join(tmp, f"b{b}.json")
            subprocess.run([sys.executable, "scripts/gen_trace.py", *gen, "--batch", str(b),
                            "-o", trace], cwd=ROOT, check=True)
            step = run_json([a.bin, "run", "--config", cfg, "--trace", trace, "--json"])
            r = dict(run, global_batch=b * CORES)
            eval_args = []
            if "eval" in run:
                # The validation pass at the same per-core batch (Keras evaluates at fit's
                # batch_size), its forward-only step generated like run_case.sh's.
                ev = os.path.join(tmp, f"b{b}.eval.json")
                subprocess.run([sys.executable, "scripts/gen_trace.py", *gen, "--batch", str(b),
                                "--forward-only", "-o", ev], cwd=ROOT, check=True)
                r["eval"] = dict(run["eval"], global_batch=b * CORES)
                eval_args = ["--eval-trace", ev]
            # Derived from the batch: the trace's own infeed ops give the bytes per sample.
            r_path = os.path.join(tmp, f"b{b}.run.json")
            with open(r_path, "w") as f:
                json.dump(r, f)
            rep = os.path.join(tmp, f"b{b}.report.json")
            subprocess.run([a.bin, "train", "--config", cfg, "--trace", trace, "--run", r_path,
                            *eval_args, "--quiet", "--report", rep], cwd=ROOT, check=True,
                           stdout=subprocess.DEVNULL)
            with open(rep) as f:
                tr = json.load(f)
            u = step["utilization"]
            print(f"| {b} | {step['seconds'] * 1e3:.2f} | {b * CORES / step['seconds']:,.0f} | "
                  f"{u['mxu_busy'] * 100:.1f}% | {u['mxu_padding_waste'] * 100:.1f}% | "
                  f"{tr['epoch_seconds']:.2f} | {tr['verdict']} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
