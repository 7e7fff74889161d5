#!/usr/bin/env bash
# The on-disk HBM calibration cache (docs/hbm.md, "Calibration cache"): a run that reads its
# calibration from the cache reports exactly what a run that measures it reports; the file is
# read (a planted calibration with the same key is used), and a damaged file, a file of
# another key or figures out of range are measured again and replaced; --no-cache and
# TPUSIM_NO_CACHE=1 measure and write nothing. Usage: hbm_cache.sh path/to/tpusim.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export TPUSIM_CACHE_DIR=$tmp/cache
unset TPUSIM_NO_CACHE
cfg=configs/tpu_v3_8.json
trace=traces/gemm.json
run() {  # REPORT [ARGS...]
    local r=$1
    shift
    timeout "$hang" "$bin" run -q --config $cfg --trace $trace --report "$r" "$@" >/dev/null 2>&1
}
same() {  # A B: the reports without their wall-clock figure
    python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
for r in (a, b):
    r.pop("wall_seconds", None)
sys.exit(0 if a == b else 1)
PY
}
check() {  # NAME COMMAND...
    local name=$1
    shift
    if "$@"; then passes=$((passes + 1)); else fail "$name"; fi
}
cal() {  # REPORT: chip 0's calibrated read rate
    python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["stats"]["chip0"]["hbm"]["calibrated_read_bytes_per_cycle"])' "$1"
}

run "$tmp/fresh.json" || fatal "first run failed"
files=("$TPUSIM_CACHE_DIR"/hbm-*.json)
check "one calibration file written" test ${#files[@]} -eq 1 -a -s "${files[0]}"
f=${files[0]}
before=$(stat -c %Y.%s "$f")
run "$tmp/cached.json" || fatal "cached run failed"
check "the cached run reports what the measuring run did" same "$tmp/fresh.json" "$tmp/cached.json"
check "a valid file is read, not rewritten" test "$(stat -c %Y.%s "$f")" = "$before"
run "$tmp/nocache.json" --no-cache || fatal "--no-cache run failed"
check "--no-cache reports the same" same "$tmp/fresh.json" "$tmp/nocache.json"

# The file is what the run uses: a planted calibration with the same key shows in the report.
python3 - "$f" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
j["read_bytes_per_cycle"] = j["read_bytes_per_cycle"] / 2
json.dump(j, open(sys.argv[1], "w"))
PY
want=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["read_bytes_per_cycle"])' "$f")
run "$tmp/planted.json" || fatal "planted run failed"
check "the cached calibration is the one used" test "$(cal "$tmp/planted.json")" = "$want"
run "$tmp/planted_off.json" --no-cache || fatal "--no-cache run failed"
check "--no-cache does not read the cache" same "$tmp/fresh.json" "$tmp/planted_off.json"

# Damaged, another key, a figure out of range: measured again, the file replaced.
for damage in 'open(f, "w").write("{not json")' \
              'j = json.load(open(f)); j["key"] += "x"; json.dump(j, open(f, "w"))' \
              'j = json.load(open(f)); j["copy_bytes_per_cycle"] = -1; json.dump(j, open(f, "w"))' \
              'j = json.load(open(f)); j["version"] = 99; json.dump(j, open(f, "w"))'; do
    python3 -c "import json, sys; f = sys.argv[1]; $damage" "$f"
    run "$tmp/again.json" || fatal "run after damage failed: $damage"
    check "measured again after: $damage" same "$tmp/fresh.json" "$tmp/again.json"
    check "the file replaced after: $damage" python3 -c 'import json, sys
j = json.load(open(sys.argv[1])); sys.exit(0 if j["format"] == "tpusim.hbm_calibration" and j["copy_bytes_per_cycle"] > 0 and j["version"] == 1 else 1)' "$f"
done

# Off: nothing read or written.
rm -rf "$TPUSIM_CACHE_DIR"
TPUSIM_NO_CACHE=1 run "$tmp/off.json" || fatal "TPUSIM_NO_CACHE run failed"
check "TPUSIM_NO_CACHE=1 reports the same" same "$tmp/fresh.json" "$tmp/off.json"
check "TPUSIM_NO_CACHE=1 writes nothing" test ! -e "$TPUSIM_CACHE_DIR"
run "$tmp/nodir.json" --no-cache || fatal "--no-cache run failed"
check "--no-cache writes nothing" test ! -e "$TPUSIM_CACHE_DIR"
# An unwritable directory only costs the time.
mkdir -p "$tmp/ro" && chmod 555 "$tmp/ro"
TPUSIM_CACHE_DIR=$tmp/ro/cache run "$tmp/ro.json" || fail "a run with an unwritable cache failed"
check "an unwritable cache directory changes nothing" same "$tmp/fresh.json" "$tmp/ro.json"
finish
