#!/usr/bin/env python3
"""Golden cycle counts: every committed trace on the boards it is used with, and the bench
outputs, against the figures recorded in cycles.json. A restructuring must leave every one of
them unchanged; a commit that changes a timing mechanism on purpose regenerates the file with
--update and names the mechanism in its message.

  check_golden.py path/to/tpusim [--update] [--only SUBSTRING] [--light | --heavy]
                                                                  (run from the source root)
--light leaves out the few cases that take seconds each (the 8-core BERT step, the burst-level
HBM runs, bench hbm), --heavy runs only those: ctest runs both, and the sanitizer build only
the light part.

What is compared. Runs: cycles, HBM bytes read and written, ICI bytes, the op count and a
digest of every op's (id, start_cycle, end_cycle, unit_busy_cycles), i.e. the simulated
mechanism, not the presentation of the report (verdict wording, extra fields). Benches: every
number in the JSON output except wall-clock figures (wall/cpu seconds and rates per second)
the config echo and the energy model's figures (an observer with its own tests).
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "cycles.json")
V2, V3 = "configs/tpu_v2_8.json", "configs/tpu_v3_8.json"
TRACES = ["gemm", "mlp_fwd_bwd", "attention", "bert_base_layer_fwd", "data_parallel_step",
          "bert_base_train_step"]

# name -> (kind, args). Every committed trace on v3-8 (the board they were written for) and
# v2-8; the two fastest with the burst HBM model; the bench commands of scripts/bench.sh at small sizes.
CASES = {}
for t in TRACES:
    CASES[f"run v3 {t}"] = ("run", ["--config", V3, "--trace", f"traces/{t}.json"])
    if t != "bert_base_train_step":  # the 8-core step on v2 adds seconds and no mechanism
        CASES[f"run v2 {t}"] = ("run", ["--config", V2, "--trace", f"traces/{t}.json"])
for t in ["attention", "bert_base_layer_fwd"]:  # burst: every HBM burst, seconds per trace
    CASES[f"run v3 {t} burst"] = ("run", ["--config", V3, "--trace", f"traces/{t}.json",
                                          "--set", "sim.hbm_model=burst"])
for b, cfg in (("v2", V2), ("v3", V3)):
    CASES[f"bench peak {b}"] = ("bench", ["peak", "--config", cfg])
CASES["bench mxu tile"] = ("bench", ["mxu", "--config", V3, "--m", "1000", "--k", "300",
                                     "--n", "200", "--fidelity", "tile"])
CASES["bench mxu pe"] = ("bench", ["mxu", "--config", V3, "--m", "300", "--k", "200",
                                   "--n", "150", "--fidelity", "pe"])
CASES["bench ici v3"] = ("bench", ["ici", "--config", V3, "--sizes", "1KiB", "1MiB", "64MiB"])
CASES["bench hbm v3"] = ("bench", ["hbm", "--config", V3])

HEAVY = ("bert_base_train_step", "burst", "bench hbm")
WALL_CLOCK = ("wall", "cpu", "per_second", "revision", "version")
NOT_RESULTS = ("config", "description")  # the config echo and names are inputs, not results
# The energy model observes a run (docs/energy.md) and has its own checks (unit: energy,
# cli: energy figures); its figures are not cycles.
NOT_RESULTS += ("energy",)


def flatten(x, prefix=""):
    out = {}
    if isinstance(x, dict):
        for k, v in x.items():
            if any(w in k for w in WALL_CLOCK) or k in NOT_RESULTS:
                continue
            out.update(flatten(v, f"{prefix}.{k}" if prefix else k))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            out.update(flatten(v, f"{prefix}[{i}]"))
    elif isinstance(x, (int, float, bool, str)):
        out[prefix] = x
    return out


def same(a, b):
    # Integers (cycles, bytes) exactly; derived ratios to 1e-9 (they print as shortest doubles).
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-300)
    return a == b


def run_figures(report):
    ops = [(o["id"], o["start_cycle"], o["end_cycle"], o["unit_busy_cycles"])
           for o in report["ops"]]
    digest = hashlib.sha256(json.dumps(ops, sort_keys=True).encode()).hexdigest()[:16]
    return {"cycles": report["cycles"], "hbm.bytes_read": report["hbm"]["bytes_read"],
            "hbm.bytes_written": report["hbm"]["bytes_written"], "ici.bytes": report["ici"]["bytes"],
            "ops": len(ops), "ops_digest": digest}


def measure(binary, name, kind, args, tmp):
    env = dict(os.environ, SC_COPYRIGHT_MESSAGE="DISABLE")
    if kind == "run":
        path = os.path.join(tmp, name.replace(" ", "_") + ".json")
        cmd = [binary, "run", *args, "--quiet", "--report", path]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if p.returncode != 0:
            return None, f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}"
        with open(path) as f:
            return run_figures(json.load(f)), None
    cmd = [binary, "bench", *args, "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return None, f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}"
    return {k: v for k, v in flatten(json.loads(p.stdout)).items() if not isinstance(v, str)}, None


def main():
    binary = sys.argv[1]
    update = "--update" in sys.argv
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else ""
    names = [n for n in CASES if only in n]
    if "--light" in sys.argv:
        names = [n for n in names if not any(h in n for h in HEAVY)]
    if "--heavy" in sys.argv:
        names = [n for n in names if any(h in n for h in HEAVY)]
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(2) as pool:
        got = dict(zip(names, pool.map(lambda n: measure(binary, n, *CASES[n], tmp), names)))
    errors = [f"{n}: {err}" for n, (_, err) in got.items() if err]
    if errors:
        print("\n".join(errors))
        return 1
    figures = {n: f for n, (f, _) in got.items()}
    if update:
        partial = only or "--light" in sys.argv or "--heavy" in sys.argv
        old = json.load(open(GOLDEN)) if os.path.exists(GOLDEN) and partial else {}
        old.update(figures)
        with open(GOLDEN, "w") as f:
            json.dump({n: old[n] for n in CASES if n in old}, f, indent=1, sort_keys=False)
            f.write("\n")
        print(f"wrote {len(figures)} cases to {GOLDEN}")
        return 0
    golden = json.load(open(GOLDEN))
    bad = 0
    for n in names:
        want, have = golden.get(n), figures[n]
        if want is None:
            print(f"FAIL {n}: not recorded in cycles.json (run with --update)")
            bad += 1
            continue
        diffs = [f"{k}: {want.get(k)} -> {have.get(k)}" for k in sorted(set(want) | set(have))
                 if not same(want.get(k), have.get(k))]
        if diffs:
            bad += 1
            print(f"FAIL {n}: " + "; ".join(diffs[:8]) + (" ..." if len(diffs) > 8 else ""))
    print(f"{len(names) - bad}/{len(names)} cases match cycles.json")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
