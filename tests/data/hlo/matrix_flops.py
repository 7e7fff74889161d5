#!/usr/bin/env python3
"""Matrix FLOPs of an HLO text module counted from its dot and convolution shapes alone, as an
independent check of tpusim's import (which builds implicit GEMMs instead).

  convolution: 2 x output elements x kernel elements / kernel output features
               (each output element is a sum over the kernel window and the input features of
               its group: kernel spatial x kernel input features)
  dot:         2 x output elements x the product of lhs_contracting_dims of the lhs

Each instruction is counted once as written: for modules without while loops or repeated
calls (the MobileNetV2 sample) this is the step's count. Usage: matrix_flops.py FILE.hlo
"""
import re
import sys

SHAPE = re.compile(r"([a-z][a-z0-9]*)\[([0-9,]*)\]")
INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(\S+?\[[0-9,]*\])(?:\{[^}]*\})?\s+([\w\-]+)\((.*)$")


def dims(shape_text):
    m = SHAPE.match(shape_text)
    return [int(d) for d in m.group(2).split(",") if d] if m else []


def prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def operand_names(args):
    # The operand list up to its closing parenthesis: "[type[dims]{layout} ]%name" items.
    depth, out = 0, ""
    for ch in args:
        if ch == "(":
            depth += 1
        elif ch == ")":
            if depth == 0:
                break
            depth -= 1
        out += ch
    names = []
    for item in re.split(r",\s*(?![^\[\{]*[\]\}])", out):
        name = item.strip().split()[-1] if item.strip() else ""
        names.append(name.lstrip("%"))
    return names


def attr(rest, key):
    m = re.search(r"\b" + key + r"=\{?([^},\s]*(?:,[0-9]+)*)\}?", rest)
    return m.group(1) if m else None


def main(path):
    shapes, total = {}, 0
    lines = open(path).read().splitlines()
    for line in lines:
        m = INSTR.match(line)
        if m:
            shapes[m.group(1)] = dims(m.group(2))
    for line in lines:
        m = INSTR.match(line)
        if not m or m.group(3) not in ("convolution", "dot"):
            continue
        out = dims(m.group(2))
        ops = operand_names(m.group(4))
        rest = m.group(4)
        if m.group(3) == "convolution":
            kernel = shapes[ops[1]]
            labels = attr(rest, "dim_labels")
            kl = labels.split("_")[1].split("->")[0] if labels else "oi" + "".join(
                str(i) for i in range(len(kernel) - 2))
            total += 2 * prod(out) * prod(kernel) // kernel[kl.index("o")]
        else:
            lhs = shapes[ops[0]]
            lc = attr(rest, "lhs_contracting_dims")
            k = prod(lhs[int(d)] for d in lc.split(",")) if lc else 1
            total += 2 * prod(out) * k
    print(total)


if __name__ == "__main__":
    main(sys.argv[1])
