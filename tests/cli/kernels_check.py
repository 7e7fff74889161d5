#!/usr/bin/env python3
"""Checks a `tpusim run` report's kernel rows against its own ops and the run's cycles
(docs/program.md, "Kernels and the critical-path split"), and, when given, the terminal table,
the --ops CSV and the --timeline's kernel track of the same run.

  kernels_check.py REPORT [--text T] [--top N] [--csv C] [--timeline TL] [--loop]

--loop: the run has one loop; its kernels (trips > 1) must split the loop's time in proportion
to their busiest unit's cycles (the rule for loops), and the timeline names the loop's stretch.
Prints one line per finding; exit status 1 on any.
"""
import argparse
import csv
import json
import sys

ap = argparse.ArgumentParser()
ap.add_argument("report")
ap.add_argument("--text")
ap.add_argument("--top", type=int, default=12)
ap.add_argument("--csv")
ap.add_argument("--timeline")
ap.add_argument("--loop", action="store_true")
a = ap.parse_args()

r = json.load(open(a.report))
errors = []
name = a.report


def err(msg):
    errors.append(f"{name}: {msg}")


cycles = r["cycles"]
mhz = r["config"]["chip"]["clock_mhz"]
mxus = r["config"]["core"]["mxus"]
ops = {o["id"]: o for o in r["ops"]}
ks = r["kernels"]
att = r["kernel_attribution"]

# The rows add up to the run (the method makes it exact; the issue asks for 0.1%).
total = sum(k["self_cycles"] for k in ks)
if total != cycles or att["sum_cycles"] != cycles or att["run_cycles"] != cycles:
    err(f"self cycles sum to {total} (attribution says {att['sum_cycles']} of "
        f"{att['run_cycles']}), the run is {cycles}")
if abs(total - cycles) > 0.001 * cycles:
    err("off by more than 0.1%")
if att["method"] != "critical path" or not (0 <= att["core"] < r["cores"]):
    err(f"attribution {att}")

# Each op in exactly one kernel; a kernel is a root op and the ops fused into it.
fused_into = {i: o["bottleneck"][len("fused into "):] for i, o in ops.items()
              if o["bottleneck"].startswith("fused into ")}


def root(i):
    for _ in range(len(ops) + 1):
        if i not in fused_into:
            return i
        i = fused_into[i]
    return i


seen = {}
for k in ks:
    if k["members"][0] != k["name"]:
        err(f"{k['name']}: members do not start with the root: {k['members'][:3]}")
    if k["name"] in fused_into:
        err(f"{k['name']}: a fused op has a row of its own")
    for m in k["members"]:
        if m in seen:
            err(f"{m} in kernels {seen[m]} and {k['name']}")
        seen[m] = k["name"]
        if root(m) != k["name"]:
            err(f"{m} is in {k['name']}, its root is {root(m)}")
if set(seen) != set(ops):
    err(f"{len(set(ops) - set(seen))} ops in no kernel")

# Each row's figures from its members' (the report's ops) and its self time.
for k in ks:
    ms = [ops[m] for m in k["members"]]
    rt = ops[k["name"]]
    want_busy = {u: sum(o["unit_busy_cycles"][u] for o in ms) for u in rt["unit_busy_cycles"]}
    ran = [o for o in ms if o["end_cycle"] > o["start_cycle"]] or ms
    self = k["self_cycles"]
    checks = [
        ("kind", k["kind"], rt["kind"]),
        ("bound", k["bound"], rt["bottleneck"]),
        ("trips", k["trips"], rt["trips"]),
        ("unit_busy_cycles", k["unit_busy_cycles"], want_busy),
        ("hbm_bytes", k["hbm_bytes"], sum(o["hbm_bytes"] for o in ms)),
        ("start_cycle", k["start_cycle"], min(o["start_cycle"] for o in ran)),
        ("end_cycle", k["end_cycle"], max(o["end_cycle"] for o in ran)),
        ("span_cycles", k["span_cycles"], k["end_cycle"] - k["start_cycle"]),
    ]
    for what, got, want in checks:
        if got != want:
            err(f"{k['name']}: {what} {got} != {want}")
    flops = sum(o["flops"] for o in ms)
    tflops = flops / (self / mhz * 1e-6) / 1e12 if self else 0.0
    close = [
        ("flops", k["flops"], flops),
        ("self_us", k["self_us"], self / mhz),
        ("share", k["share"], self / cycles),
        ("self_cycles_per_trip", k["self_cycles_per_trip"], self / k["trips"]),
        ("tflops", k["tflops"], tflops),
    ]
    for what, got, want in close:
        if abs(got - want) > 1e-9 * max(1.0, abs(want)):
            err(f"{k['name']}: {what} {got} != {want}")
if [k["self_cycles"] for k in ks] != sorted((k["self_cycles"] for k in ks), reverse=True):
    err("rows not sorted by self time")

