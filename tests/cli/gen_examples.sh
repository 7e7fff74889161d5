#!/usr/bin/env bash
# The committed example traces (traces/*.json that gen_trace.py writes) are exactly what
# `scripts/gen_trace.py examples` writes today: a change to the generator or a hand edit of a
# trace cannot leave the two apart (golden cycles are checked on the committed files).
# Also generates a BERT-Large LAMB step (validate.py's BERT set) to keep that path working.
# Usage: gen_examples.sh (run from the source root).
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
python3 scripts/gen_trace.py examples "$tmp" || { echo "FAIL gen_trace.py examples"; exit 1; }
n=0
for f in "$tmp"/*.json; do
    name=$(basename "$f")
    n=$((n + 1))
    if ! cmp -s "$f" "traces/$name"; then
        echo "FAIL traces/$name differs from what gen_trace.py examples writes:"
        diff <(tr ',' '\n' < "traces/$name") <(tr ',' '\n' < "$f") | head -10
        status=1
    fi
done
[[ $n -ge 6 ]] || { echo "FAIL only $n example traces written"; status=1; }
python3 scripts/gen_trace.py bert --batch 2 --cores 32 --layers 2 --optimizer lamb \
    -o "$tmp/lamb.json" || { echo "FAIL gen_trace.py bert --optimizer lamb"; status=1; }
grep -q '"op": "lamb"' "$tmp/lamb.json" && grep -q '"id": "l0.lamb_step"' "$tmp/lamb.json" ||
    { echo "FAIL no lamb + lamb_step ops in the LAMB trace"; status=1; }
# --clip-global-norm: every all-reduce waits for the global norm, which waits for every
# layer's sum of squares.
python3 scripts/gen_trace.py bert --batch 2 --cores 8 --layers 2 --seq 128 --optimizer lamb \
    --clip-global-norm -o "$tmp/clip.json" || { echo "FAIL gen_trace.py bert --clip-global-norm"; status=1; }
python3 - "$tmp/clip.json" <<'PY' || status=1
import json, sys
ops = {o["id"]: o for o in json.load(open(sys.argv[1]))["ops"]}
def reaches(a, b, seen=None):
    seen = set() if seen is None else seen
    if a == b:
        return True
    seen.add(a)
    return any(reaches(d, b, seen) for d in ops[a].get("deps", []) if d not in seen)
norm = ops["grad_global_norm"]
squares = [i for i in ops if i.endswith(".grad_sq")]
reduces = [i for i, o in ops.items() if o["kind"] == "all_reduce"]
bad = [r for r in reduces if not reaches(r, "grad_global_norm")]
if len(squares) != len(reduces) or set(norm["deps"]) != set(squares) or bad or not reduces:
    print(f"FAIL clipped trace: {len(squares)} sums of squares, {len(reduces)} all-reduces, "
          f"not after the norm: {bad}")
    sys.exit(1)
PY
# --optimizer lars: every momentum update waits for its layer's weight and gradient norms.
python3 scripts/gen_trace.py resnet50 --batch 2 --image 64 --cores 8 --optimizer lars \
    -o "$tmp/lars.json" || { echo "FAIL gen_trace.py resnet50 --optimizer lars"; status=1; }
python3 - "$tmp/lars.json" <<'PY' || status=1
import json, sys
ops = json.load(open(sys.argv[1]))["ops"]
updates = [o for o in ops if o.get("op") == "sgd_momentum"]
bad = [o["id"] for o in updates
       if sorted(d.rsplit(".", 1)[1] for d in o["deps"][1:]) != ["g_norm", "w_norm"]]
if not updates or bad:
    print(f"FAIL LARS trace: {len(updates)} momentum updates, without both norms: {bad}")
    sys.exit(1)
PY
# --activations f32: no op of the model is left in bf16 (the mixed-precision default).
python3 scripts/gen_trace.py bert --batch 2 --cores 8 --layers 2 --seq 128 --seq2 64 \
    --activations f32 -o "$tmp/f32.json" || { echo "FAIL gen_trace.py bert --activations f32"; status=1; }
if grep -q '"bf16"' "$tmp/f32.json"; then
    echo "FAIL bf16 ops in an --activations f32 trace:"; grep -o '"id": "[^"]*"[^}]*"bf16"' "$tmp/f32.json" | head -3
    status=1
fi
# --f32-softmax: the softmax of the bf16 scores writes f32, its dropout and both gradients
# run in f32, and the three matmuls that read the f32 probabilities convert them inside; no
# other op changes type (the softmax is unfused: its row reductions end XLA's fusion).
python3 scripts/gen_trace.py bert --batch 2 --cores 8 --layers 2 --seq 128 \
    -o "$tmp/sm_bf16.json" || { echo "FAIL gen_trace.py bert"; status=1; }
python3 scripts/gen_trace.py bert --batch 2 --cores 8 --layers 2 --seq 128 --f32-softmax \
    -o "$tmp/sm_f32.json" || { echo "FAIL gen_trace.py bert --f32-softmax"; status=1; }
python3 - "$tmp/sm_bf16.json" "$tmp/sm_f32.json" <<'PY' || status=1
import json, sys
a, b = ({o["id"]: o for o in json.load(open(f))["ops"]} for f in sys.argv[1:3])
changed = sorted(i for i in b if a.get(i) != b[i])
want = sorted(f"l{l}.attn.{n}" for l in range(2) for n in
              ("softmax", "probs_dropout", "context", "dv", "probs_dropout_grad", "softmax_grad"))
sm = b["l0.attn.softmax"]
if changed != want or sm.get("out_dtype") != "f32" or sm.get("fused"):
    print(f"FAIL --f32-softmax changed {changed}, want {want}; softmax {sm}")
    sys.exit(1)
PY
[[ $status -eq 0 ]] && echo "ok: $n example traces reproduced; LAMB step written"
exit $status
