#!/usr/bin/env bash
# The detection work of the MLPerf traces (scripts/tracegen/mlperf.py, issue #37), checked
# against the submissions' code and shapes, each figure derived here from the model's
# constants (image 832 x 1344, FPN levels 2-6 of stride 2^l, 3 anchors a cell, 2,000 boxes
# before NMS, tiles of 512; SSD's 8,732 anchors), not read from the generator:
# - every tf.nn.top_k is an XLA sort of its whole row, written as import hlo writes a sort:
#   rows x n x s(s+1)/2 x 2 operands, s = ceil(log2 n) (Mask R-CNN's per-level proposals,
#   SSD v0.5's argsort(argsort(losses)));
# - Mask R-CNN's NMS: a version 2 trace; per level and tile idx the cross-suppression loop of
#   idx trips (none for the first tile) and a self-suppression loop of at least 2 trips;
# - RoIAlign gathers (2 x size)^2 corner pixels per RoI from the five levels padded to P2's
#   size and stacked, and its gradient scatters as many rows into that stack;
# - SSD v0.6's topk_mask: two binary searches, loops of 31 counting passes over each image's
#   8,732 losses; v0.5 has no loop;
# - the Mask R-CNN step runs.
# Usage: mlperf_detection.sh path/to/tpusim (from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gen="python3 scripts/gen_trace.py"

for spec in "maskrcnn v0.6 32" "ssd v0.5 8" "ssd v0.6 32"; do
    read -r b r c <<<"$spec"
    $gen mlperf "$b" --round "$r" --cores "$c" -o "$tmp/${b}_${r}_${c}.json" ||
        fatal "gen_trace.py mlperf $spec"
done

python3 - "$tmp" <<'PY' && passes=$((passes + 1)) || fail "Mask R-CNN proposals, NMS, RoIAlign"
import json, math, sys
t = json.load(open(f"{sys.argv[1]}/maskrcnn_v0.6_32.json"))
b = t["metadata"]["batch_per_core"]
assert b * t["cores"] == 128 and t["version"] == 2, (b, t["version"])
ops = {o["id"]: o for o in t["ops"]}
loops = {lp["id"]: lp for lp in t["loops"]}


def passes(n):
    s = max(1, math.ceil(math.log2(n)))
    return s * (s + 1) // 2


for lvl in range(2, 7):
    h, w = math.ceil(832 / 2 ** lvl), math.ceil(1344 / 2 ** lvl)
    n = h * w * 3
    top = ops[f"prop{lvl}.topk"]
    assert top["op"] == "max" and top["elements"] == b * n * passes(n) * 2, (lvl, top)
    tiles = math.ceil(min(n, 2000) / 512)
    for idx in range(tiles):
        cross = loops.get(f"nms{lvl}.t{idx}.cross")
        assert (cross is None) if idx == 0 else cross["trips"] == idx, (lvl, idx, cross)
        assert loops[f"nms{lvl}.t{idx}.self"]["trips"] >= 2, (lvl, idx)
    assert f"nms{lvl}.t{tiles}.self" not in loops, (lvl, tiles)
stack_rows = b * 5 * math.ceil(832 / 4) * math.ceil(1344 / 4)
for name, rois, size in (("box_roi", 512, 7), ("mask_roi", 128, 14)):
    g, s = ops[f"{name}.gather"], ops[f"{name}.scatter"]
    rows = b * rois * (2 * size) ** 2
    assert g["rows"] == s["rows"] == rows and g["cols"] == s["cols"] == 256, (name, g, s)
    assert g["table_rows"] == s["table_rows"] == stack_rows, (name, g["table_rows"])
PY

python3 - "$tmp" <<'PY' && passes=$((passes + 1)) || fail "SSD hard negative mining"
import json, math, sys
s = max(1, math.ceil(math.log2(8732)))
v05 = json.load(open(f"{sys.argv[1]}/ssd_v0.5_8.json"))
b = v05["metadata"]["batch_per_core"]
ops = {o["id"]: o for o in v05["ops"]}
for name in ("loss.argsort", "loss.argsort_rank"):
    assert ops[name]["elements"] == b * 8732 * s * (s + 1) // 2 * 2, (name, ops[name])
assert "loops" not in v05 and not any("larger_count" in i for i in ops), "v0.5 sorts"
v06 = json.load(open(f"{sys.argv[1]}/ssd_v0.6_32.json"))
b = v06["metadata"]["batch_per_core"]
ops = {o["id"]: o for o in v06["ops"]}
search = [lp for lp in v06["loops"] if lp["id"].endswith(".search")]
assert len(search) == 2 and all(lp["trips"] == 31 for lp in search), search
for lp in search:
    (body,) = lp["body"]
    assert ops[body]["rows"] == b and ops[body]["cols"] == 8732, ops[body]
assert not any("argsort" in i for i in ops), "v0.6 counts"
PY

"$bin" run --config configs/tpu_v3_32.json --trace "$tmp/maskrcnn_v0.6_32.json" --json -q \
    > "$tmp/mrcnn_run.json" 2>/dev/null
python3 - "$tmp/mrcnn_run.json" <<'PY' && passes=$((passes + 1)) || fail "Mask R-CNN run"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["seconds"] > 0, r["seconds"]
PY
finish
