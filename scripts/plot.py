#!/usr/bin/env python3
"""Plots from tpusim results (python3 + Debian's python3-matplotlib); each writes OUT.png and
OUT.svg.

  plot.py roofline REPORT.json -o OUT        ops of one run: arithmetic intensity against
                                             achieved TFLOPS, under the config's two roofs
  plot.py utilization REPORT.json -o OUT     busy fraction of MXU / VPU / DMA / ICI / host
                                             over the run, per time bin
  plot.py curves DB.sqlite --x K --y COL [--series K] -o OUT
                                             sweep curves: COL against axis K, one line per
                                             value of another axis
  plot.py heatmap DB.sqlite --x K --y K --z COL -o OUT
                                             sweep heat map of COL over two axes

REPORT.json is `tpusim run --report`; DB.sqlite is a `tpusim sweep` database (docs/sweep.md).
K names an axis (its name in the spec: "mxu.rows", "board", "workload.batch") or a column of
the points table; COL is a column ("seconds", "achieved_bf16_tflops", "hbm_achieved_gbps_per_chip",
"utilization_mxu_busy", ...). --sweep picks the sweep when the database holds several;
--where adds an SQL condition ("workload = 'bert'"); --fixed K=V keeps the points whose axis
K has value V. Labels carry units; --xlabel / --ylabel / --title override them.
"""
import argparse
import json
import math
import sqlite3
import sys

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.hashsalt"] = "tpusim"  # stable SVG ids: committed plots diff cleanly
import matplotlib.pyplot as plt  # noqa: E402

# Units of the figures and axes that have one (docs/sweep.md lists the columns).
UNITS = {
    "cycles": "cycles", "seconds": "s", "achieved_bf16_tflops": "TFLOPS",
    "peak_bf16_tflops": "TFLOPS", "hbm_achieved_gbps_per_chip": "GB/s per chip",
    "hbm_peak_gbps_per_chip": "GB/s per chip", "hbm_bytes_read": "B", "hbm_bytes_written": "B",
    "ici_bytes": "B", "wall_seconds": "s wall", "peak_rss_mib": "MiB", "flops": "FLOP",
    "mxu.rows": "PEs", "mxu.cols": "PEs", "core.mxus": "MXUs per core",
    "hbm.data_rate_mtps": "MT/s per pin", "chip.clock_mhz": "MHz",
    "ici.link_bandwidth_gbps": "GB/s per link", "workload.batch": "samples per core",
    "samples_per_second": "samples/s",
}


def label(name, override=None):
    if override:
        return override
    if name.startswith("utilization_") or name == "mxu_utilization":
        return f"{name} (fraction of peak)"
    unit = UNITS.get(name)
    return f"{name} ({unit})" if unit else name


def save(fig, out):
    fig.tight_layout()
    fig.savefig(out + ".png", dpi=120)
    fig.savefig(out + ".svg", metadata={"Date": None})
    plt.close(fig)
    print(f"wrote {out}.png and {out}.svg")


def load_report(path):
    with open(path) as f:
        r = json.load(f)
    if "ops" not in r or "config" not in r:
        sys.exit(f"error: {path}: not a tpusim run report (no ops / config)")
    return r


