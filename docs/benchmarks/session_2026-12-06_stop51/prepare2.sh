#!/usr/bin/env bash
# Builds call2.sh's carry from HEAD's Release sm_90a build (scripts/pack-gpu's binaries less those the call does not run,
# under the 64 MiB carry limit): bash docs/benchmarks/session_2026-12-06_stop51/prepare2.sh
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache} CCACHE_BASEDIR=$PWD
ninja -C build prefill_gpu_test prefill_bench w4a16_test_gpu_registry w4a16_test_gpu_decode w4a16_test_gpu_moe w4a16_bench_gpu w4a16_bench_moe >/dev/null
T=$(mktemp -d)
cp build/tests/gpu/prefill/{prefill_gpu_test,prefill_bench} build/tests/gpu/registry/w4a16_test_gpu_registry build/tests/gpu/decode/w4a16_test_gpu_decode \
  build/tests/gpu/moe/w4a16_test_gpu_moe build/bench/gpu/w4a16_bench_gpu build/bench/moe/w4a16_bench_moe "$T/"
strip "$T"/*; C=${CARRY:-.carry-s51c2}; mkdir -p "$C"; XZ_OPT=-6 tar -cJf "$C/b.tar.xz" -C "$T" .; rm -rf "$T"; du -sh "$C"
