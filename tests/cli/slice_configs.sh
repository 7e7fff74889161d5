#!/usr/bin/env bash
# Every board and slice config is named by its TensorCore count as Cloud TPU names them
# (tpu_vG_N.json is vG-N: N cores on N/2 chips), and `tpusim info` agrees: the board line
# reads "N/2 chips (X x Y...), N TensorCores" with X * Y = N/2, and the config's name is the
# file's. Also checks that the set of slices of docs/pods.md is complete.
# Usage: slice_configs.sh path/to/tpusim (run from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
expected="tpu_v2_8 tpu_v2_32 tpu_v2_128 tpu_v2_256 tpu_v2_512 tpu_v3_8 tpu_v3_32 tpu_v3_64
tpu_v3_128 tpu_v3_256 tpu_v3_512 tpu_v3_1024 tpu_v3_2048"
for name in $expected; do
    [[ -f configs/$name.json ]] || fatal "configs/$name.json is missing"
done
n=0
for f in configs/tpu_v[0-9]_*.json; do
    name=$(basename "$f" .json)
    [[ $name =~ ^tpu_v([0-9])_([0-9]+)$ ]] || continue  # what-if variants (e.g. _mxu256)
    cores=${BASH_REMATCH[2]}
    out=$("$bin" info --config "$f") || fatal "info --config $f exited with $?"
    line=$(grep -E '^  board ' <<< "$out") || fatal "$f: no board line"
    [[ $line =~ ([0-9]+)\ chips\ \(([0-9]+)\ x\ ([0-9]+).*\),\ ([0-9]+)\ TensorCores ]] ||
        fatal "$f: unexpected board line: $line"
    chips=${BASH_REMATCH[1]} x=${BASH_REMATCH[2]} y=${BASH_REMATCH[3]} got=${BASH_REMATCH[4]}
    [[ $got == "$cores" ]] || fatal "$f: info prints $got TensorCores, the name says $cores"
    [[ $chips == $((cores / 2)) && $((x * y)) == "$chips" ]] ||
        fatal "$f: $chips chips on $x x $y for $cores cores"
    head -1 <<< "$out" | grep -q "^$name: " || fatal "$f: config name is not $name"
    # Notes are for users: no source tags of the developers' documents ([DOC3], [NORn]).
    ! grep -qE '\[[A-Z][A-Za-z0-9]+\]' <<< "$out" || fatal "$f: info prints a source tag: $out"
    n=$((n + 1))
done
[[ $n == 13 ]] || fatal "expected 13 slice configs, found $n"
echo "slice configs ok ($n)"
