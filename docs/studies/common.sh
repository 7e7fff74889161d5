# Sourced by docs/studies/*/run.sh: runs the study's spec.json into a temporary database,
# exports results.csv beside the spec, and gives `plot` (scripts/plot.py, SVG only).
# TPUSIM names the binary (default build/tpusim), PYTHON the interpreter with matplotlib,
# JOBS the worker count (default: the machine's cores); PLOT_FORMATS=svg,png for a PNG preview.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
bin=${TPUSIM:-$root/build/tpusim}
py=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
db=$work/study.sqlite
"$bin" sweep "$here/spec.json" --db "$db" -j "${JOBS:-$(nproc)}" --quiet
"$bin" sweep --db "$db" --csv "$here/results.csv"
plot() {  # plot KIND ARGS... -o NAME  (NAME relative to the study's folder)
    local kind=$1
    shift
    (cd "$here" && "$py" "$root/scripts/plot.py" "$kind" "$db" --formats "${PLOT_FORMATS:-svg}" "$@")
}
