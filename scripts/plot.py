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
  plot.py bars DB.sqlite --x K --y COL [--series K] [--relative-to V] -o OUT
                                             grouped bars: COL per value of K (a workload,
                                             a variant), optionally relative to one series
  plot.py heatmap DB.sqlite --x K --y K --z COL -o OUT
                                             sweep heat map of COL over two axes

REPORT.json is `tpusim run --report`; DB.sqlite is a `tpusim sweep` database (docs/sweep.md).
K names an axis (its name in the spec: "mxu.rows", "board", "workload.batch") or a column of
the points table; COL is a column ("seconds", "achieved_bf16_tflops", "hbm_achieved_gbps_per_chip",
"utilization_mxu_busy", ...) or, for curves and bars, a Python expression over columns and
workload parameters ("batch / seconds"). --sweep picks the sweep when the database holds several;
--where adds an SQL condition ("workload = 'bert'"); --fixed K=V keeps the points whose axis
K has value V. Labels carry units; --xlabel / --ylabel / --title override them.
"""
import argparse
import json
import math
import os
import sqlite3
import sys
import textwrap

try:
    import matplotlib
except ImportError:
    # scripts/setup.sh installs Debian's python3-matplotlib for the system python3; a python3
    # earlier on PATH (a virtualenv, a conda install) may not have it: run under the system one.
    SYSTEM_PYTHON = "/usr/bin/python3"
    if os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON) and \
            os.path.exists(SYSTEM_PYTHON) and not os.environ.get("TPUSIM_PLOT_REEXEC"):
        os.environ["TPUSIM_PLOT_REEXEC"] = "1"
        os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON] + sys.argv)
    sys.exit(f"error: plot.py: {sys.executable} has no matplotlib: install it with "
             "`sudo apt-get install python3-matplotlib` (scripts/setup.sh does) and run "
             "plot.py with /usr/bin/python3")

matplotlib.use("Agg")
matplotlib.rcParams["svg.hashsalt"] = "tpusim"  # stable SVG ids: committed plots diff cleanly
matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: smaller, searchable SVGs
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


FORMATS = ["png", "svg"]


def save(fig, out):
    folder = os.path.dirname(out)
    if folder and not os.path.isdir(folder):
        sys.exit(f"error: -o {out}: the folder {folder} does not exist")
    fig.tight_layout()
    for fmt in FORMATS:
        if fmt == "svg":
            fig.savefig(out + ".svg", metadata={"Date": None})  # no date: reproducible files
        else:
            fig.savefig(f"{out}.{fmt}", dpi=120)
    plt.close(fig)
    print("wrote " + " and ".join(f"{out}.{f}" for f in FORMATS))


def load_report(path):
    try:
        with open(path) as f:
            r = json.load(f)
    except OSError as e:
        sys.exit(f"error: {path}: {e.strerror.lower()}")
    except json.JSONDecodeError as e:
        sys.exit(f"error: {path}: line {e.lineno}, column {e.colno}: not JSON ({e.msg})")
    if "ops" not in r or "config" not in r:
        sys.exit(f"error: {path}: not a tpusim run report (no ops / config)")
    return r


def roofline(a):
    """Per core: the roofs are one core's (its MXUs' bf16 peak, its VPU's at one operation per
    element per ALU slot, its share of its chip's HBM bandwidth), and so are the points: a
    report's FLOPs and HBM bytes are summed over the cores that ran them, so they are divided
    by the report's cores. Each point is a kernel (an op with the ops fused into it) placed by
    its self time on the critical path (the report's `kernels`, docs/program.md); a report
    without kernel rows (older tpusim) places its unfused ops by their spans, and ops fused
    into a producer are left out (the legend says how many)."""
    r = load_report(a.report)
    cfg = r["config"]
    clock_hz = cfg["chip"]["clock_mhz"] * 1e6
    cores = max(1, r.get("cores", 1))
    peak = r["peak_bf16_tflops"] / cores
    bw = r["hbm"]["peak_gbps_per_chip"] / cfg["chip"]["cores_per_chip"]
    vpu = cfg["vpu"]
    vpu_peak = vpu["lanes"] * vpu["sublanes"] * vpu["valu_slots"] * clock_hz / 1e12
    xs, ys, kinds = [], [], []
    fused = 0
    rows = r.get("kernels")
    if rows is not None:
        over = "over the kernel's self time"
        for k in rows:
            t = k.get("self_cycles", 0)
            if k.get("flops", 0) <= 0 or k.get("hbm_bytes", 0) <= 0 or t <= 0:
                continue
            xs.append(k["flops"] / k["hbm_bytes"])
            ys.append(k["flops"] / cores / (t / clock_hz) / 1e12)
            kinds.append(k.get("kind", "kernel"))
    else:
        over = "over the op's span"
        for op in r["ops"]:
            span = op["end_cycle"] - op["start_cycle"]
            if op.get("flops", 0) <= 0 or op.get("hbm_bytes", 0) <= 0 or span <= 0:
                continue
            if str(op.get("bottleneck", "")).startswith("fused into"):
                fused += 1
                continue
            xs.append(op["flops"] / op["hbm_bytes"])
            ys.append(op["flops"] / cores / (span / clock_hz) / 1e12)
            kinds.append(op.get("kind", "op"))
    if not xs:
        sys.exit(f"error: {a.report}: no kernel or op with FLOPs, HBM bytes and time")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    lo, hi = min(xs) / 4, max(xs) * 4
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    for roof, style, name in [(peak, "k-", "MXU"), (vpu_peak, "k--", "VPU")]:
        ridge = roof * 1e12 / (bw * 1e9)
        g = sorted(grid + ([ridge] if lo < ridge < hi else []))
        ax.plot(g, [min(roof, x * bw * 1e9 / 1e12) for x in g], style, lw=1.2,
                label=f"{name} roof: {roof:.1f} TFLOPS, HBM {bw:.0f} GB/s per core")
    for kind in sorted(set(kinds)):
        pts = [(x, y) for x, y, k in zip(xs, ys, kinds) if k == kind]
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=18, label=kind)
    if fused:
        ax.plot([], [], " ", label=f"{fused} fused ops left out (they run in their producer's kernel)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(a.xlabel or "arithmetic intensity (FLOP per HBM byte)")
    ax.set_ylabel(a.ylabel or f"achieved per core (TFLOPS, {over})")
    ax.set_title(title(ax, a.title or f"roofline per core: "
                       f"{r.get('trace', {}).get('name', a.report)} on {cfg.get('name', '')}"))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, a.output)


def title(ax, text):
    """The title wrapped to the axes' width, so that a narrow plot does not clip it."""
    width_in = ax.figure.get_figwidth() * ax.get_position().width
    return "\n".join(textwrap.wrap(text, max(20, int(width_in * 72 / 7))))


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
        ax.plot(t, [min(1.0, v / (width * n)) for v in row], label=f"{unit} ({n} unit{'s' if n != 1 else ''})", lw=1.2)
    ax.set_xlabel(a.xlabel or "simulated time (ms)")
    ax.set_ylabel(a.ylabel or "busy (fraction of the units' cycles)")
    ax.set_ylim(0, 1.05)
    ax.set_title(title(ax, a.title or
                       f"utilisation over time: {r.get('trace', {}).get('name', '')}"))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, a.output)


