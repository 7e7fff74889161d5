#!/usr/bin/env bash
# The speed and memory benchmarks of docs/design.md "Targets", printed, not asserted (timings on
# shared machines vary). Builds first (scripts/build.sh).
# Usage: scripts/bench.sh [--quick] [--runs N] [--against REV]
#   peak     bench peak on v2-8 and v3-8            target >= 97% of the derived peak
#   hbm      bench hbm on v2-8 and v3-8             target 85-98% of peak, >= 5 M bursts/s
#   mxu      bench mxu --fidelity pe on v3          target >= 50,000 array cycles/s
#   ici      bench ici on v3-8 (and the v3-2048 pod unless --quick): 1 GiB all-reduce < 1 min
#   replay   BERT-base layer (one core) and training step (8 cores) at tile fidelity:
#            target <= 0.5 s wall and <= 150 MB RSS for the step
#   scale    ResNet-50 training step on v3-8 (gen_trace.py resnet50 --batch 128 --cores 8):
#            target <= 1.0 s wall and <= 300 MB; a matmul of m = 2^31 rows (k = n = 1, the
#            widest that fits a v3 core's HBM): target < 500 MB (docs/program.md)
#   train    a ResNet-50 epoch on v3-8 (1,251 steps of 1,024) by exact step reuse:
#            target < 60 s wall and < 1 GB RSS
#   pod      BERT-base data-parallel training step on the full v3 pod (v3-2048: 2048 cores,
#            gradient all-reduces on the 32 x 32 torus) with SPMD symmetry (docs/pods.md):
#            target < 60 s wall and < 2 GB RSS (skipped with --quick)
#   speed    issue #40's table (scripts/bench_speed.py): the trivial run, the BERT-base and
#            ResNet-50 steps, the ResNet-50 JAX HLO step, a 10^9-trip loop, the v3-2048 pod and
#            Llama-3 8B (the last two not with --quick), the median of --runs N runs each, and
#            with --against REV the same rows on REV's binary, built in a scratch worktree,
#            with the ratio of the medians
# Every command prints wall time, CPU time and peak RSS (on a loaded machine CPU time is the
# figure to compare with the targets).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
quick=0
speed=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) quick=1; speed+=(--quick) ;;
        --runs | --against) [[ $# -ge 2 ]] || { echo "bench.sh: $1 needs a value" >&2; exit 2; }
            speed+=("$1" "$2"); shift ;;
        *) echo "bench.sh: unknown option $1 (--quick, --runs N, --against REV)" >&2; exit 2 ;;
    esac
    shift
done
bash scripts/build.sh >/dev/null
bin=build/tpusim
export SC_COPYRIGHT_MESSAGE=DISABLE

# Runs a command, then prints (to stderr, so that a pipe on the output keeps it) its wall
# time, CPU time and peak RSS (of the child process).
measure() {
    python3 - "$@" <<'PY'
import resource, subprocess, sys, time
t0 = time.monotonic()
rc = subprocess.call(sys.argv[1:])
wall = time.monotonic() - t0
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"  [measured] {wall:.2f} s wall, {u.ru_utime + u.ru_stime:.2f} s CPU, "
      f"{u.ru_maxrss / 1024:.0f} MB peak RSS, exit {rc}", file=sys.stderr)
sys.exit(rc)
PY
}

echo "== bench peak"
for b in v2 v3; do measure $bin bench peak --config configs/tpu_${b}_8.json; done
echo "== bench hbm"
for b in v2 v3; do measure $bin bench hbm --config configs/tpu_${b}_8.json | tail -1; done
echo "== bench mxu (PE fidelity)"
measure $bin bench mxu --config configs/tpu_v3_8.json --m 4096 --k 512 --n 512 --fidelity pe |
    tail -2
echo "== bench ici"
measure $bin bench ici --config configs/tpu_v3_8.json --sizes 1KiB 1MiB 256MiB | tail -6
if [[ $quick == 0 ]]; then
    measure $bin bench ici --config configs/tpu_v3_2048.json --sizes 1GiB
fi
echo "== replay"
measure $bin run --config configs/tpu_v3_8.json --trace traces/bert_base_layer_fwd.json -q |
    sed -n '1,2p;$p'
measure $bin run --config configs/tpu_v3_8.json --trace traces/bert_base_train_step.json -q |
    sed -n '1,2p;$p'
echo "== scale"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 scripts/gen_trace.py resnet50 --batch 128 --cores 8 -o "$tmp/resnet50.json" >/dev/null
measure $bin run --config configs/tpu_v3_8.json --trace "$tmp/resnet50.json" -q | sed -n '1,2p;$p'
printf '{"format": "tpusim.trace", "version": 1, "name": "tall", "cores": 1, "ops": [%s]}\n' \
    '{"id": "mm", "kind": "matmul", "m": 2147483648, "k": 1, "n": 1, "dtype": "bf16"}' \
    > "$tmp/tall.json"
measure $bin run --config configs/tpu_v3_8.json --trace "$tmp/tall.json" -q | sed -n '1,2p;$p'
echo "== train (ResNet-50 epoch on v3-8, 1,251 steps of 1,024, exact step reuse)"
measure $bin train --config configs/tpu_v3_8.json --trace "$tmp/resnet50.json" \
    --run examples/resnet50_imagenet.run.json -q | sed -n '1,3p;$p'
if [[ $quick == 0 ]]; then
    echo "== pod (BERT-base step on v3-2048, 2048 cores, SPMD symmetry)"
    python3 scripts/gen_trace.py bert --seq 512 --batch 8 --cores 2048 -o "$tmp/bert2048.json" \
        >/dev/null
    measure $bin run --config configs/tpu_v3_2048.json --trace "$tmp/bert2048.json" -q |
        sed -n '1,3p;$p'
fi
echo "== speed (issue #40's table)"
python3 scripts/bench_speed.py --tpusim "$bin" "${speed[@]}"
