#!/usr/bin/env bash
# Session 2026-12-04 stop 28, call 2 (main a8aa9f8 + the align_only bench row): the grouped MoE path with its measured
# defaults (block 128: both GEMMs on the 2-CTA bm128_bn128). 1. compute-sanitizer memcheck of the grouped tests;
# 2. w4a16_bench_moe at T = 512, 1024, 2048, 4096 (the choose_block thresholds: forced 32 / 64 / 128 rows, mma64,
# the alignment alone).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s28; mkdir -p $W
tar -xJf .carry-s28/bins2.tar.xz -C $W
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 $W/new/w4a16_test_gpu_moe --gtest_brief=1 \
  --gtest_filter='MoeGpuGrouped.*:MoeGpuEdge.ActivationsAlignedToFourBytesOnly' > $OUT/call2_memcheck.log 2>&1
echo "memcheck rc=$? t=$(($(date +%s)-T0))"; grep -E "ERROR SUMMARY|PASSED|FAILED|Invalid" $OUT/call2_memcheck.log | head
timeout 300 $W/new/w4a16_bench_moe $OUT/call2_moe.csv 512,1024,2048,4096 > $OUT/call2_moe_bench.log 2>&1; echo "moe bench rc=$? t=$(($(date +%s)-T0))"
cat $OUT/call2_moe.csv
echo "total $(($(date +%s)-T0)) s"
