#!/usr/bin/env bash
# Every form of one program replays alike (#35): the seed workloads as JAX hands them to XLA
# (before_optimizations: no fusions, JAX's custom_jvp functions as `call`s) and after SPMD
# partitioning, on a v3-8. For each program: step times within 10% of each other (the
# call-inliner and fusion passes make the forms the same program), and per-device matrix
# FLOPs equal for both and equal to tests/cli/hlo_flops.py's independent count of the
# partitioned module (divided by nothing: the modules are per device). The before form must
# have had its calls inlined (hlo.inlined_calls > 0). Both forms' kernel rows (#38) add up to
# their run's cycles within 0.1%, and no fused op is a row of its own.
# Usage: hlo_forms.sh path/to/tpusim (from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
d=tests/data/hlo/jax_seed_workloads
for p in lstm_imdb_dp8 roberta_base_quest_dp8 resnet50_dp8 resnet_unet_dp8; do
    want=$(python3 tests/cli/hlo_flops.py "$d/$p.after_spmd_partitioning.hlo") ||
        fatal "hlo_flops.py failed on $p"
    for f in before_optimizations after_spmd_partitioning; do
        timeout "$hang" "$bin" run -q --config configs/tpu_v3_8.json --hlo "$d/$p.$f.hlo" \
            --report "$tmp/$f.json" >/dev/null 2>"$tmp/err" || fatal "$p.$f: $(tail -c 300 "$tmp/err")"
    done
    out=$(python3 - "$tmp/before_optimizations.json" "$tmp/after_spmd_partitioning.json" "$want" <<'PY'
import json, sys
b, a = (json.load(open(f)) for f in sys.argv[1:3])
want = int(sys.argv[3])
per_device = lambda r: r["mxu_flops"] / r["cores"]
errs = []
ratio = b["cycles"] / a["cycles"]
if not 1 / 1.1 <= ratio <= 1.1:
    errs.append(f"steps differ by more than 10%: {b['seconds']*1e3:.2f} ms before optimizations, "
                f"{a['seconds']*1e3:.2f} ms after SPMD partitioning")
for name, r in (("before optimizations", b), ("after SPMD partitioning", a)):
    if per_device(r) != want:
        errs.append(f"{name}: {per_device(r):.0f} matrix FLOPs per device, the count says {want}")
# Kernel rows (#38): their self times add up to the run within 0.1%, and no op fused into
# another is a row of its own.
for name, r in (("before optimizations", b), ("after SPMD partitioning", a)):
    total = sum(k["self_cycles"] for k in r["kernels"])
    if abs(total - r["cycles"]) > 0.001 * r["cycles"]:
        errs.append(f"{name}: kernel rows sum to {total} cycles, the run is {r['cycles']}")
    fused = {o["id"] for o in r["ops"] if str(o["bottleneck"]).startswith("fused into")}
    rows = [k["name"] for k in r["kernels"] if k["name"] in fused]
    if rows:
        errs.append(f"{name}: fused ops with rows of their own: {rows[:3]}")
if b["hlo"]["inlined_calls"] <= 0:
    errs.append("no call inlined in the before_optimizations form")
print("; ".join(errs) if errs else
      f"ok {b['seconds']*1e3:.2f} / {a['seconds']*1e3:.2f} ms ({ratio:.3f}), {want} FLOPs per device, "
      f"{b['hlo']['inlined_calls']} calls inlined")
PY
)
    if [[ $out == ok* ]]; then
        echo "$p: $out"
        passes=$((passes + 1))
    else
        echo "FAIL $p: $out"
        fails=$((fails + 1))
    fi
done
finish