def roofline(a):
    r = load_report(a.report)
    clock_hz = r["config"]["chip"]["clock_mhz"] * 1e6
    peak = r["peak_bf16_tflops"]  # of the cores the program runs on
    bw = r["hbm"]["peak_gbps_per_chip"] * r["chips"]  # GB/s of the chips it runs on
    xs, ys, kinds = [], [], []
    for op in r["ops"]:
        span = op["end_cycle"] - op["start_cycle"]
        if op.get("flops", 0) <= 0 or op.get("hbm_bytes", 0) <= 0 or span <= 0:
            continue
        xs.append(op["flops"] / op["hbm_bytes"])
        ys.append(op["flops"] / (span / clock_hz) / 1e12)
        kinds.append(op.get("kind", "op"))
    if not xs:
        sys.exit(f"error: {a.report}: no op with both FLOPs and HBM bytes")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    lo, hi = min(xs) / 4, max(xs) * 4
    ridge = peak * 1e12 / (bw * 1e9)
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)] + [ridge]
    grid.sort()
    ax.plot(grid, [min(peak, x * bw * 1e9 / 1e12) for x in grid], "k-", lw=1.5,
            label=f"roofs: {peak:.1f} TFLOPS, {bw:.0f} GB/s HBM")
    for kind in sorted(set(kinds)):
        pts = [(x, y) for x, y, k in zip(xs, ys, kinds) if k == kind]
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=18, label=kind)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(a.xlabel or "arithmetic intensity (FLOP per HBM byte)")
    ax.set_ylabel(a.ylabel or "achieved (TFLOPS, bf16, over the op's span)")
    ax.set_title(a.title or f"roofline: {r.get('trace', {}).get('name', a.report)} on "
                 f"{r['config'].get('name', '')}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, a.output)


def utilization(a):
    r = load_report(a.report)
    cycles = r["cycles"]
    clock_hz = r["config"]["chip"]["clock_mhz"] * 1e6
    cores = r.get("cores", 1)
    # An op's unit_busy_cycles add up over the units of a kind (docs/program.md): MXU over
    # every MXU of every core, DMA over every engine of every core, the others over cores.
    cfg = r["config"]
    per = {"MXU": cores * cfg["core"]["mxus"], "DMA": cores * cfg["dma"]["engines"]}
    bins = max(1, min(a.bins, cycles))
    width = cycles / bins
    busy = {}
    for op in r["ops"]:
        s, e = op["start_cycle"], op["end_cycle"]
        if e <= s:
            continue
        for unit, c in op.get("unit_busy_cycles", {}).items():
            row = busy.setdefault(unit, [0.0] * bins)
            rate = c / (e - s)  # spread evenly over the op's span
            for b in range(int(s // width), min(bins, int(math.ceil(e / width)))):
                overlap = min(e, (b + 1) * width) - max(s, b * width)
                if overlap > 0:
                    row[b] += rate * overlap
    fig, ax = plt.subplots(figsize=(8, 4))
    t = [(b + 0.5) * width / clock_hz * 1e3 for b in range(bins)]
    for unit in sorted(busy):
        row = busy[unit]
        if not any(row):
            continue
        n = per.get(unit, cores)
        ax.plot(t, [min(1.0, v / (width * n)) for v in row], label=f"{unit} ({n} units)", lw=1.2)
    ax.set_xlabel(a.xlabel or "simulated time (ms)")
    ax.set_ylabel(a.ylabel or "busy (fraction of the units' cycles)")
    ax.set_ylim(0, 1.05)
    ax.set_title(a.title or f"utilisation over time: {r.get('trace', {}).get('name', '')}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, a.output)


def sweep_rows(a, wanted):
    con = sqlite3.connect(f"file:{a.db}?mode=ro", uri=True)
    cols = [c[1] for c in con.execute("PRAGMA table_info(points)")]
    ids = [x[0] for x in con.execute("SELECT sweep_id FROM sweeps")]
    sweep_id = a.sweep or (ids[0] if len(ids) == 1 else None)
    if sweep_id is None:
        sys.exit(f"error: {a.db}: holds sweeps {ids}: name one with --sweep")
    where = "sweep_id = ? AND status = 'ok'" + (f" AND ({a.where})" if a.where else "")
    rows = []
    for row in con.execute(f"SELECT * FROM points WHERE {where} ORDER BY point", (sweep_id,)):
        d = dict(zip(cols, row))
        d.update(json.loads(d["coords_json"]))
        d.update({"workload." + k: v for k, v in json.loads(d["params_json"]).items()})
        if all(str(d.get(k)) == v for k, v in a.fixed):
            rows.append(d)
    for w in wanted:
        if w and rows and w not in rows[0]:
            sys.exit(f"error: {a.db}: no axis or column \"{w}\" (axes: "
                     f"{sorted(json.loads(rows[0]['coords_json']))})")
    if not rows:
        sys.exit(f"error: {a.db}: no ok points match")
    return rows


def curves(a):
    rows = sweep_rows(a, [a.x, a.y, a.series])
    fig, ax = plt.subplots(figsize=(7, 4.5))
    series = sorted({r[a.series] for r in rows}, key=str) if a.series else [None]
    for s in series:
        pts = {}
        for r in rows:
            if a.series is None or r[a.series] == s:
                pts.setdefault(r[a.x], []).append(r[a.y])
        xs = sorted(pts, key=lambda v: (isinstance(v, str), v))
        ys = [sum(pts[x]) / len(pts[x]) for x in xs]
        ax.plot([str(x) for x in xs] if any(isinstance(x, str) for x in xs) else xs, ys,
                "o-", label=f"{a.series} = {s}" if a.series else None)
    if a.logx:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(label(a.x, a.xlabel))
    ax.set_ylabel(label(a.y, a.ylabel))
    ax.set_title(a.title or f"{a.y} against {a.x}")
    ax.grid(True, alpha=0.3)
    if a.series:
        ax.legend(fontsize=8)
    save(fig, a.output)


def heatmap(a):
    rows = sweep_rows(a, [a.x, a.y, a.z])
    key = lambda v: (isinstance(v, str), v)  # noqa: E731
    xs = sorted({r[a.x] for r in rows}, key=key)
    ys = sorted({r[a.y] for r in rows}, key=key)
    cell = {}
    for r in rows:
        cell.setdefault((r[a.x], r[a.y]), []).append(r[a.z])
    grid = [[(sum(cell[(x, y)]) / len(cell[(x, y)])) if (x, y) in cell else float("nan")
             for x in xs] for y in ys]
    fig, ax = plt.subplots(figsize=(1.2 * len(xs) + 3, 0.6 * len(ys) + 2.5))
    im = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis")
    ax.set_xticks(range(len(xs)), [str(x) for x in xs])
    ax.set_yticks(range(len(ys)), [str(y) for y in ys])
    for i, row in enumerate(grid):
        for j, v in enumerate(row):
            if not math.isnan(v):
                ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=7, color="w")
    fig.colorbar(im, ax=ax, label=label(a.z))
    ax.set_xlabel(label(a.x, a.xlabel))
    ax.set_ylabel(label(a.y, a.ylabel))
    ax.set_title(a.title or f"{a.z} over {a.x} and {a.y}")
    save(fig, a.output)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    def common(p):
        p.add_argument("-o", "--output", required=True, help="writes OUTPUT.png and OUTPUT.svg")
        p.add_argument("--xlabel")
        p.add_argument("--ylabel")
        p.add_argument("--title")

    for name, fn in [("roofline", roofline), ("utilization", utilization)]:
        p = sub.add_parser(name)
        p.add_argument("report")
        p.add_argument("--bins", type=int, default=200, help="time bins (utilization)")
        common(p)
        p.set_defaults(fn=fn)
    for name, fn in [("curves", curves), ("heatmap", heatmap)]:
        p = sub.add_parser(name)
        p.add_argument("db")
        p.add_argument("--x", required=True)
        p.add_argument("--y", required=True)
        if name == "curves":
            p.add_argument("--series")
            p.add_argument("--logx", action="store_true", help="log2 x axis")
        else:
            p.add_argument("--z", required=True)
        p.add_argument("--sweep")
        p.add_argument("--where")
        p.add_argument("--fixed", action="append", default=[], type=lambda s: s.split("=", 1),
                       help="K=V: keep points whose axis K is V (repeatable)")
        common(p)
        p.set_defaults(fn=fn)
    a = ap.parse_args(argv)
    a.fn(a)


if __name__ == "__main__":
    main()
