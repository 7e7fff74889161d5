#!/usr/bin/env bash
# tpusim compare on a base run and its 256 x 256 MXU variant: the step, each unit's busy time,
# each kernel (an op and the ops fused into it) by how much its self time moved, and the config keys that
# differ, all as derived here from the two reports themselves; bad inputs are located errors.
# Usage: compare.sh path/to/tpusim (from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
v3=configs/tpu_v3_8.json
t=traces/bert_base_layer_fwd.json
"$bin" run -q --config $v3 --trace $t --report "$tmp/a.json" > /dev/null || fatal "base run: $?"
"$bin" run -q --config $v3 --trace $t --set mxu.rows=256 --set mxu.cols=256 \
    --report "$tmp/b.json" > /dev/null || fatal "variant run: $?"
"$bin" compare "$tmp/a.json" "$tmp/b.json" --json > "$tmp/c.json" || fatal "compare --json: $?"
"$bin" compare "$tmp/a.json" "$tmp/b.json" --top 3 > "$tmp/c.txt" || fatal "compare: $?"
if python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
a, b, c = (json.load(open(f"{d}/{n}.json")) for n in ("a", "b", "c"))
def kernels(r):
    # Each kernel's self time on the critical path (the report's own rows), in us.
    return {k["name"]: k["self_us"] for k in r["kernels"]}
ka, kb = kernels(a), kernels(b)
errors = []
got = [(k["kernel"], k["a_us"], k["b_us"]) for k in c["kernels"]]
# Every kernel once, in order of how much it moved (kernels that moved alike in any order).
if sorted(g[0] for g in got) != sorted(ka):
    errors.append(f"kernels {sorted(g[0] for g in got)} != {sorted(ka)}")
moves = [abs(gb - ga) for _, ga, gb in got]
if any(moves[i + 1] > moves[i] + 1e-9 for i in range(len(moves) - 1)):
    errors.append(f"kernels not ordered by how much they moved: {got}")
for gi, ga, gb in got:
    if gi in ka and (abs(ga - ka[gi]) > 1e-6 or abs(gb - kb[gi]) > 1e-6):
        errors.append(f"{gi}: {ga}, {gb} != {ka[gi]}, {kb[gi]}")
ta, tb = a["seconds"] * 1e6, b["seconds"] * 1e6
if abs(c["step"]["diff_us"] - (tb - ta)) > 1e-6:
    errors.append(f"step diff {c['step']['diff_us']} != {tb - ta}")
# Self times add up to the step, so the kernels' moves add up to the step's.
moved = sum(k["diff_us"] for k in c["kernels"])
if c["kernel_time"] != "self" or abs(moved - (tb - ta)) > 1e-3 * abs(ta):
    errors.append(f"kernel moves sum to {moved} us, the step moved {tb - ta} us")
mxu = next(u for u in c["units"] if u["unit"] == "MXU")
if abs(mxu["a_us"] - a["utilization"]["mxu_busy"] * ta) > 1e-6:
    errors.append("MXU busy time")
keys = {x["key"] for x in c["config_differences"]}
if not {"mxu.rows", "mxu.cols"} <= keys or any(k.startswith(("hbm.", "vpu.", "chip.")) for k in keys):
    errors.append(f"config differences {sorted(keys)}")
if errors:
    print("FAIL compare: " + "; ".join(errors))
    sys.exit(1)
print(f"ok   compare: {len(got)} kernels, the largest move {got[0][0]} {got[0][1]:.1f} -> {got[0][2]:.1f} us")
PY
then passes=$((passes + 1)); else fails=$((fails + 1)); fi
grep -q "^  step       .* us -> .* us (-" "$tmp/c.txt" && grep -q "mxu.rows 128 -> 256" "$tmp/c.txt" &&
    [ "$(grep -c '^    l0\.' "$tmp/c.txt")" = 3 ] && passes=$((passes + 1)) ||
    fail "compare text: $(cat "$tmp/c.txt")"
# A report written before kernels had self times (no "kernels"): kernels by their spans.
python3 - "$tmp" <<'PY' || fail "writing the reports without kernels"
import json, sys
d = sys.argv[1]
for n in ("a", "b"):
    r = json.load(open(f"{d}/{n}.json"))
    del r["kernels"], r["kernel_attribution"]
    json.dump(r, open(f"{d}/old_{n}.json", "w"))
PY
"$bin" compare "$tmp/old_a.json" "$tmp/old_b.json" --json > "$tmp/old.json" || fail "compare old reports: $?"
if python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
a, c = json.load(open(f"{d}/a.json")), json.load(open(f"{d}/old.json"))
spans = {k["name"]: (k["end_cycle"] - k["start_cycle"]) / a["config"]["chip"]["clock_mhz"]
         for k in a["kernels"]}
got = {k["kernel"]: k["a_us"] for k in c["kernels"]}
ok = c["kernel_time"] == "span" and got.keys() == spans.keys() and all(
    abs(got[i] - spans[i]) < 1e-6 for i in spans)
print("ok   compare old reports by span" if ok else f"FAIL compare old reports: {got} != {spans}")
sys.exit(0 if ok else 1)
PY
then passes=$((passes + 1)); else fails=$((fails + 1)); fi
expect_error "compare a config" "configs/tpu_v3_8.json: not a tpusim run report" -- compare "$tmp/a.json" $v3
expect_error "compare a missing file" "$tmp/none.json: cannot open file" -- compare "$tmp/a.json" "$tmp/none.json"
finish
