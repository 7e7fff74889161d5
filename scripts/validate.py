#!/usr/bin/env python3
"""Compare simulated single-TensorCore device time with the measured TPU v3 data.

For every point in ../shared/validation/measured (GEMMs with K = N = 12288, GELU, LayerNorm)
this writes a one-op trace, runs `tpusim run` on one core of configs/tpu_v3_8.json and
compares the simulated device time with the measured latency minus its dispatch floor:
  - GEMM: the file's own host-overhead column, point by point;
  - GELU, LayerNorm: the files have no such column; the floor is the smallest latency in the
    file (the sizes there are far too small for the chip to matter).
Prints a Markdown table and the mean absolute percentage errors; --write replaces the table
section of docs/VALIDATION.md. Nothing here is fitted: the config is used as it is.

Usage: scripts/validate.py [--tpusim build/tpusim] [--config configs/tpu_v3_8.json]
                           [--measured ../shared/validation/measured] [--write]
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


def simulate(tpusim, config, op, tmp):
    trace = {"format": "tpusim.trace", "version": 1, "name": op["id"], "cores": 1, "ops": [op]}
    path = os.path.join(tmp, op["id"] + ".json")
    with open(path, "w") as f:
        json.dump(trace, f)
    out = subprocess.run([tpusim, "run", "--config", config, "--trace", path, "--json", "-q"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["seconds"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tpusim", default=os.path.join(ROOT, "build", "tpusim"))
    ap.add_argument("--config", default=os.path.join(ROOT, "configs", "tpu_v3_8.json"))
    ap.add_argument("--measured",
                    default=os.path.join(ROOT, "..", "shared", "validation", "measured"))
    ap.add_argument("--write", action="store_true", help="update docs/VALIDATION.md")
    a = ap.parse_args()

    points = []  # (group, label, op, measured device seconds, is_large_gemm)
    for m, n, k, lat, over, _ in rows(os.path.join(a.measured, "matmul_TPUv3_k12288.csv")):
        m, n, k = int(m), int(n), int(k)
        dev = parse_time(lat) - parse_time(over)
        op = {"id": f"gemm_m{m}", "kind": "matmul", "m": m, "k": k, "n": n, "dtype": "bf16"}
        points.append(("GEMM", f"M={m} K={k} N={n}", op, dev, m >= 512))
    gelu = rows(os.path.join(a.measured, "gelu_TPUv3.csv"))
    floor = min(parse_time(r[1]) for r in gelu)
    for e, lat, _ in gelu:
        op = {"id": f"gelu_{e}", "kind": "vector", "op": "gelu", "elements": int(e),
              "dtype": "f32"}
        points.append(("GELU", f"{int(e)} elements", op, parse_time(lat) - floor, False))
    ln = rows(os.path.join(a.measured, "layernorm_TPUv3.csv"))
    ln_floor = min(parse_time(r[2]) for r in ln)
    for r_, c_, lat, _ in ln:
        op = {"id": f"layernorm_{r_}x{c_}", "kind": "vector", "op": "layernorm",
              "rows": int(r_), "cols": int(c_), "dtype": "f32"}
        points.append(("LayerNorm", f"{int(r_)} x {int(c_)}", op, parse_time(lat) - ln_floor,
                       False))

    lines = ["| workload | shape | measured device time | simulated | error |",
             "|---|---|---:|---:|---:|"]
    errs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for group, label, op, dev, large in points:
            sim = simulate(a.tpusim, a.config, op, tmp)
            # Points whose measured time is at the dispatch floor say nothing about the chip.
            err = (sim - dev) / dev * 100 if dev > 20e-6 else None
            if err is not None:
                errs.setdefault(group, []).append(abs(err))
                if large:
                    errs.setdefault("GEMM, M >= 512", []).append(abs(err))
            lines.append(f"| {group} | {label} | {dev * 1e3:.4f} ms | {sim * 1e3:.4f} ms | "
                         + (f"{err:+.1f}% |" if err is not None else "(at the floor) |"))
    lines.append("")
    lines.append("| set | points | MAPE |")
    lines.append("|---|---:|---:|")
    for g in ["GEMM, M >= 512", "GEMM", "GELU", "LayerNorm"]:
        if g in errs:
            lines.append(f"| {g} | {len(errs[g])} | {sum(errs[g]) / len(errs[g]):.1f}% |")
    table = "\n".join(lines)
    print(table)
    if a.write:
        doc = os.path.join(ROOT, "docs", "VALIDATION.md")
        text = open(doc).read()
        begin, end = "<!-- table:begin -->", "<!-- table:end -->"
        i, j = text.index(begin) + len(begin), text.index(end)
        open(doc, "w").write(text[:i] + "\n" + table + "\n" + text[j:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