def sweep_rows(a, wanted):
    if not os.path.isfile(a.db):
        sys.exit(f"error: {a.db}: no such database file (a `tpusim sweep --db` output)")
    try:
        con = sqlite3.connect(f"file:{a.db}?mode=ro", uri=True)
        cols = [c[1] for c in con.execute("PRAGMA table_info(points)")]
    except sqlite3.DatabaseError as e:
        sys.exit(f"error: {a.db}: not a tpusim sweep database ({e})")
    if not cols:
        sys.exit(f"error: {a.db}: not a tpusim sweep database (no points table)")
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


def y_of(a, r):
    """The y value of a row: a column or axis, or a Python expression over the row's columns
    and workload parameters (--y "batch / seconds")."""
    if a.y in r:
        return r[a.y]
    names = {k.replace(".", "_"): v for k, v in r.items()}
    names.update(json.loads(r["params_json"]))
    try:
        return eval(a.y, {"__builtins__": {}}, names)  # a plotting aid, run by its author
    except Exception as e:  # noqa: BLE001
        sys.exit(f"error: --y {a.y!r}: not a column, axis or expression over them ({e})")


def curves(a):
    rows = sweep_rows(a, [a.x, a.series])
    fig, ax = plt.subplots(figsize=(7, 4.5))
    series = sorted({r[a.series] for r in rows}, key=str) if a.series else [None]
    for s in series:
        pts = {}
        for r in rows:
            if a.series is None or r[a.series] == s:
                pts.setdefault(r[a.x], []).append(y_of(a, r))
        xs = sorted(pts, key=lambda v: (isinstance(v, str), v))
        ys = [sum(pts[x]) / len(pts[x]) for x in xs]
        ax.plot([str(x) for x in xs] if any(isinstance(x, str) for x in xs) else xs, ys,
                "o-", label=f"{a.series} = {s}" if a.series else None)
    if a.logx:
        ax.set_xscale("log", base=2)
        xs = sorted({r[a.x] for r in rows if not isinstance(r[a.x], str)})
        if 0 < len(xs) <= 12:  # tick the swept values themselves, not powers of two
            ax.set_xticks(xs, [f"{x:g}" for x in xs])
            ax.minorticks_off()
    if a.logy:
        ax.set_yscale("log")
    ax.set_xlabel(label(a.x, a.xlabel))
    ax.set_ylabel(label(a.y, a.ylabel))
    ax.set_title(title(ax, a.title or f"{a.y} against {a.x}"))
    ax.grid(True, alpha=0.3)
    if a.series:
        ax.legend(fontsize=8)
    save(fig, a.output)


