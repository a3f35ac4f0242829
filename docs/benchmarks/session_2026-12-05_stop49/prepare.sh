#!/usr/bin/env bash
# Builds the calls' carry on the build machine (no GPU needed), from the repository root:
#   REV=22c41ba bash docs/benchmarks/session_2026-12-05_stop49/prepare.sh   # calls 1-2: the placeholder entry's build
#   bash docs/benchmarks/session_2026-12-05_stop49/prepare.sh               # call 3: HEAD (the measured entries)
# A worktree of REV under /tmp, a Release build for sm_90a with ccache (~3 min). Writes .carry-s49rs (ignored by git):
# the stripped prefill_bench and prefill_gpu_test of that build.
set -euo pipefail
ROOT=$(git rev-parse --show-toplevel)
cd "$ROOT"
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
W=/tmp/s49-rs
rm -rf "$W"; git worktree prune
git worktree add -q --detach "$W" "${REV:-HEAD}"
cmake -S "$W" -B "$W/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DW4A16_CUDA_ARCHS=90a -DW4A16_BUILD_PYTHON=OFF >/dev/null
CCACHE_BASEDIR=$W ninja -C "$W/build" prefill_bench prefill_gpu_test >/dev/null
T=$(mktemp -d) && cp "$W"/build/tests/gpu/prefill/{prefill_bench,prefill_gpu_test} "$T/" && strip "$T"/* \
  && mkdir -p .carry-s49rs && XZ_OPT=-6 tar -cJf .carry-s49rs/b.tar.xz -C "$T" . && rm -rf "$T"
du -sh .carry-s49rs
