#!/usr/bin/env bash
# Replays the whole-model HLO samples (tests/data/hlo/) on a v2-8 and a v3-8: simulated step
# time, achieved TFLOPS, wall time and peak RSS of each replay. Too slow for the test suite
# (seconds to minutes each); tests/cli/hlo_samples.sh checks their import and lowering.
# Usage: scripts/hlo_replay.sh [MODEL.hlo ...] (default: MobileNetV2 and Llama-3 8B 1x4).
# A model that does not fit a core's HBM (Llama-3 8B 1x4: 45.5 GiB per core) runs on the
# what-if boards configs/tpu_v{2,3}_8_hbm128.json (same chips, 128 GiB of HBM per chip).
set -eu
cd "$(dirname "$0")/.."
bin=${TPUSIM_BIN:-build/tpusim}
models=("$@")
if [ ${#models[@]} -eq 0 ]; then
    models=(tests/data/hlo/xla_repo_models_preopt/mobilenet_v2.hlo
        tests/data/hlo/xla_repo_models_preopt/hlo_llama3_8b_cp_bf16_1x4.hlo)
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for m in "${models[@]}"; do
    boards="configs/tpu_v2_8.json configs/tpu_v3_8.json"
    [[ $m == *llama3_8b* ]] && boards="configs/tpu_v2_8_hbm128.json configs/tpu_v3_8_hbm128.json"
    for cfg in $boards; do
        /usr/bin/time -f "%e %M" -o "$tmp/time" "$bin" run -q --config "$cfg" --hlo "$m" \
            --report "$tmp/r.json" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }
        read -r wall rss <"$tmp/time"
        python3 - "$tmp/r.json" "$m" "$cfg" "$wall" "$rss" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{sys.argv[2].split('/')[-1]:40s} {sys.argv[3].split('/')[-1]:20s} "
      f"{r['seconds'] * 1e3:10.2f} ms  {r['cores']} cores  {r['achieved_bf16_tflops']:7.2f} TFLOPS  "
      f"MXU {r['mxu_utilization'] * 100:5.1f}%  wall {float(sys.argv[4]):6.1f} s  "
      f"{int(sys.argv[5]) / 1024:7.0f} MB")
PY
    done
done
