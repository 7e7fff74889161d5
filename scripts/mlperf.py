#!/usr/bin/env python3
"""The MLPerf training suite as Google's TPU submissions ran it, simulated against the step
times of their public result logs (validation/mlperf.md, validation/measured/mlperf_tpu_steps.csv).

  mlperf.py [--tpusim build/tpusim]      prints simulated vs measured step and throughput
  mlperf.py --only ssd,maskrcnn          some benchmarks only
  mlperf.py --no-inference               the training table only
  mlperf.py --check                      exit 1 if a scored point is off by more than its guard
  mlperf.py --write                      the table into docs/VALIDATION.md (between its markers)
  mlperf.py --set ici.collective_setup_us=0    a config key set for every run (repeatable)
  mlperf.py --loop-round-trip-us US      the iterations_per_loop host round trip (default 0)

The MLPerf Inference v0.5 offline results on one v3-8
(validation/measured/mlperf_inference_offline.csv) follow as a second table: held out, no guard.

Each point is `scripts/gen_trace.py mlperf BENCH --round R --cores N` run with `tpusim run` on
the config of the submission's slice; throughput = the trace's samples_per_step / the simulated
step. Error = simulated throughput / measured - 1. GNMT's step depends on the length bucket of
its batch (the input pipeline batches each step from one bucket): all five are simulated and
the measured mean is placed among them; no single error is stated. Nothing is set from these
measurements. Python 3 standard library only.

The host round trip of each loop of `iterations_per_loop` steps (the submissions' training
loops run that many steps on the TPU per host call; the trace's metadata carries the run's
value): `--loop-round-trip-us US` adds US / iterations_per_loop to every simulated step. No
public source gives the cost of one round trip on these systems, so the default is 0 (no
cost) and the figures below are without it (docs/pods.md, "Per-loop host round trip").
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEASURED = os.path.join(ROOT, "validation", "measured", "mlperf_tpu_steps.csv")
# MLPerf Inference v0.5 offline throughput on one v3-8: held out, printed, never guarded.
MEASURED_INFERENCE = os.path.join(ROOT, "validation", "measured",
                                  "mlperf_inference_offline.csv")
GNMT_BUCKETS = 5  # scripts/tracegen/mlperf.py: the input pipeline's length buckets
# Set by main() from the command line (validate.py uses the defaults): config keys for every
# run (`tpusim run --set`), and the seconds of one iterations_per_loop host round trip.
SETS = []
LOOP_ROUND_TRIP_S = 0.0

# Per scored point (bench, round, cores): the |error| in % above which --check fails. Where
# the target of issue #37 (10%, Mask R-CNN 20%) is met the guard is the target; where it is
# not, the present figure rounded up, so that it cannot silently get worse
# (docs/VALIDATION.md, "MLPerf suite").
GUARDS = {
    ("resnet50", "v0.5", 8): 10.0,
    ("resnet50", "v0.6", 32): 10.0,
    ("bert", "v0.7", 32): 10.0,
    ("transformer", "v0.6", 32): 10.0,
    ("ssd", "v0.6", 32): 10.0,
    ("ssd", "v0.5", 8): 43.0,
    ("maskrcnn", "v0.6", 32): 123.0,
}
# Points that validate.py scores as sets of their own (ResNet-50 and BERT-Large are its sets
# already, with the same traces).
NEW_IN_SUITE = ("transformer", "ssd", "maskrcnn")


def points(path=MEASURED):
    """The measured points: dicts of the CSV's columns (after its '#' provenance lines)."""
    with open(path) as f:
        body = [line for line in f if line.strip() and not line.startswith("#")]
    out = []
    for r in csv.DictReader(body):
        out.append({"bench": r["bench"], "round": r["round"], "cores": int(r["cores"]),
                    "config": r["config"], "samples": int(r["samples_per_step"]),
                    "step_s": float(r["step_s"]), "target": float(r["target_pct"]),
                    "scored": r["scored"] == "1"})
    return out


def inference_points(path=MEASURED_INFERENCE):
    """The held-out inference points (offline samples/s of the public performance logs)."""
    with open(path) as f:
        body = [line for line in f if line.strip() and not line.startswith("#")]
    return [{"bench": r["bench"], "round": r["round"], "cores": int(r["cores"]),
             "config": r["config"], "per_s": float(r["samples_per_s"])}
            for r in csv.DictReader(body)]


def inference_table(tpusim, pts, tmp):
    """Simulated vs published offline throughput: the trace of `gen_trace.py mlperf BENCH
    --inference --scenario offline`, samples_per_step / simulated step. Held out: no guard."""
    lines = ["| inference benchmark (round, board), offline | simulated step | simulated /s | "
             "published /s | error (held out) |", "|---|---:|---:|---:|---:|"]
    for p in pts:
        sim, samples = simulate(tpusim, p, tmp, inference=True)
        err = (samples / sim / p["per_s"] - 1) * 100
        lines.append(f"| {label(p)} | {sim * 1e3:.2f} ms | {samples / sim:,.0f} | "
                     f"{p['per_s']:,.0f} | {err:+.1f}% |")
    return "\n".join(lines)


