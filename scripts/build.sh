#!/usr/bin/env bash
# Configures and builds tpusim (CLI and tests) into build/, warnings as errors, RelWithDebInfo.
#   scripts/build.sh [extra cmake -D options...]
# BUILD_DIR overrides the build directory; TARGETS limits what is built (default: all).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
generator=()
if command -v ninja >/dev/null 2>&1; then
    # An existing Makefile build keeps its generator (CMake refuses to switch).
    if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]] || grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' \
        "$BUILD_DIR/CMakeCache.txt"; then
        generator=(-G Ninja)
    fi
fi

# ccache, when installed, makes a rebuild of unchanged sources (a second clone at the same path,
# a branch switched back) nearly free; the build is the same without it.
# Paths under the source tree are hashed relative to it (CCACHE_BASEDIR) and the working
# directory is left out of the hash, so clones and worktrees at other paths share the cache.
launcher=()
if command -v ccache >/dev/null 2>&1; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(pwd)} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
fi

cmake -S . -B "$BUILD_DIR" "${generator[@]}" -Wno-dev -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTPUSIM_WERROR=ON "${launcher[@]}" "$@" >/dev/null
# shellcheck disable=SC2086
cmake --build "$BUILD_DIR" -j "$JOBS" ${TARGETS:+--target $TARGETS}
