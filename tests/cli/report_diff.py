"""Field-by-field comparison of two tpusim JSON reports, for the CLI tests that require one way
of running to reproduce another exactly (SPMD symmetry, the ICI tile fold). Import it from a
test run in the source root: sys.path.insert(0, "tests/cli")."""


def strip(report, *keys):
    """The report without its wall-time fields and the top-level `keys`."""
    return {k: v for k, v in report.items() if "wall" not in k and k not in keys}


def first_difference(a, b, names=("first", "second"), path=""):
    """Where a and b first differ ("" when they are equal), naming them by `names`."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}/{k} only in one report"
            d = first_difference(a[k], b[k], names, f"{path}/{k}")
            if d:
                return d
        return ""
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} vs {len(b)} entries"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, names, f"{path}/{i}")
            if d:
                return d
        return ""
    return "" if a == b else f"{path}: {a} ({names[0]}) vs {b} ({names[1]})"
