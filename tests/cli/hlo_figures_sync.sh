#!/usr/bin/env bash
# docs/hlo.md's table of today's seed-module figures is what the binary gives
# (scripts/hlo_figures.py). Usage: hlo_figures_sync.sh path/to/tpusim (from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
python3 scripts/hlo_figures.py --tpusim "$bin" > "$tmp/now.md" || fatal "hlo_figures.py failed"
sed -n '/^<!-- hlo-figures -->$/,/^<!-- \/hlo-figures -->$/p' docs/hlo.md | sed '1d;$d' > "$tmp/doc.md"
if ! diff "$tmp/doc.md" "$tmp/now.md"; then
    echo "FAIL docs/hlo.md's seed-module figures differ from the binary's; regenerate them with:"
    echo "  python3 scripts/hlo_figures.py --write"
    exit 1
fi
echo "ok: docs/hlo.md's seed-module figures are current ($(($(wc -l < "$tmp/now.md") - 2)) rows)"
