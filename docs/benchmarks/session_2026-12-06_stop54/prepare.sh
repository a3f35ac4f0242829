#!/usr/bin/env bash
# Stop 54's carry .carry-s54: HEAD's Release sm_90a prefill_bench (row-split tails in the head's k-loop order).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache} CCACHE_BASEDIR=$PWD
ninja -C build prefill_bench > /dev/null
T=$(mktemp -d); cp build/tests/gpu/prefill/prefill_bench "$T/"; strip "$T"/*
mkdir -p .carry-s54; XZ_OPT="-9e -T2" tar -cJf .carry-s54/b.tar.xz -C "$T" .; rm -rf "$T"; du -sh .carry-s54
