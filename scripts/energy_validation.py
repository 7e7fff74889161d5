#!/usr/bin/env python3
"""The energy model's figures beside the power Google measured (docs/energy.md).

Runs the checks of issue #41 with a tpusim binary and prints the table docs/energy.md holds
between <!-- energy-figures --> markers; --write replaces it there, --check fails when the
physical bounds do not hold (never on the validation targets: those are only reported).

  python3 scripts/energy_validation.py --tpusim build/tpusim           # print the table
  python3 scripts/energy_validation.py --tpusim build/tpusim --write   # update docs/energy.md

The published figures below are used only here, to compare; no config key is set from them.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Measured / published (validation only).
V3_MIN_W, V3_MEAN_W, V3_MAX_W = 123.0, 220.0, 262.0  # Cloud TPU v3 docs: min / mean / max
V2_TDP_W, V3_TDP_W = 280.0, 450.0  # Jouppi et al. ISCA 2021 Table 1; Patterson et al. 2021


def run(binary, *args):
    out = subprocess.run([binary, *args], cwd=ROOT, check=True, capture_output=True, text=True,
                         env={**os.environ, "SC_COPYRIGHT_MESSAGE": "DISABLE"})
    return out.stdout


def energy_of(report):
    return report["energy"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tpusim", default=os.path.join(ROOT, "build", "tpusim"))
    ap.add_argument("--write", action="store_true", help="replace the table in docs/energy.md")
    ap.add_argument("--check", action="store_true", help="exit 1 if a physical bound fails")
    a = ap.parse_args()
    b = os.path.abspath(a.tpusim)
    v3, v2 = "configs/tpu_v3_8.json", "configs/tpu_v2_8.json"
    rows, bad = [], []

    def bound(ok, what):
        if not ok:
            bad.append(what)

    info3 = json.loads(run(b, "info", "--config", v3, "--json"))["energy"]
    info2 = json.loads(run(b, "info", "--config", v2, "--json"))["energy"]
    for name, i in (("v3", info3), ("v2", info2)):
        bound(0 < i["idle_watts_per_chip"] < i["full_load_watts_per_chip"],
              f"{name}: idle < full load")
        bound(i["full_load_watts_per_chip"] <= i["tdp_watts_per_chip"],
              f"{name}: full load <= TDP")

    def verdict(value, lo, hi):
        return "met" if lo <= value <= hi else "**not met**"

    def pct(value, ref):
        return f"{100.0 * (value - ref) / ref:+.1f}%"

    # Idle board: no program; the modelled static power.
    idle = info3["idle_watts_per_chip"]
    rows.append(("v3-8 idle board (`tpusim info`)", f"{idle:.1f}", f"{V3_MIN_W:.0f} (min)",
                 pct(idle, V3_MIN_W), "within 10%", verdict(idle, 0.9 * V3_MIN_W, 1.1 * V3_MIN_W)))

    peaks = {}
    for name, cfg, tdp in (("v3", v3, V3_TDP_W), ("v2", v2, V2_TDP_W)):
        rep = json.loads(run(b, "bench", "peak", "--config", cfg, "--json"))
        e = energy_of(rep)
        peaks[name] = (rep, e)
        avg = e["average_watts_per_chip"]
        parts = sum(e["parts_joules"].values())
        bound(abs(parts - e["joules"]) <= 1e-9 * e["joules"], f"{name} bench peak: parts sum")
        bound(e["idle_watts_per_chip"] < avg < tdp, f"{name} bench peak: idle < power < TDP")
        if name == "v3":
            rows.append(("v3-8 `bench peak` (8192^3 bf16 GEMM per core)", f"{avg:.1f}",
                         f"{V3_MAX_W:.0f} (max)", pct(avg, V3_MAX_W), "within 10%, < 450 TDP",
                         verdict(avg, 0.9 * V3_MAX_W, min(1.1 * V3_MAX_W, V3_TDP_W))))
        else:
            rows.append(("v2-8 `bench peak`", f"{avg:.1f}", f"{V2_TDP_W:.0f} (TDP)",
                         pct(avg, V2_TDP_W), "below TDP", verdict(avg, 0, V2_TDP_W)))

    # Dynamic energy follows the work: an 8x smaller GEMM (half the side) has 1/8 the MACs.
    half = json.loads(run(b, "bench", "peak", "--config", v3, "--size", "4096", "--json"))
    mxu_full = peaks["v3"][1]["parts_joules"]["mxu"]
    mxu_half = energy_of(half)["parts_joules"]["mxu"]
    bound(abs(mxu_full / mxu_half - 8.0) < 1e-6, "bench peak: MXU energy x8 for 8x the MACs")

    with tempfile.TemporaryDirectory() as tmp:
        traces = (
            ("ResNet-50 training step, batch 128 x 8 cores",
             ["resnet50", "--batch", "128", "--cores", "8"]),
            ("BERT-Large training step (MLPerf v0.7 shape), batch 14 x 8 cores",
             ["bert", "--batch", "14", "--cores", "8", "--layers", "24", "--hidden", "1024",
              "--heads", "16", "--ffn", "4096", "--seq", "512", "--vocab", "30522",
              "--predictions", "76", "--optimizer", "lamb", "--f32-layernorm",
              "--clip-global-norm"]),
        )
        for label, gen in traces:
            path = os.path.join(tmp, gen[0] + ".json")
            subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_trace.py"), *gen,
                            "-o", path], check=True, capture_output=True)
            rep = json.loads(run(b, "run", "--config", v3, "--trace", path, "--quiet", "--json"))
            e = energy_of(rep)
            avg = e["average_watts_per_chip"]
            bound(e["idle_watts_per_chip"] < avg <= e["peak_watts_per_chip"] + 1e-9,
                  f"{label}: idle < average <= peak")
            bound(e["peak_watts_per_chip"] <= info3["full_load_watts_per_chip"] + 1e-9,
                  f"{label}: peak <= full load")
            if gen[0] == "resnet50":
                # A training epoch: the chips idle (static power) while the host works, so the
                # run's average lies between idle and the device steps' average.
                t = json.loads(run(b, "train", "--config", v3, "--trace", path, "--run",
                                   "examples/resnet50_imagenet.run.json", "--quiet", "--json"))
                te = t["energy"]
                batch = json.load(open(os.path.join(ROOT, "examples",
                                                    "resnet50_imagenet.run.json")))["global_batch"]
                bound(te["idle_watts_per_chip"] < te["average_watts_per_chip"]
                      <= te["device_step_watts_per_chip"] * (1 + 1e-9),
                      "train: idle < run average <= device-step average")
                bound(te["joules_per_sample"] > 0 and
                      abs(te["joules_per_sample"] * batch * t["steps"] - te["joules"])
                      <= 1e-9 * te["joules"], "train: joules per sample x samples = joules")
            rows.append((f"v3-8 {label} (peak over {e['peak_window_us']:.3g} us: "
                         f"{e['peak_watts_per_chip']:.1f} W)", f"{avg:.1f}",
                         f"{V3_MEAN_W:.0f} (mean)", pct(avg, V3_MEAN_W),
                         "in [123, 262], within 20%",
                         verdict(avg, max(V3_MIN_W, 0.8 * V3_MEAN_W),
                                 min(V3_MAX_W, 1.2 * V3_MEAN_W))))

    table = ["| run | modelled W per chip | measured W | difference | target | verdict |",
             "|---|---|---|---|---|---|"]
    table += ["| " + " | ".join(r) + " |" for r in rows]
    text = "\n".join(table) + "\n"
    if a.write:
        doc = os.path.join(ROOT, "docs", "energy.md")
        s = open(doc).read()
        head, rest = s.split("<!-- energy-figures -->\n", 1)
        _, tail = rest.split("<!-- /energy-figures -->\n", 1)
        open(doc, "w").write(head + "<!-- energy-figures -->\n" + text +
                             "<!-- /energy-figures -->\n" + tail)
    else:
        sys.stdout.write(text)
    if bad:
        for what in bad:
            print(f"FAIL physical bound: {what}", file=sys.stderr)
        return 1 if a.check else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
