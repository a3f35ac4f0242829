#!/usr/bin/env bash
# Call 4's carries: .carry-s53c4 = this commit's Release sm_90a prefill / MoE GPU tests and benchmarks (the 64-row x
# 16-token tile's one-group kernels with the scale in the fp32 accumulators), .carry-s53c4b = the same with the 128-row
# tile too (build-e1: -DW4A16_DIAG_PREFILL=W4A16_PREFILL_SIA_MB2=1). The base is .carry-s53base (prepare.sh).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache} CCACHE_BASEDIR=$PWD
[ -f build-e1/build.ninja ] || cmake -S . -B build-e1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DW4A16_CUDA_ARCHS=90a > /dev/null
cmake -S . -B build-e1 -DW4A16_DIAG_PREFILL="W4A16_PREFILL_SIA_MB2=1" > /dev/null
for b in build:.carry-s53c4 build-e1:.carry-s53c4b; do
  d=${b%%:*} c=${b#*:}
  ninja -C $d prefill_gpu_test w4a16_test_gpu_moe w4a16_bench_gpu w4a16_bench_moe > /dev/null
  T=$(mktemp -d)
  cp $d/tests/gpu/prefill/prefill_gpu_test $d/tests/gpu/moe/w4a16_test_gpu_moe $d/bench/gpu/w4a16_bench_gpu $d/bench/moe/w4a16_bench_moe "$T/"
  strip "$T"/*; mkdir -p $c; XZ_OPT="-9e -T2" tar -cJf $c/b.tar.xz -C "$T" .; rm -rf "$T"; du -sh $c
done
