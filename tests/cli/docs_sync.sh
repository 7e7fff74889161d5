#!/usr/bin/env bash
# docs/config.md ends with the key table `tpusim config --keys` prints; a key added to a
# config struct without regenerating the table fails here. Usage: docs_sync.sh path/to/tpusim
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if ! diff <(sed -n '/^<!-- keys -->$/,$p' docs/config.md | tail -n +2) <("$bin" config --keys) >/dev/null; then
    echo "FAIL docs/config.md key table differs from 'tpusim config --keys'; regenerate it with:"
    echo "  { sed '/^<!-- keys -->\$/q' docs/config.md; build/tpusim config --keys; } > /tmp/c.md && mv /tmp/c.md docs/config.md"
    exit 1
fi
echo "ok: docs/config.md key table is current"
