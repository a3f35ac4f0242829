#!/usr/bin/env bash
# Session 2026-12-04 stop 28, call 12 (main 173dca8, the final code): MoE GPU tests and the standing, w4a16_bench_moe at
# T = 1, 4, 16, 64, 256, 1024, 2048, 4096.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s28; mkdir -p $W
tar -xJf .carry-s28/bins12.tar.xz -C $W
timeout 200 $W/new/w4a16_test_gpu_moe --gtest_brief=1 > $OUT/call12_moe_test.log 2>&1; echo "moe test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure|Expected|Which is|exception" $OUT/call12_moe_test.log | head -20
timeout 200 $W/new/w4a16_bench_moe $OUT/call12_moe.csv 1,4,16,64,256,1024,2048,4096 > $OUT/call12_moe.log 2>&1; echo "bench rc=$?"
grep -E "chosen|_only" $OUT/call12_moe.csv
gzip -9 $OUT/call12_moe_test.log
echo "total $(($(date +%s)-T0)) s"