# A loop's kernels split its time by their busiest unit's cycles (MXU: per MXU).
if a.loop:
    loop = [k for k in ks if k["trips"] > 1]
    if len(loop) < 2:
        err(f"expected a loop of several kernels, got {[k['name'] for k in loop]}")
    s = sum(k["self_cycles"] for k in loop)
    w = {k["name"]: max(v / mxus if u == "MXU" else v for u, v in k["unit_busy_cycles"].items())
         for k in loop}
    for k in loop:
        want = s * w[k["name"]] / sum(w.values())
        if abs(k["self_cycles"] - want) > 1:
            err(f"loop kernel {k['name']}: self {k['self_cycles']}, by weight {want:.1f}")

# The terminal table: the first rows by self time, or all of them.
if a.text:
    lines = open(a.text).read().splitlines()
    head = next((i for i, l in enumerate(lines) if l.lstrip().startswith("kernel (most self")),
                None)
    if head is None:
        err("no kernel table in the text")
    else:
        rows = lines[head + 1:head + 1 + min(a.top, len(ks))]
        for line, k in zip(rows, ks):
            f = line.split()
            nm = k["name"] if len(k["name"]) <= 30 else k["name"][:27] + "..."
            if f[0] != nm or int(f[1]) != k["self_cycles"]:
                err(f"table row '{line.strip()}' for {k['name']} {k['self_cycles']}")
            if k["trips"] > 1 and (f"(x{k['trips']} trips, "
                                   f"{k['self_cycles_per_trip']:.1f} cycles a trip)") not in line:
                err(f"table row '{line.strip()}' without its trips")
            if len(k["members"]) > 1 and f"{len(k['members'])} ops" not in line:
                err(f"table row '{line.strip()}' without its member count")
        more = lines[head + 1 + len(rows)] if head + 1 + len(rows) < len(lines) else ""
        if (len(ks) > a.top) != more.strip().startswith("... the other"):
            err(f"after {len(rows)} rows of {len(ks)}: '{more}'")

# The CSV: each op's kernel, and self cycles on the roots only.
if a.csv:
    rows = list(csv.DictReader(open(a.csv)))
    if [x["id"] for x in rows] != [o["id"] for o in r["ops"]]:
        err("CSV ops differ from the report's")
    by_name = {k["name"]: k for k in ks}
    for x in rows:
        want = by_name[seen[x["id"]]]["self_cycles"] if x["id"] == seen[x["id"]] else 0
        if x["kernel"] != seen[x["id"]] or int(x["self_cycles"]) != want:
            err(f"CSV {x['id']}: kernel {x['kernel']} self {x['self_cycles']}")
    if sum(int(x["self_cycles"]) for x in rows) != cycles:
        err("CSV self cycles do not add up to the run")

# The timeline's kernel track: back-to-back stretches from 0 to the end, each kernel's adding
# up to its self time.
if a.timeline:
    t = json.load(open(a.timeline))["traceEvents"]
    pids = {e["pid"] for e in t if e.get("ph") == "M" and e["name"] == "process_name" and
            e["args"]["name"] == f"critical path (core {att['core']})"}
    tids = {(e["pid"], e["tid"]) for e in t
            if e.get("ph") == "M" and e["name"] == "thread_name" and e["pid"] in pids and
            e["args"]["name"] == "kernels"}
    spans = sorted((e for e in t if e.get("ph") == "X" and (e["pid"], e["tid"]) in tids),
                   key=lambda e: e["args"]["start_cycle"])
    if not spans:
        err("no kernel track in the timeline")
    else:
        edges = [(e["args"]["start_cycle"], e["args"]["end_cycle"]) for e in spans]
        if edges[0][0] != 0 or edges[-1][1] != cycles or any(
                x[1] != y[0] for x, y in zip(edges, edges[1:])):
            err("kernel track stretches are not back to back from 0 to the end")
        got = {}
        for e in spans:
            got[e["name"]] = got.get(e["name"], 0) + e["args"]["end_cycle"] - e["args"]["start_cycle"]
        for k in ks:
            if k["trips"] == 1 and got.get(k["name"], 0) != k["self_cycles"]:
                err(f"timeline: {k['name']} {got.get(k['name'], 0)} != self {k['self_cycles']}")
        if a.loop:
            lp = [n for n in got if n.startswith("loop of ")]
            s = sum(k["self_cycles"] for k in ks if k["trips"] > 1)
            if len(lp) != 1 or got[lp[0]] != s:
                err(f"timeline loop stretches {lp}, want one of {s} cycles")

for e in errors[:20]:
    print("FAIL", e)
if not errors:
    print(f"ok   {name}: {len(ks)} kernels of {len(ops)} ops add up to {cycles} cycles")
sys.exit(1 if errors else 0)