def simulate(tpusim, p, tmp, bucket=None, inference=False):
    """Simulated seconds per step and the trace's samples_per_step for point p."""
    trace = os.path.join(tmp, f"{p['bench']}_{p['round']}_{p['cores']}"
                         + ("_inference" if inference else "") + ".json")
    cmd = [sys.executable, os.path.join(ROOT, "scripts", "gen_trace.py"), "mlperf", p["bench"],
           "--round", p["round"], "--cores", str(p["cores"]), "-o", trace]
    if bucket is not None:
        cmd += ["--bucket", str(bucket)]
    if inference:
        cmd += ["--inference", "--scenario", "offline"]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    with open(trace) as f:
        doc = json.load(f)
    samples = doc["samples_per_step"]
    ipl = doc.get("metadata", {}).get("iterations_per_loop")
    run = subprocess.run([tpusim, "run", "--config",
                          os.path.join(ROOT, "configs", p["config"] + ".json"), "--trace", trace,
                          "--json", "-q", *[x for kv in SETS for x in ("--set", kv)]],
                         check=True, capture_output=True, text=True)
    loop = LOOP_ROUND_TRIP_S / ipl if ipl else 0.0
    return json.loads(run.stdout)["seconds"] + loop, samples


def label(p):
    board = p["config"].replace("tpu_", "").replace("_", "-")
    return f"{p['bench']} {p['round']} {board}"


def evaluate(tpusim, pts, tmp):
    """Per point: (point, simulated steps (one, or GNMT's five), samples, error % or None)."""
    out = []
    for p in pts:
        if p["scored"]:
            sim, samples = simulate(tpusim, p, tmp)
            if samples != p["samples"]:
                raise SystemExit(f"mlperf: {label(p)}: the trace's samples_per_step is "
                                 f"{samples}, the measured table's {p['samples']}")
            out.append((p, [sim], samples, (p["step_s"] / sim - 1) * 100))
        else:
            steps = [simulate(tpusim, p, tmp, b)[0] for b in range(GNMT_BUCKETS)]
            out.append((p, steps, p["samples"], None))
    return out


def table(results):
    lines = ["| benchmark (round, slice) | simulated step | simulated /s | measured step | "
             "measured /s | error | guard |", "|---|---:|---:|---:|---:|---:|---:|"]
    failed = []
    for p, steps, samples, err in results:
        key = (p["bench"], p["round"], p["cores"])
        meas = f"{p['step_s'] * 1e3:.1f} ms | {samples / p['step_s']:,.0f}"
        if err is None:
            inside = min(steps) <= p["step_s"] <= max(steps)
            between = sum(1 for s in steps if s < p["step_s"])
            where = (f"between buckets {between - 1} and {between}" if 0 < between < len(steps)
                     else "outside the buckets' range")
            lines.append(f"| {label(p)} | " + " / ".join(f"{s * 1e3:.1f}" for s in steps)
                         + f" ms (buckets 0..{len(steps) - 1}) | | {meas} | {where} | |")
            if not inside:
                failed.append(f"{label(p)}: measured {p['step_s'] * 1e3:.1f} ms is outside the "
                              f"simulated buckets' {min(steps) * 1e3:.1f}..{max(steps) * 1e3:.1f} ms")
            continue
        guard = GUARDS.get(key, p["target"])
        lines.append(f"| {label(p)} | {steps[0] * 1e3:.2f} ms | {samples / steps[0]:,.0f} | "
                     f"{meas} | {err:+.1f}% | {guard:g}% |")
        if abs(err) > guard:
            failed.append(f"{label(p)}: {err:+.1f}% (guard {guard:g}%)")
    return "\n".join(lines), failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tpusim", default=os.path.join(ROOT, "build", "tpusim"))
    ap.add_argument("--only", default="", help="comma-separated benchmarks (default: all)")
    ap.add_argument("--no-inference", action="store_true",
                    help="without the held-out inference table (its SSD-Large and GNMT "
                         "steps take half a minute each)")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if a point is off by more than its guard")
    ap.add_argument("--write", action="store_true", help="update docs/VALIDATION.md")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a config key for every run (tpusim run --set)")
    ap.add_argument("--loop-round-trip-us", type=float, default=0.0, metavar="US",
                    help="host round trip per iterations_per_loop loop, added per step as "
                         "US / iterations_per_loop (default 0: no public figure)")
    a = ap.parse_args()
    global LOOP_ROUND_TRIP_S
    if a.loop_round_trip_us < 0:
        ap.error("--loop-round-trip-us must not be negative")
    if a.write and a.no_inference:
        ap.error("--write records every table: not with --no-inference")
    if a.write and (a.set or a.loop_round_trip_us):
        ap.error("--write records the default configuration: not with --set or "
                 "--loop-round-trip-us")
    SETS[:] = a.set
    LOOP_ROUND_TRIP_S = a.loop_round_trip_us * 1e-6
    only = set(x for x in a.only.split(",") if x)
    pts = [p for p in points() if not only or p["bench"] in only]
    if not pts:
        ap.error(f"--only {a.only}: no such benchmark in {MEASURED}")
    inf = [p for p in inference_points() if (not only or p["bench"] in only)
           and not a.no_inference]
    with tempfile.TemporaryDirectory() as tmp:
        text, failed = table(evaluate(a.tpusim, pts, tmp))
        if inf:
            text += "\n\n" + inference_table(a.tpusim, inf, tmp)
    print(text)
    if a.write:
        if only:
            ap.error("--write records every point: not with --only")
        doc = os.path.join(ROOT, "docs", "VALIDATION.md")
        body = open(doc).read()
        begin, end = "<!-- mlperf:begin -->", "<!-- mlperf:end -->"
        i, j = body.index(begin) + len(begin), body.index(end)
        open(doc, "w").write(body[:i] + "\n" + text + "\n" + body[j:])
    if a.check and failed:
        for f in failed:
            print("mlperf: " + f, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from validate import run_guarded  # one error line and exit 2, as validate.py

    sys.exit(run_guarded(main, "mlperf"))
