#!/usr/bin/env bash
# Session 2026-12-04 stop 35, call 1 (PREPARED, NOT RUN: no device was lent in stop 35). Carry .carry-s35 (bins1.tar.xz:
# base = main 6fd6703, new = branch moe-b8-pairs acf09fb; w4a16_bench_moe + w4a16_test_gpu_moe each, sm_90a, stripped).
# "new": the MoE ring's uint4b8 kernels take the tile-pair variant with two accumulator chains per partial (as uint4 has
# since stop 34: two partials x two chains, one scale entry per tile pair, half the scale copies and FFMAs; GEMM 2's
# entry region padded to 128 bytes; uint4b8 g = 64 moves to the half-tile variant as uint4 g = 64 did). Only the 8
# uint4b8 kGs-1 ring kernels differ from base (SASS checked per kernel here; 240 others identical).
# New's MoE GPU tests first; then whole processes, 3 rounds interleaved, T = 4, 16, 64: fp16 / bf16 uint4b8 (the A/B)
# and uint4 (controls, SASS-identical).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s35c1; mkdir -p $W/out && tar -xJf .carry-s35/bins1.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 200 $W/new/w4a16_test_gpu_moe --gtest_brief=1 > $W/out/test_moe.log 2>&1
echo "moe tests t=$(($(date +%s)-T0))"; grep -E '^\[  (PASSED|FAILED)|FAILED|Failure' $W/out/test_moe.log | head -8
for kind in f16:uint4b8 bf16:uint4b8 f16:uint4 bf16:uint4; do
  act=${kind%%:*} st=${kind#*:}
  bash scripts/moe-ab $W/out/${act}${st} 3 4,16,64 $act $st base=$W/base/w4a16_bench_moe new=$W/new/w4a16_bench_moe \
    > $W/out/ab_${act}${st}.md 2>&1
  echo "== $act $st t=$(($(date +%s)-T0))"; cat $W/out/ab_${act}${st}.md | grep -v "round .* done"
done
tar -czf $OUT/call1.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
