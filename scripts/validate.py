#!/usr/bin/env python3
"""Compare the simulator with the measured TPU data in validation/ (validation/README.md).

Sets (each point is a trace replayed with `tpusim run`; nothing here is fitted):
  - GEMM, GELU, LayerNorm, softmax: one-op traces on one core of configs/tpu_v3_8.json,
    against the measured latency minus its dispatch floor (the GEMM and softmax files' own
    overhead column, point by point; for GELU and LayerNorm the smallest latency in the file);
  - all-reduce: an 8-core all-reduce on configs/tpu_v3_8.json against the measured latency
    minus the 0.88 ms small-message floor (a calibration set: validation/README.md);
  - ResNet-50 v2-8: `gen_trace.py resnet50 --batch 128 --cores 8 --no-space-to-depth` on
    configs/tpu_v2_8.json, images/s against MLPerf v0.5's ~4,470;
  - ResNet-50 v3-32: `gen_trace.py resnet50 --batch 128 --cores 32 --no-space-to-depth
    --optimizer lars` on configs/tpu_v3_32.json (global batch 4096), images/s against MLPerf
    v0.6's 31,246;
  - BERT-Large v3-32: `gen_trace.py bert` with BERT-Large's shape, 14 sequences of 512 tokens
    per core, 76 masked predictions, LAMB, on configs/tpu_v3_32.json (global batch 448),
    sequences/s against MLPerf v0.7's steady-state blocks
    (validation/measured/bert_large_mlperf_v07_tpu_v3_32.csv).
Prints a Markdown table and each set's mean absolute percentage error (MAPE) beside its
target and its regression guard; --write replaces the table section of docs/VALIDATION.md;
--check exits 1 when a set's MAPE is above its guard (tests/CMakeLists.txt runs it);
--residuals also prints the one-core points' (GEMM, GELU, LayerNorm) measured-minus-simulated
time ordered by the HBM traffic of the simulated op (docs/VALIDATION.md, "What explains the
remaining error").

Usage: scripts/validate.py [--tpusim build/tpusim] [--measured validation/measured]
                           [--write] [--check] [--residuals] [--only SET,...]
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_time(s):
    s = s.strip()
    if s.endswith("ms"):
        return float(s[:-2]) * 1e-3
    if s.endswith("us"):
        return float(s[:-2]) * 1e-6
    if s.endswith("s"):
        return float(s[:-1])
    raise ValueError(s)


def rows(path):
    with open(path) as f:
        return [[c.strip() for c in r] for r in csv.reader(f) if r and r[0].strip()]


def data_rows(path):
    """Rows of a CSV file with '#' provenance lines and a header line (softmax_TPUv3.csv)."""
    with open(path) as f:
        body = [line for line in f if line.strip() and not line.startswith("#")]
    return [[c.strip() for c in r] for r in csv.reader(body[1:])]


# Per set: (target MAPE in %, from issue #10 / DESIGN.md; guard: the MAPE above which
# --check fails, the documented figure a change may not regress past). A guard above its
# target marks a set whose target is not met yet (docs/VALIDATION.md says why).
SETS = {
    "GEMM, M >= 512": (4.0, 4.0),
    "GEMM": (8.0, 8.0),
    "GELU": (12.0, 27.0),
    "LayerNorm": (15.0, 29.0),
    "Softmax": (15.0, 36.0),
    "all-reduce (calibration)": (10.0, 10.0),
    "ResNet-50 v2-8 img/s": (10.0, 10.0),
    "ResNet-50 v3-32 img/s": (10.0, 10.0),
    "BERT-Large v3-32 seq/s": (10.0, 10.0),
}
# GELU and LayerNorm: the simulated time per element between a sweep's two largest points
# (offsets common to both cancel) against the measured one, in percent.
STREAM_GUARD = 8.0
# Sets whose streaming cost --check holds: softmax is reported beside them, not guarded, while
# its per-element cost is off by more than the guard (docs/VALIDATION.md).
STREAM_GUARDED = ("GELU", "LayerNorm")
ALLREDUCE_FLOOR_S = 0.88e-3  # validation/README.md
RESNET50_V2_8_IMG_S = 4470.0  # MLPerf Training v0.5, validation/README.md
RESNET50_V3_32_IMG_S = 31246.0  # MLPerf Training v0.6, validation/README.md
# MLPerf Training v0.7 BERT-Large on a v3-32 (run_and_time.sh of the submission): global batch
# 448 over 32 cores, sequences of 512 tokens with 76 masked predictions, LAMB.
# The submission's encoder (TF 2 model garden) runs LayerNorm in f32 under mixed_bfloat16,
# so its residual stream is f32 (--f32-layernorm; validation/README.md). Its training step
# (model_training_utils.py, _compiled_local_step) clips each replica's gradients by their
# global norm before the all-reduce (--clip-global-norm).
BERT_LARGE = dict(batch=14, cores=32, layers=24, hidden=1024, heads=16, ffn=4096, seq=512,
                  vocab=30522, predictions=76, optimizer="lamb")
BERT_LARGE_FLAGS = ["--f32-layernorm", "--clip-global-norm"]


def one_op_trace(op, cores=1):
    """A trace of the one op `op` (its id names the trace) on `cores` cores."""
    return {"format": "tpusim.trace", "version": 1, "name": op["id"], "cores": cores,
            "ops": [op]}


def run_trace_file(tpusim, config, path, sets=()):
    """The JSON report of `tpusim run` on the trace file `path`, with --set overrides."""
    cmd = [tpusim, "run", "--config", config, "--trace", path, "--json", "-q"]
    for s in sets:
        cmd += ["--set", s]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


# --set overrides for every run of this script (what-ifs: never written to docs/VALIDATION.md).
OVERRIDES = []


def run_report(tpusim, config, trace, tmp, name):
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as f:
        json.dump(trace, f)
    return run_trace_file(tpusim, config, path, OVERRIDES)


def run_trace(tpusim, config, trace, tmp, name):
    return run_report(tpusim, config, trace, tmp, name)["seconds"]


def simulate_op(tpusim, config, op, tmp, cores=1):
    """(simulated seconds, bytes the op moved to and from HBM) of a one-op trace."""
    r = run_report(tpusim, config, one_op_trace(op, cores), tmp, op["id"])
    return r["seconds"], r["hbm"]["bytes_read"] + r["hbm"]["bytes_written"]


def single_op_points(measured):
    """(group, label, op, measured device seconds, is_large_gemm) for the one-core sets."""
    points = []
    for m, n, k, lat, over, _ in rows(os.path.join(measured, "matmul_TPUv3_k12288.csv")):
        m, n, k = int(m), int(n), int(k)
        dev = parse_time(lat) - parse_time(over)
        op = {"id": f"gemm_m{m}", "kind": "matmul", "m": m, "k": k, "n": n, "dtype": "bf16"}
        points.append(("GEMM", f"M={m} K={k} N={n}", op, dev, m >= 512))
    gelu = rows(os.path.join(measured, "gelu_TPUv3.csv"))
    floor = min(parse_time(r[1]) for r in gelu)
    for e, lat, _ in gelu:
        op = {"id": f"gelu_{e}", "kind": "vector", "op": "gelu", "elements": int(e),
              "dtype": "f32"}
        points.append(("GELU", f"{int(e)} elements", op, parse_time(lat) - floor, False))
    ln = rows(os.path.join(measured, "layernorm_TPUv3.csv"))
    ln_floor = min(parse_time(r[2]) for r in ln)
    for r_, c_, lat, _ in ln:
        op = {"id": f"layernorm_{r_}x{c_}", "kind": "vector", "op": "layernorm",
              "rows": int(r_), "cols": int(c_), "dtype": "f32"}
        points.append(("LayerNorm", f"{int(r_)} x {int(c_)}", op, parse_time(lat) - ln_floor,
                       False))
    # Softmax: each point's own measured host overhead (its overhead_us column).
    for r_, c_, lat, over in data_rows(os.path.join(measured, "softmax_TPUv3.csv")):
        op = {"id": f"softmax_{r_}x{c_}", "kind": "vector", "op": "softmax",
              "rows": int(r_), "cols": int(c_), "dtype": "f32"}
        points.append(("Softmax", f"{int(r_)} x {int(c_)}", op,
                       (float(lat) - float(over)) * 1e-6, False))
    return points


# The MLPerf v0.5 and v0.6 TensorFlow ResNet-50 (resnet_model.py in both submissions) run the
# stem as a 7x7 stride-2 conv on the 3-channel image; v0.6 trains with LARS (run_and_time.sh:
# --enable_lars=True), v0.5 with SGD + Nesterov momentum (resnet_main.py).
RESNET50_FLAGS = {8: ["--no-space-to-depth"], 32: ["--no-space-to-depth", "--optimizer", "lars"]}


def resnet50_step(tpusim, cfg, cores, tmp):
    """Simulated seconds of one ResNet-50 training step, 128 images per core on `cores`."""
    trace = os.path.join(tmp, f"resnet50_{cores}.json")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_trace.py"), "resnet50",
                    "--batch", "128", "--cores", str(cores), *RESNET50_FLAGS[cores], "-o", trace],
                   check=True)
    with open(trace) as f:
        t = json.load(f)
    return run_trace(tpusim, cfg, t, tmp, f"resnet50_{cores}_run")


def bert_large_measured(measured):
    """Sequences/s of MLPerf v0.7's BERT-Large v3-32 runs: per run, the steps of every block
    after the first (compile and warm-up) over their summed block times; the median of runs."""
    path = os.path.join(measured, "bert_large_mlperf_v07_tpu_v3_32.csv")
    with open(path) as f:
        recs = [r for r in csv.DictReader(line for line in f if not line.startswith("#"))]
    runs = {}
    for r in recs:
        if int(r["block"]) >= 2:
            steps, ms = runs.get(r["run"], (0, 0))
            runs[r["run"]] = (steps + int(r["steps"]),
                              ms + int(r["block_stop_ms"]) - int(r["block_start_ms"]))
    rates = sorted(BERT_LARGE["batch"] * BERT_LARGE["cores"] * steps / (ms / 1e3)
                   for steps, ms in runs.values())
    n = len(rates)
    return rates[n // 2] if n % 2 else (rates[n // 2 - 1] + rates[n // 2]) / 2


def bert_large_step(tpusim, cfg, tmp):
    """Simulated seconds of one BERT-Large pre-training step (BERT_LARGE) on `cfg`."""
    trace = os.path.join(tmp, "bert_large.json")
    args = [a for k, v in BERT_LARGE.items() for a in (f"--{k}", str(v))]
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_trace.py"), "bert",
                    *args, *BERT_LARGE_FLAGS, "-o", trace], check=True)
    with open(trace) as f:
        t = json.load(f)
    return run_trace(tpusim, cfg, t, tmp, "bert_large_run")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tpusim", default=os.path.join(ROOT, "build", "tpusim"))
    ap.add_argument("--measured", default=os.path.join(ROOT, "validation", "measured"))
    ap.add_argument("--write", action="store_true", help="update docs/VALIDATION.md")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if a set's MAPE is above its guard")
    ap.add_argument("--residuals", action="store_true",
                    help="print the one-core sets' residuals ordered by simulated HBM traffic")
    ap.add_argument("--only", default="", help="comma-separated sets: gemm,gelu,layernorm,"
                    "allreduce,resnet50,resnet50_v3_32,bert_large_v3_32,mlperf (default: all)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="config override for every run, as tpusim run --set (a what-if: not "
                    "with --write), e.g. sim.hbm_model=burst")
    a = ap.parse_args()
    if a.set and a.write:
        ap.error("--write records the committed configs' figures: not with --set")
    OVERRIDES[:] = a.set
    only = set(x for x in a.only.split(",") if x)
    want = lambda name: not only or name in only  # noqa: E731
    v3 = os.path.join(ROOT, "configs", "tpu_v3_8.json")
    v2 = os.path.join(ROOT, "configs", "tpu_v2_8.json")
    v3_32 = os.path.join(ROOT, "configs", "tpu_v3_32.json")

    lines = ["| workload | shape | measured | simulated | error |",
             "|---|---|---:|---:|---:|"]
    errs = {}
    residuals = []  # (simulated s, set, shape, elements, measured s, HBM bytes moved)

    def score(group, label, dev, sim, unit="ms", scale=1e3, large=False):
        # Points whose measured time is at the dispatch floor say nothing about the chip.
        err = (sim - dev) / dev * 100 if unit != "ms" or dev > 20e-6 else None
        if err is not None:
            errs.setdefault(group, []).append(abs(err))
            if large:
                errs.setdefault("GEMM, M >= 512", []).append(abs(err))
        fmt_v = (lambda v: f"{v * scale:.4f} ms") if unit == "ms" else (lambda v: f"{v:.0f} {unit}")
        lines.append(f"| {group} | {label} | {fmt_v(dev)} | {fmt_v(sim)} | "
                     + (f"{err:+.1f}% |" if err is not None else "(at the floor) |"))

    with tempfile.TemporaryDirectory() as tmp:
        for group, label, op, dev, large in single_op_points(a.measured):
            if want(group.lower()):
                sim, moved = simulate_op(a.tpusim, v3, op, tmp)
                score(group, label, dev, sim, large=large)
                elements = op.get("elements") or op.get("rows", 0) * op.get("cols", 0)
                residuals.append((sim, group, label, elements, dev, moved))
        if want("allreduce"):
            for b, lat in rows(os.path.join(a.measured, "allreduce_TPUv3_calibration.csv"))[1:]:
                op = {"id": f"allreduce_{b}", "kind": "all_reduce", "bytes": int(b),
                      "dtype": "f32"}
                sim = simulate_op(a.tpusim, v3, op, tmp, cores=8)[0]
                score("all-reduce (calibration)", f"8 cores, {int(b) / 2**20:g} MiB f32",
                      float(lat) - ALLREDUCE_FLOOR_S, sim)
        # ResNet-50 data-parallel training steps: 128 images per core on every slice; the
        # slice (and with it the gradient all-reduce) is what changes between the two sets.
        for key, cfg, cores, group, measured in (
                ("resnet50", v2, 8, "ResNet-50 v2-8 img/s", RESNET50_V2_8_IMG_S),
                ("resnet50_v3_32", v3_32, 32, "ResNet-50 v3-32 img/s", RESNET50_V3_32_IMG_S)):
            if want(key):
                sim = resnet50_step(a.tpusim, cfg, cores, tmp)
                score(group, f"batch 128 x {cores} cores ({128 * cores}), training step",
                      measured, 128 * cores / sim, unit="img/s")
        if want("mlperf"):
            # The MLPerf suite's benchmarks that the sets above do not already hold (scripts/
            # mlperf.py; validation/mlperf.md), each a set of one point with its guard.
            sys.path.insert(0, os.path.join(ROOT, "scripts"))
            import mlperf
            pts = [p for p in mlperf.points() if p["scored"] and p["bench"] in mlperf.NEW_IN_SUITE]
            for p, steps, samples, _ in mlperf.evaluate(a.tpusim, pts, tmp):
                group = f"MLPerf {mlperf.label(p)}"
                SETS[group] = (p["target"],
                               mlperf.GUARDS.get((p["bench"], p["round"], p["cores"]), p["target"]))
                score(group, f"{p['samples']} per step, training step", p["samples"] / p["step_s"],
                      samples / steps[0], unit="/s")
        if want("bert_large_v3_32"):
            sim = bert_large_step(a.tpusim, v3_32, tmp)
            n = BERT_LARGE["batch"] * BERT_LARGE["cores"]
            score("BERT-Large v3-32 seq/s", f"batch {BERT_LARGE['batch']} x "
                  f"{BERT_LARGE['cores']} cores ({n}), seq 512, LAMB, training step",
                  bert_large_measured(a.measured), n / sim, unit="seq/s")

    lines.append("")
    lines.append("| set | points | MAPE | target | guard |")
    lines.append("|---|---:|---:|---:|---:|")
    failed = []
    for g, (target, guard) in SETS.items():
        if g in errs:
            mape = sum(errs[g]) / len(errs[g])
            lines.append(f"| {g} | {len(errs[g])} | {mape:.1f}% | {target:g}% | {guard:g}% |")
            if mape > guard:
                failed.append(f"{g}: MAPE {mape:.1f}% > guard {guard:g}%")
    table = "\n".join(lines)
    print(table)
    if a.residuals:
        # The measured device time is the latency minus one floor; what is left over besides
        # the chip shows here, for the three one-core sets together. Ordered by the bytes the
        # simulated op moves to and from HBM, with its simulated time beside them, so that an
        # offset that follows either shows as steps in one of the two columns
        # (docs/VALIDATION.md, "What explains the remaining error").
        print("\n| HBM traffic (simulated) | simulated | set | shape | measured - simulated |")
        print("|---:|---:|---|---|---:|")
        for sim, group, label, elements, dev, moved in sorted(residuals, key=lambda r: (r[5], r[0])):
            print(f"| {moved / 2**20:.4g} MiB | {sim * 1e3:.4f} ms | {group} | {label} | "
                  f"{(dev - sim) * 1e6:+.1f} us |")
    # Any offset common to two points cancels in their difference: the time per element
    # between the two largest points of a sweep is the chip's streaming cost alone. --check
    # holds it within STREAM_GUARD of the measured one.
    sweeps = {}
    for sim, group, label, elements, dev, _ in residuals:
        if group == "GEMM":
            continue
        key = group if group == "GELU" else f"{group}, " + (
            "rows x 4096" if label.endswith("x 4096") else "4096 x cols")
        sweeps.setdefault(key, []).append((elements, dev, sim, label))
    stream = ["| set | between | measured | simulated | error |", "|---|---|---:|---:|---:|"]
    for key, pts in sweeps.items():
        (e0, d0, s0, l0), (e1, d1, s1, l1) = sorted(pts)[-2:]
        meas, simd = (d1 - d0) / (e1 - e0) * 1e12, (s1 - s0) / (e1 - e0) * 1e12
        err = (simd - meas) / meas * 100
        stream.append(f"| {key} | {l0} and {l1} | {meas:.1f} ps/element | "
                      f"{simd:.1f} ps/element | {err:+.1f}% |")
        if abs(err) > STREAM_GUARD and key.split(",")[0] in STREAM_GUARDED:
            failed.append(f"{key}: streaming cost per element {err:+.1f}% off (guard "
                          f"{STREAM_GUARD:g}%)")
    if a.residuals:
        print("\n" + "\n".join(stream))
    if a.write:
        doc = os.path.join(ROOT, "docs", "VALIDATION.md")
        text = open(doc).read()
        begin, end = "<!-- table:begin -->", "<!-- table:end -->"
        i, j = text.index(begin) + len(begin), text.index(end)
        open(doc, "w").write(text[:i] + "\n" + table + "\n" + text[j:])
    if a.check and failed:
        for f in failed:
            print("validate: " + f, file=sys.stderr)
        return 1
    return 0


def run_guarded(main, name):
    """main(), with one error line and exit status 2 instead of a traceback when a file or
    tpusim is missing or a run fails (scripts that call tpusim use it too)."""
    try:
        return main()
    except FileNotFoundError as e:
        hint = (" (scripts/build.sh builds it)" if os.path.basename(str(e.filename)) == "tpusim"
                else "")
        print(f"{name}: {e.filename}: no such file{hint}", file=sys.stderr)
    except subprocess.CalledProcessError as e:
        lines = (e.stderr or "").strip().splitlines()
        print(f"{name}: {' '.join(map(str, e.cmd))} exited with {e.returncode}"
              + (f": {lines[-1]}" if lines else ""), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(run_guarded(main, "validate"))
