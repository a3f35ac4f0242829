#!/usr/bin/env bash
# Builds call1.sh's carry on the build machine (no GPU needed), from the repository root:
#   bash docs/benchmarks/session_2026-12-06_stop50/prepare.sh
# .carry-s50dw: branch decode-wgmma (the decode-sized wgmma tiles, configs 35..43, and MoE blocks 16 / 32 on the grouped
# path): prefill_bench, prefill_gpu_test, w4a16_bench_gpu, w4a16_bench_moe. .carry-s49rs (main's build for parts B / C):
# docs/benchmarks/session_2026-12-05_stop49/prepare.sh. Release, sm_90a, ccache (~4 min cold).
set -euo pipefail
ROOT=$(git rev-parse --show-toplevel)
cd "$ROOT"
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
W=/tmp/s50-dw
rm -rf "$W"; git worktree prune
git worktree add -q --detach "$W" "${REV:-decode-wgmma}"
cmake -S "$W" -B "$W/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DW4A16_CUDA_ARCHS=90a -DW4A16_BUILD_PYTHON=OFF >/dev/null
CCACHE_BASEDIR=$W ninja -C "$W/build" prefill_bench prefill_gpu_test w4a16_bench_gpu w4a16_bench_moe >/dev/null
T=$(mktemp -d)
cp "$W"/build/tests/gpu/prefill/{prefill_bench,prefill_gpu_test} "$W"/build/bench/gpu/w4a16_bench_gpu "$W"/build/bench/moe/w4a16_bench_moe "$T/"
strip "$T"/* && mkdir -p .carry-s50dw && XZ_OPT=-6 tar -cJf .carry-s50dw/b.tar.xz -C "$T" . && rm -rf "$T"
du -sh .carry-s50dw
bash docs/benchmarks/session_2026-12-05_stop49/prepare.sh
