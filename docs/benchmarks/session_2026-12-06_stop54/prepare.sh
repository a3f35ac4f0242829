#!/usr/bin/env bash
# Stop 54 carries (.carry-s54, or the folder given): HEAD's Release sm_90a prefill_bench (call 2 / 3: row-split tails in
# the head's k-loop order; .carry-s54b for call 4: the interleaved rows too).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache} CCACHE_BASEDIR=$PWD
ninja -C build prefill_bench > /dev/null
T=$(mktemp -d); cp build/tests/gpu/prefill/prefill_bench "$T/"; strip "$T"/*
C=${1:-.carry-s54}; mkdir -p $C; XZ_OPT="-9e -T2" tar -cJf $C/b.tar.xz -C "$T" .; rm -rf "$T"; du -sh $C
