#!/usr/bin/env bash
# The energy model's physical bounds (scripts/energy_validation.py --check: idle < full load <=
# TDP, parts sum to the total, MXU energy follows the MACs, idle < average <= peak <= full load
# on ResNet-50 and BERT-Large steps) and docs/energy.md's validation table is what the binary
# gives today. Usage: energy_figures.sh path/to/tpusim (from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
python3 scripts/energy_validation.py --tpusim "$bin" --check > "$tmp/now.md" ||
    fatal "energy_validation.py --check: a physical bound failed (above)"
sed -n '/^<!-- energy-figures -->$/,/^<!-- \/energy-figures -->$/p' docs/energy.md | sed '1d;$d' \
    > "$tmp/doc.md"
if ! diff "$tmp/doc.md" "$tmp/now.md"; then
    echo "FAIL docs/energy.md's validation table differs from the binary's; regenerate it with:"
    echo "  python3 scripts/energy_validation.py --tpusim build/tpusim --write"
    exit 1
fi
echo "ok: energy bounds hold and docs/energy.md's table is current ($(($(wc -l < "$tmp/now.md") - 2)) rows)"
