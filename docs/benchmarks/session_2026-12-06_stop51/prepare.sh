#!/usr/bin/env bash
# Builds call1.sh's carries on the build machine (no GPU needed), from the repository root:
#   bash docs/benchmarks/session_2026-12-06_stop51/prepare.sh
# .carry-s51m: main (HEAD) prefill_gpu_test, prefill_bench, w4a16_bench_gpu; .carry-s51moe: branch moe-small-grouped
# (MoE blocks 16 / 32 on the grouped wgmma path) w4a16_bench_moe, w4a16_test_gpu_moe. Release, sm_90a, ccache.
set -euo pipefail
ROOT=$(git rev-parse --show-toplevel)
cd "$ROOT"
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
pack() {  # pack <carry dir> <binaries...>
  local dst=$1 t; shift
  t=$(mktemp -d); cp "$@" "$t/"; strip "$t"/*
  mkdir -p "$dst"; XZ_OPT=-6 tar -cJf "$dst/b.tar.xz" -C "$t" .; rm -rf "$t"; du -sh "$dst"
}
build() {  # build <worktree> <targets...>
  local w=$1; shift
  cmake -S "$w" -B "$w/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DW4A16_CUDA_ARCHS=90a -DW4A16_BUILD_PYTHON=OFF >/dev/null
  CCACHE_BASEDIR=$w ninja -C "$w/build" "$@" >/dev/null
}
W=/tmp/s51-main; rm -rf "$W"; git worktree prune; git worktree add -q --detach "$W" "${REV:-HEAD}"
build "$W" prefill_gpu_test prefill_bench w4a16_bench_gpu
pack .carry-s51m "$W"/build/tests/gpu/prefill/{prefill_gpu_test,prefill_bench} "$W"/build/bench/gpu/w4a16_bench_gpu
W=/tmp/s51-moe; rm -rf "$W"; git worktree prune; git worktree add -q --detach "$W" "${MOE_REV:-moe-small-grouped}"
build "$W" w4a16_bench_moe w4a16_test_gpu_moe
pack .carry-s51moe "$W"/build/bench/moe/w4a16_bench_moe "$W"/build/tests/gpu/moe/w4a16_test_gpu_moe
