#!/usr/bin/env python3
"""Speed and memory of the workloads of issue #40's table, optionally against another
revision's binary built in a scratch worktree, in one run (scripts/bench.sh calls it).

  bench_speed.py [--tpusim build/tpusim] [--runs 5] [--quick] [--against REV] [--timeout 120]

Each row runs `tpusim run ...` --runs times and prints the median wall and CPU time and the
largest peak RSS (of the child process); with --against REV the same rows run on REV's binary
(built once into a scratch worktree with scripts/build.sh, ccache making it quick) and the
ratio of the medians is printed (current / REV: below 1 is faster). A row over --timeout
seconds prints "> timeout". The inputs are made once by the current tree (gen_trace.py, the HLO
samples), so both binaries read the same files. --quick leaves out the two slowest rows (the
v3-2048 pod, Llama-3 8B). Targets (issue #40, median of 5 runs on an idle 2-core machine):
trivial run <= 0.05 s; BERT-base step <= 0.3 s; ResNet-50 step <= 0.4 s and <= 150 MB;
BERT-base data-parallel on v3-2048 <= 5 s and <= 1 GB; a 10^9-trip loop <= 2 s; Llama-3 8B 1x4
<= 10 s. Python 3 standard library only.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rows(tmp, quick):
    """(name, tpusim arguments, target) per row; traces generated into tmp."""
    gen = os.path.join(ROOT, "scripts", "gen_trace.py")
    resnet = os.path.join(tmp, "resnet50.json")
    subprocess.run([sys.executable, gen, "resnet50", "--batch", "128", "--cores", "8", "-o",
                    resnet], check=True, capture_output=True)
    loop = os.path.join(tmp, "billion_trips.hlo")
    with open(os.path.join(ROOT, "tests", "data", "hlo_loops", "million_trips.hlo")) as f:
        text = f.read()
    # The module's known trip count: 10^6 -> 10^9 (tests/cli/loops.sh edits it the same way).
    billion, n = re.subn(r'"n":"1000000"', '"n":"1000000000"', text)
    if n != 1:
        raise SystemExit("bench_speed: tests/data/hlo_loops/million_trips.hlo no longer names "
                         'its trip count as "n":"1000000"')
    with open(loop, "w") as f:
        f.write(billion)
    v3 = os.path.join(ROOT, "configs", "tpu_v3_8.json")
    out = [
        ("trivial run (traces/gemm.json)", ["--config", v3, "--trace",
                                            os.path.join(ROOT, "traces", "gemm.json")], "<= 0.05 s"),
        ("BERT-base training step (traces/bert_base_train_step.json)",
         ["--config", v3, "--trace", os.path.join(ROOT, "traces", "bert_base_train_step.json")],
         "<= 0.3 s"),
        ("ResNet-50 step (gen_trace.py resnet50 --batch 128 --cores 8)",
         ["--config", v3, "--trace", resnet], "<= 0.4 s, <= 150 MB"),
        ("ResNet-50 JAX HLO step (run --hlo, after SPMD partitioning)",
         ["--config", v3, "--hlo", os.path.join(ROOT, "tests", "data", "hlo", "jax_seed_workloads",
                                                "resnet50_dp8.after_spmd_partitioning.hlo")],
         "<= 1.5 s, <= 200 MB (issue #35)"),
        ("a while loop of 10^9 trips (million_trips.hlo, 10^9)", ["--config", v3, "--hlo", loop],
         "<= 2 s"),
    ]
    if not quick:
        bert = os.path.join(tmp, "bert2048.json")
        subprocess.run([sys.executable, gen, "bert", "--batch", "8", "--cores", "2048", "-o",
                        bert], check=True, capture_output=True)
        out.append(("BERT-base data-parallel on v3-2048 (gen_trace.py bert --batch 8 --cores 2048)",
                    ["--config", os.path.join(ROOT, "configs", "tpu_v3_2048.json"), "--trace",
                     bert], "<= 5 s, <= 1 GB"))
        out.append(("Llama-3 8B 1x4 HLO on tpu_v3_8_hbm128.json",
                    ["--config", os.path.join(ROOT, "configs", "tpu_v3_8_hbm128.json"), "--hlo",
                     os.path.join(ROOT, "tests", "data", "hlo", "xla_repo_models_preopt",
                                  "hlo_llama3_8b_cp_bf16_1x4.hlo")], "<= 10 s"))
    return out


# Runs argv[1:] as a child of its own and prints "wall cpu rss_kib rc" (a fresh process per
# run, so that the peak RSS is that run's, not the largest of every earlier row's).
WRAPPER = """
import resource, subprocess, sys, time
t0 = time.monotonic()
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
sys.stderr.write(p.stderr)
print(time.monotonic() - t0, u.ru_utime + u.ru_stime, u.ru_maxrss, p.returncode)
"""


def measure(binary, args, runs, timeout):
    """Median wall and CPU seconds and the largest peak RSS in MB over `runs` runs, or None
    when a run passes `timeout` seconds; an error string when it fails."""
    walls, cpus, rss = [], [], 0.0
    env = dict(os.environ, SC_COPYRIGHT_MESSAGE="DISABLE")
    for _ in range(runs):
        try:
            p = subprocess.run([sys.executable, "-c", WRAPPER, binary, "run", "-q", *args],
                               capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            return None
        wall, cpu, kib, rc = p.stdout.split()
        if int(rc) != 0:
            lines = p.stderr.strip().splitlines()
            return f"exit {rc}: {lines[-1] if lines else ''}"
        walls.append(float(wall))
        cpus.append(float(cpu))
        rss = max(rss, float(kib) / 1024)  # Linux: KiB
    return statistics.median(walls), statistics.median(cpus), rss


def build_base(rev, tmp):
    """REV's tpusim, built into a scratch worktree; returns its path."""
    tree = os.path.join(tmp, "base")
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", "-q", tree, rev], check=True)
    print(f"building {rev} in a scratch worktree ...", file=sys.stderr)
    subprocess.run(["bash", "scripts/build.sh"], cwd=tree, check=True, capture_output=True,
                   env=dict(os.environ, TARGETS="tpusim"))
    return tree, os.path.join(tree, "build", "tpusim")


