#!/usr/bin/env python3
"""docs/architecture.md against the code it describes:
- its layer table names the layers CMakeLists.txt builds (TPUSIM_LAYERS, then cli), in that
  order, which are also the layers tests/layers/check_layers.py enforces, and its prose counts
  them right;
- its module tree is what `tpusim info --config configs/tpu_v3_8.json --modules` prints for
  the parts it shows: every line it has exists with the same kind, and nothing is missing
  under the board, chip0 and core0 (the TLM sockets' own inner port/export objects aside;
  "chip1 .. chip3 ... as chip0" stands for repeats whose insides are not shown).
  check_architecture_doc.py path/to/tpusim   (from the source root; exit 1 with one line per
                                               difference)
"""
import re
import subprocess
import sys

NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
           "ten", "eleven", "twelve"]


def main():
    tpusim = sys.argv[1]
    doc = open("docs/architecture.md").read()
    bad = []

    # Layers.
    cmake = open("CMakeLists.txt").read()
    built = re.search(r"set\(TPUSIM_LAYERS ([a-z ]+)\)", cmake).group(1).split() + ["cli"]
    enforced = eval(re.search(r"^LAYERS = (\[.*\])$", open("tests/layers/check_layers.py").read(),
                              re.M).group(1))
    section = doc.split("## Layers", 1)[1].split("\n## ", 1)[0]
    table = [m.group(1) for m in re.finditer(r"^\| ([a-z]+) \| `", section, re.M)]
    if table != built:
        bad.append(f"layer table {table} != CMakeLists.txt's layers {built}")
    if enforced != built:
        bad.append(f"check_layers.py's LAYERS {enforced} != CMakeLists.txt's layers {built}")
    m = re.search(r"The code is (\w+) layers", section)
    if not m or m.group(1) not in NUMBERS or NUMBERS.index(m.group(1)) != len(built):
        bad.append(f"the prose says '{m.group(0) if m else '(no count)'}', the build has "
                   f"{len(built)} layers")

    # Module tree.
    block = doc.split("## Module tree", 1)[1].split("```", 2)[1]
    shown = {}
    for line in block.splitlines():
        # "name  (kind)", "name  (kind)  ... as core0" or "first .. last  (kind)  ... as chip0"
        m = re.match(r"^\s*(board[\w.]*)(?: \.\. (board[\w.]*))?\s+\((\w+)\)", line)
        if not m:
            continue
        first, last, kind = m.groups()
        names = [first]
        if last:
            a, b = re.fullmatch(r"(.*?)(\d+)", first), re.fullmatch(r"(.*?)(\d+)", last)
            names = [f"{a.group(1)}{i}" for i in range(int(a.group(2)), int(b.group(2)) + 1)]
        for n in names:
            shown[n] = kind
    out = subprocess.run([tpusim, "info", "--config", "configs/tpu_v3_8.json", "--modules"],
                         capture_output=True, text=True, check=True).stdout
    actual = {}
    for line in out.splitlines():
        m = re.match(r"^\s*(board[\w.]*)\s+\((\w+)\)\s*$", line)
        if m:
            actual[m.group(1)] = m.group(2)
    for name, kind in shown.items():
        if name not in actual:
            bad.append(f"module tree: {name} ({kind}) is not in `tpusim info --modules`")
        elif actual[name] != kind:
            bad.append(f"module tree: {name} is a {actual[name]}, the doc says {kind}")

    def covered(name):  # under the parts the doc shows in full
        parts = name.split(".")
        if re.search(r"_(port|export)_\d+$", parts[-1]):  # a TLM socket's inner binding object
            return False
        if len(parts) <= 2:  # the board's children
            return True
        if parts[1] != "chip0":
            return False
        if len(parts) == 3:  # chip0's children
            return True
        return parts[2] == "core0" or parts[2] in ("hbm", "host")
    for name, kind in actual.items():
        if covered(name) and name not in shown:
            bad.append(f"module tree: {name} ({kind}) is missing from docs/architecture.md")

    for b in bad:
        print(f"docs/architecture.md: {b}")
    if not bad:
        print(f"docs/architecture.md: {len(built)} layers and {len(shown)} modules/ports as built")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
