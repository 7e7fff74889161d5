#!/usr/bin/env python3
"""Independent count of the matrix FLOPs of an HLO module: 2 x output elements x contracted
size for every dot and convolution, with each while body multiplied by its trip count (the
constant its condition compares the counter with; counters start at 0 in these modules) and
each called computation counted once per call. Written from the HLO text with regular
expressions only, sharing nothing with tpusim's reader.

Usage: hlo_flops.py FILE.hlo [TPUSIM_BIN --config CFG]
Prints the count; with a tpusim binary, also compares it with the matmul FLOPs that
`tpusim trace check --hlo --json` reports (totals over cores, so divided by its core count)
and exits 1 when they differ."""
import json
import re
import subprocess
import sys

SHAPE = r"([a-z0-9]+)\[([0-9,]*)\]"
DEF = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
HEADER = re.compile(r"^\s*(ENTRY\s+)?%?([\w.\-]+)\s*(\(.*\)\s*->.*)?\{\s*$")


def dims(s):
    return [int(x) for x in s.split(",") if x]


def prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def parse(path):
    comps, entry, cur = {}, None, None
    for line in open(path, encoding="utf-8"):
        if cur is None:
            m = HEADER.match(line)
            if m and not line.lstrip().startswith("HloModule"):
                cur = m.group(2)
                comps[cur] = []
                if m.group(1):
                    entry = cur
            continue
        if line.strip() == "}":
            cur = None
            continue
        comps[cur].append(line)
    return comps, entry or list(comps)[-1]


def own_and_calls(lines):
    shapes, flops, calls = {}, 0, []
    for line in lines:
        m = DEF.match(line)
        if not m:
            continue
        name, rest = m.group(1), m.group(2)
        if rest.startswith("("):  # tuple shape: its elements (for %name#i), then past it
            depth, i, start, element = 0, 0, 1, 0
            for i, c in enumerate(rest):
                depth += (c in "([{") - (c in ")]}")
                if depth == 1 and c == "," or depth == 0:
                    sm = re.match(r"\s*" + SHAPE, rest[start:i])
                    if sm:
                        shapes[f"{name}#{element}"] = dims(sm.group(2))
                    start, element = i + 1, element + 1
                if depth == 0:
                    break
            out, rest = [], rest[i + 1:]
        else:
            sm = re.match(SHAPE + r"(\{[^}]*\})?", rest)
            out, rest = dims(sm.group(2)), rest[sm.end():]
        shapes[name] = out
        op = re.match(r"\s*([a-z\-]+)\((.*?)\)(,|$)", rest)
        opcode = op.group(1) if op else ""
        args = re.findall(r"%([\w.\-]+(?:#\d+)?)", op.group(2)) if op else []
        if opcode == "dot":
            lc = re.search(r"lhs_contracting_dims=\{([0-9,]*)\}", line)
            k = prod(shapes[args[0]][int(i)] for i in dims(lc.group(1))) if lc else 1
            flops += 2 * prod(out) * k
        elif opcode == "convolution":
            labels = re.search(r"dim_labels=(\w+)_(\w+)->(\w+)", line).group(2)
            ker = shapes[args[1]]
            k = prod(ker[i] for i, c in enumerate(labels) if c != "o")
            flops += 2 * prod(out) * k
        elif opcode == "while":
            cond = re.search(r"condition=%?([\w.\-]+)", line).group(1)
            body = re.search(r"body=%?([\w.\-]+)", line).group(1)
            calls.append(("while", cond, body))
        else:
            for callee in re.findall(r"(?:to_apply|calls)=%?([\w.\-]+)", line):
                if opcode in ("call", "fusion", "async-start"):
                    calls.append(("call", callee, None))
    return flops, calls


def trips(comps, cond):
    consts = [int(c) for c in re.findall(r"constant\((\d+)\)", "".join(comps[cond]))]
    return consts[-1]


def total(comps, name, memo):
    if name not in memo:
        own, calls = own_and_calls(comps[name])
        for kind, a, b in calls:
            own += trips(comps, a) * total(comps, b, memo) if kind == "while" else total(comps, a, memo)
        memo[name] = own
    return memo[name]


def main():
    comps, entry = parse(sys.argv[1])
    count = total(comps, entry, {})
    print(count)
    if len(sys.argv) > 2:
        out = subprocess.run([sys.argv[2], "trace", "check", "--hlo", sys.argv[1], "--json"] +
                             sys.argv[3:], capture_output=True, text=True, check=True).stdout
        j = json.loads(out)
        # Matrix FLOPs: dots and implicit-GEMM convolutions are `matmul` ops, 2-D
        # convolutions that the import runs directly are `conv2d` ops.
        kinds = j["flops_by_kind"]
        got = (int(kinds.get("matmul", "0")) + int(kinds.get("conv2d", "0"))) // int(j["cores"])
        if got != count:
            print(f"FAIL {sys.argv[1]}: tpusim counts {got} matrix FLOPs per core, "
                  f"independent count {count}")
            sys.exit(1)
        print(f"ok {sys.argv[1]}: {got} matrix FLOPs per core")


main()
