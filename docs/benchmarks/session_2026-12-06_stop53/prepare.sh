#!/usr/bin/env bash
# Builds call 2's carries: the default build (build/, W4A16_PREFILL_U4_EARLY unset = 0: HEAD's prefill SASS) and two
# experiment builds (build-e1 / build-e2: -DW4A16_DIAG_PREFILL=W4A16_PREFILL_U4_EARLY=1 / 2), each stripped, xz -9e.
#   bash docs/benchmarks/session_2026-12-06_stop53/prepare.sh
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache} CCACHE_BASEDIR=$PWD
pack() {  # pack <build dir> <carry dir> <targets...>
  local b=$1 c=$2; shift 2; local T; T=$(mktemp -d)
  for t in "$@"; do cp $(find $b/bench $b/tests -name "$t" -type f -perm -u+x | head -1) "$T/"; done
  strip "$T"/*; mkdir -p "$c"; XZ_OPT="-9e -T2" tar -cJf "$c/b.tar.xz" -C "$T" .; rm -rf "$T"; du -sh "$c"
}
for e in 1 2; do
  [ -f build-e$e/build.ninja ] || cmake -S . -B build-e$e -G Ninja -DCMAKE_BUILD_TYPE=Release -DW4A16_CUDA_ARCHS=90a \
    -DW4A16_DIAG_PREFILL="W4A16_PREFILL_U4_EARLY=$e" > /dev/null
done
ninja -C build w4a16_bench_gpu w4a16_bench_moe > /dev/null
pack build .carry-s53base w4a16_bench_gpu w4a16_bench_moe
for e in 1 2; do
  ninja -C build-e$e prefill_gpu_test w4a16_test_gpu_moe w4a16_bench_gpu w4a16_bench_moe > /dev/null
  pack build-e$e .carry-s53e$e prefill_gpu_test w4a16_test_gpu_moe w4a16_bench_gpu w4a16_bench_moe
done
