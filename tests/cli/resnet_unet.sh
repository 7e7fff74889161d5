#!/usr/bin/env bash
# `gen_trace.py resnet-unet`: the ResNet-34-encoder UNet of the seed workloads (the trace
# counterpart of tests/data/hlo/jax_seed_workloads/resnet_unet_dp8.*). The trace checks, runs,
# and its matrix FLOPs equal a count of the architecture made here from its description (the
# generator's docstring): every convolution 2 x batch x output pixels x k^2 x c_in x c_out
# forward, twice that backward (dx and dw), the stem's dx excepted (the input needs no
# gradient). Per core, on a v3-8 (8 cores).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
batch=2 image=32
python3 scripts/gen_trace.py resnet-unet --batch $batch --image $image --cores 8 \
    -o "$tmp/ru.json" || fatal "gen_trace.py resnet-unet"
"$bin" trace check --config configs/tpu_v3_8.json --trace "$tmp/ru.json" > "$tmp/check.txt" ||
    fail "trace check: $(head -2 "$tmp/check.txt")"
"$bin" run --config configs/tpu_v3_8.json --trace "$tmp/ru.json" -q --report "$tmp/r.json" \
    > /dev/null || fatal "run"
expected=$(python3 - "$batch" "$image" <<'PY'
import sys
B, hw = int(sys.argv[1]), int(sys.argv[2])
convs = [(hw, 3, 6, 64, False)]  # (output side, k, c_in, c_out, has dx)
c = 64
for s, (n, w) in enumerate(zip([3, 4, 6, 3], [64, 128, 256, 512])):
    for b in range(n):
        st = 2 if b == 0 and s > 0 else 1
        hw //= st
        if st == 2 or c != w:
            convs.append((hw, 1, c, w, True))
        convs += [(hw, 3, c, w, True), (hw, 3, w, w, True)]
        c = w
for ci, co in [(512, 256), (256, 128), (128, 64)]:
    hw *= 2
    convs += [(hw, 3, ci, co, True), (hw, 3, co, co, True), (hw, 3, co, co, True)]
convs.append((hw, 1, 64, 2, True))
print(sum(2 * B * o * o * k * k * ci * co * (3 if dx else 2) for o, k, ci, co, dx in convs))
PY
)
got=$(python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(int(j['mxu_flops']) // j['cores'])" "$tmp/r.json")
[[ "$got" == "$expected" ]] && passes=$((passes + 1)) ||
    fail "matrix FLOPs per core: the trace has $got, the architecture $expected"
grep -q '"op": "adam"' "$tmp/ru.json" || fail "no Adam update in the trace"
finish
