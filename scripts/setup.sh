#!/usr/bin/env bash
# Installs the Debian packages tpusim needs, only those that are missing. Idempotent and quiet
# when everything is there; runs `apt-get update` only when something has to be installed.
# Works as root, or through sudo when it is available.
set -euo pipefail

# clang and libclang-rt-14-dev: the libFuzzer harnesses (scripts/fuzz.sh, docs/fuzzing.md);
# chromium: the HTML report's test in a headless browser (tests/cli/html_report.sh).
PACKAGES=(cmake ninja-build g++ pkg-config libsystemc-dev libfmt-dev nlohmann-json3-dev
          catch2 libcli11-dev libsqlite3-dev python3 python3-matplotlib clang libclang-rt-14-dev
          chromium)

missing=()
for p in "${PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [[ "$status" == "installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -eq 0 ]]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
else
    echo "setup: missing packages: ${missing[*]}; run as root or install sudo" >&2
    exit 1
fi

echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