def show(m, timeout):
    if m is None:
        return f"> {timeout:g} s", "", ""
    if isinstance(m, str):
        return m, "", ""
    return f"{m[0]:.3f} s", f"{m[1]:.3f} s", f"{m[2]:.0f} MB"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tpusim", default=os.path.join(ROOT, "build", "tpusim"))
    ap.add_argument("--runs", type=int, default=1, help="runs per row (the median is shown)")
    ap.add_argument("--quick", action="store_true", help="leave out the two slowest rows")
    ap.add_argument("--against", metavar="REV", help="also time REV's binary (git revision)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per run")
    a = ap.parse_args()
    if a.runs < 1:
        ap.error("--runs must be at least 1")
    tmp = tempfile.mkdtemp()
    tree = None
    try:
        base = None
        if a.against:
            tree, base = build_base(a.against, tmp)
        head = ["| workload | target | wall | CPU | peak RSS |"]
        if base:
            head = ["| workload | target | wall | CPU | peak RSS | "
                    f"{a.against}: wall | CPU | peak RSS | wall ratio |"]
        print(f"tpusim speed, median of {a.runs} run{'s' if a.runs > 1 else ''} per row")
        print(head[0])
        print("|" + "---|" * (head[0].count("|") - 1))
        for name, args, target in rows(tmp, a.quick):
            m = measure(a.tpusim, args, a.runs, a.timeout)
            cells = [name, target, *show(m, a.timeout)]
            if base:
                b = measure(base, args, a.runs, a.timeout)
                ratio = (f"{m[0] / b[0]:.2f}" if isinstance(m, tuple) and isinstance(b, tuple)
                         else "")
                cells += [*show(b, a.timeout), ratio]
            print("| " + " | ".join(cells) + " |", flush=True)
    finally:
        if tree:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", tree],
                           capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
