#!/usr/bin/env python3
"""One-way layers: common, config, stats, trace, program, arch, sim, train, cli. A file in src/<layer>/
or include/tpusim/<layer>/ may include only headers of its own layer or of layers before it,
and another layer's internal headers (src/<layer>/...) not at all.
  check_layers.py [source root]       exit 1 and one line per offending include
"""
import os
import re
import sys

LAYERS = ["common", "config", "stats", "trace", "program", "arch", "sim", "train", "cli"]
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def layer_of(rel):
    """(layer, internal) of a path relative to the source root, or None outside the layers."""
    parts = rel.split("/")
    if parts[0] == "include" and len(parts) > 2 and parts[1] == "tpusim":
        return (parts[2], False) if parts[2] in LAYERS else None
    if parts[0] == "src":
        if rel == "src/main.cpp":
            return ("cli", False)
        return (parts[1], True) if len(parts) > 2 and parts[1] in LAYERS else None
    return None


def resolve(root, src_rel, name):
    """The included file relative to root: beside the includer, then include/, then src/."""
    for base in (os.path.dirname(src_rel), "include", "src"):
        rel = os.path.normpath(os.path.join(base, name))
        if os.path.exists(os.path.join(root, rel)):
            return rel
    return None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    bad = []
    for top in ("include", "src"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith((".h", ".cpp")):
                    continue
                rel = os.path.relpath(os.path.join(d, f), root)
                me = layer_of(rel)
                if me is None:
                    continue
                for n, line in enumerate(open(os.path.join(root, rel)), 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    target = resolve(root, rel, m.group(1))
                    it = layer_of(target) if target else None
                    if it is None:
                        continue
                    if LAYERS.index(it[0]) > LAYERS.index(me[0]):
                        bad.append(f"{rel}:{n}: {me[0]} includes {it[0]} ({m.group(1)}): "
                                   f"expected only {', '.join(LAYERS[:LAYERS.index(me[0]) + 1])}")
                    elif it[1] and it[0] != me[0]:
                        bad.append(f"{rel}:{n}: {me[0]} includes an internal header of "
                                   f"{it[0]} ({m.group(1)}): expected a public one under include/")
    print("\n".join(bad) if bad else f"layers one-way: {' < '.join(LAYERS)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