def bars(a):
    rows = sweep_rows(a, [a.x, a.series])
    xs = sorted({r[a.x] for r in rows}, key=lambda v: str(v)) if not a.order else a.order
    series = sorted({r[a.series] for r in rows}, key=str) if a.series else [None]
    val = {}
    for r in rows:
        val.setdefault((r[a.x], r[a.series] if a.series else None), []).append(y_of(a, r))
    mean = {k: sum(v) / len(v) for k, v in val.items()}
    if a.relative_to is not None:
        # V names a series (divide each bar by the V bar of its group) or an x category
        # (divide each bar by its series' bar at V).
        ref = a.relative_to
        if any(str(s) == ref for s in series):
            base = {x: mean.get((x, s)) for x in xs for s in series if str(s) == ref}
            mean = {(x, s): v / base[x] for (x, s), v in mean.items() if base.get(x)}
        elif any(str(x) == ref for x in xs):
            base = {s: mean.get((x, s)) for x in xs for s in series if str(x) == ref}
            mean = {(x, s): v / base[s] for (x, s), v in mean.items() if base.get(s)}
        else:
            sys.exit(f"error: --relative-to {ref!r}: neither a {a.series} nor a {a.x} value")
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(xs) * max(1, len(series)) / 2 + 3), 4.5))
    width = 0.8 / len(series)
    for i, s in enumerate(series):
        hs = [mean.get((x, s), float("nan")) for x in xs]
        pos = [j + (i - (len(series) - 1) / 2) * width for j in range(len(xs))]
        b = ax.bar(pos, hs, width, label=f"{a.series} = {s}" if a.series else None)
        ax.bar_label(b, fmt="%.3g", fontsize=7)
    ax.set_xticks(range(len(xs)), [str(x) for x in xs], rotation=20 if len(xs) > 4 else 0)
    ax.set_xlabel(label(a.x, a.xlabel))
    ylab = label(a.y, a.ylabel)
    if a.relative_to is not None and not a.ylabel:
        ylab = f"{a.y} relative to {a.relative_to}"
    ax.set_ylabel(ylab)
    ax.set_title(title(ax, a.title or f"{a.y} per {a.x}"))
    ax.grid(True, axis="y", alpha=0.3)
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
    ax.set_title(title(ax, a.title or f"{a.z} over {a.x} and {a.y}"))
    save(fig, a.output)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    def common(p):
        p.add_argument("-o", "--output", required=True, help="writes OUTPUT.png and OUTPUT.svg")
        p.add_argument("--formats", default="png,svg", help="comma-separated: png, svg, pdf")
        p.add_argument("--xlabel")
        p.add_argument("--ylabel")
        p.add_argument("--title")

    for name, fn in [("roofline", roofline), ("utilization", utilization)]:
        p = sub.add_parser(name)
        p.add_argument("report")
        p.add_argument("--bins", type=int, default=200, help="time bins (utilization)")
        common(p)
        p.set_defaults(fn=fn)
    for name, fn in [("curves", curves), ("bars", bars), ("heatmap", heatmap)]:
        p = sub.add_parser(name)
        p.add_argument("db")
        p.add_argument("--x", required=True)
        p.add_argument("--y", required=True)
        if name == "curves":
            p.add_argument("--series")
            p.add_argument("--logx", action="store_true", help="log2 x axis")
            p.add_argument("--logy", action="store_true", help="log y axis")
        elif name == "bars":
            p.add_argument("--series")
            p.add_argument("--relative-to",
                           help="divide by the bar of this series value or x category")
            p.add_argument("--order", nargs="+", help="x categories in this order")
        else:
            p.add_argument("--z", required=True)
        p.add_argument("--sweep")
        p.add_argument("--where")
        p.add_argument("--fixed", action="append", default=[], type=lambda s: s.split("=", 1),
                       help="K=V: keep points whose axis K is V (repeatable)")
        common(p)
        p.set_defaults(fn=fn)
    a = ap.parse_args(argv)
    FORMATS[:] = a.formats.split(",")
    a.fn(a)


if __name__ == "__main__":
    main()
