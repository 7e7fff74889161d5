#!/usr/bin/env bash
# SPMD symmetry over replica groups (docs/pods.md, "Replica groups that are translates"): a
# data-parallel step whose layer norms all-reduce their statistics within groups of cores (as a
# distributed batch norm does) simulates one chip when the groups are translates of one another
# by whole chips, and gives the same report as the full run (--no-symmetry): cycles, every op,
# every unit, chip and link figure. Cases: groups of 2 cores (one chip) and of 8 (4 chips: a
# whole row of v3-32's 4 x 4 torus, whose rings run in either direction, and half a row of
# v3-128's 8 x 8), and the even and the odd cores (halves of every chip). Groups that are not
# translates run in full and say why; groups whose collectives end apart (their rings overlap the gradient all-reduces, which
# do not repeat the groups' translation) are found during the run, which is then simulated
# again with every core.
# Usage: symmetry_groups.sh path/to/tpusim (run from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# A one-layer BERT step with a grouped all-reduce after each forward layer norm (and, with
# "backward", after each layer norm gradient); `size` consecutive cores per group, or the
# groups given as JSON.
with_groups() {  # in out size|groups-json [backward]
    python3 - "$@" <<'PY'
import json, sys
src, dst, size = sys.argv[1], sys.argv[2], sys.argv[3]
backward = len(sys.argv) > 4
t = json.load(open(src))
groups = json.loads(size) if size.startswith("[") else \
    [list(range(k, k + int(size))) for k in range(0, t["cores"], int(size))]
out, stats = [], {}
for o in t["ops"]:
    o = dict(o)
    if o.get("deps"):
        o["deps"] = o["deps"] + [stats[d] for d in o["deps"] if d in stats]
    out.append(o)
    i = o["id"]
    if o["kind"] == "vector" and (i.endswith(".ln") or (backward and i.endswith("ln.grad"))):
        stats[i] = i + ".stats"
        out.append({"id": i + ".stats", "kind": "all_reduce", "bytes": 2048, "dtype": "f32",
                    "deps": [i], "replica_groups": groups})
t["ops"] = out
json.dump(t, open(dst, "w"))
PY
}
for cores in 32 128; do
    python3 scripts/gen_trace.py bert --layers 1 --seq 128 --batch 1 --hidden 256 --heads 4 \
        --ffn 1024 --vocab 1024 --predictions 20 --cores $cores -o "$tmp/bert$cores.json" \
        > /dev/null || fatal "gen_trace bert --cores $cores"
done

# Runs NAME on v3-BOARD both ways; WANT: "symmetric" (one chip simulated), "rerun" (found
# apart during the run: a note, then every core) or a fragment of the full run's reason.
compare() {  # name board want
    local name=$1 board=$2 want=$3
    for mode in symmetric full; do
        local extra=()
        [[ $mode == full ]] && extra=(--no-symmetry)
        "$bin" run --config "configs/tpu_v3_$board.json" --trace "$tmp/$name.json" "${extra[@]}" \
            --quiet --json > "$tmp/$name.$mode.json" 2> "$tmp/$name.$mode.err" ||
            { fail "$name $mode: exit $?: $(tail -2 "$tmp/$name.$mode.err")"; return; }
    done
    python3 - "$tmp" "$name" "$want" <<'PY' && passes=$((passes + 1)) || fail "$name"
import json, sys
sys.path.insert(0, "tests/cli")
from report_diff import first_difference, strip
d, name, want = sys.argv[1:4]
sym, full = (json.load(open(f"{d}/{name}.{m}.json")) for m in ("symmetric", "full"))
err = open(f"{d}/{name}.symmetric.err").read()
s = sym["symmetry"]
if want == "symmetric":
    ok = s["used"] and s["simulated_cores"] == 2 and "note: SPMD" not in err
elif want == "rerun":
    ok = not s["used"] and s["reason"] == "--no-symmetry" and \
        err.count("note: SPMD symmetry: the collective of op") == 1 and \
        "its replica groups do not run alike; simulating every core" in err
else:
    ok = not s["used"] and want in s["reason"] and s["simulated_cores"] == sym["cores"] and \
        err.count("info: SPMD symmetry not used") == 1
if not ok:
    print(f"FAIL {name}: expected {want}, got {s}; stderr: {err[-400:]}"); sys.exit(1)
if full["ici"]["bytes"] <= 0 or not any(o["id"].endswith(".stats") for o in full["ops"]):
    print(f"FAIL {name}: the full run has no ICI traffic or no grouped all-reduce"); sys.exit(1)
r = first_difference(strip(sym, "symmetry"), strip(full, "symmetry"), ("default", "full"))
if r:
    print(f"FAIL {name}: the report differs from the full run's at {r}"); sys.exit(1)
print(f"ok {name} ({want}): {full['cycles']} cycles, {full['ici']['bytes']} ICI bytes, "
      "the same report as the full run's")
PY
}

with_groups "$tmp/bert32.json" "$tmp/g32x2.json" 2
compare g32x2 32 symmetric
with_groups "$tmp/bert32.json" "$tmp/g32x8.json" 8
compare g32x8 32 symmetric
with_groups "$tmp/bert128.json" "$tmp/g128x8.json" 8
compare g128x8 128 symmetric
with_groups "$tmp/bert128.json" "$tmp/g128x2.json" 2
compare g128x2 128 symmetric
# The layer norm gradients' groups overlap the gradient all-reduces on v3-32's rows.
with_groups "$tmp/bert32.json" "$tmp/g32x8b.json" 8 backward
compare g32x8b 32 rerun

# Not translates (v3-32, chips y * 4 + x): row 0, two 2 x 2 squares, row 3.
cores_of() { python3 -c "import json, sys; print(json.dumps([[c * 2 + k for c in g for k in (0, 1)] for g in json.loads(sys.argv[1])]))" "$1"; }
with_groups "$tmp/bert32.json" "$tmp/shapes.json" \
    "$(cores_of '[[0,1,2,3],[4,5,8,9],[6,7,10,11],[12,13,14,15]]')"
compare shapes 32 "replica group 1 is not a translate of the first one"
# Part of a chip: the even cores and the odd ones. Each core's group holds its image on chip 0
# (core c mod 2), so chip 0 stands for the others (docs/pods.md, "A block of chips as the
# unit": chip 0 alone under the general conditions).
with_groups "$tmp/bert32.json" "$tmp/halves.json" \
    "$(python3 -c 'print([list(range(0, 32, 2)), list(range(1, 32, 2))])')"
compare halves 32 symmetric
finish
