#!/usr/bin/env bash
# Call 3's carry .carry-s53c3: HEAD's Release sm_90a prefill_bench (prefill SASS identical to stop 52's final build).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache} CCACHE_BASEDIR=$PWD
ninja -C build prefill_bench > /dev/null
T=$(mktemp -d); cp build/tests/gpu/prefill/prefill_bench "$T/"; strip "$T"/*
mkdir -p .carry-s53c3; XZ_OPT="-9e -T2" tar -cJf .carry-s53c3/b.tar.xz -C "$T" .; rm -rf "$T"; du -sh .carry-s53c3
