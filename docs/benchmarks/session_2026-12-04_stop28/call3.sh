#!/usr/bin/env bash
# Session 2026-12-04 stop 28, call 3: the alignment kernel placing each warp's contiguous slot range without CTA
# barriers (routing.cu), choose_block from call 2. 1. the MoE GPU tests (alignment vs align_cpu bit for bit up to
# E = 4096 and 160k slots, every path); 2. w4a16_bench_moe, new / old (call 2's binary) / new at T = 1024, 4096 and
# new at 256, 512, 2048.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s28; mkdir -p $W
tar -xJf .carry-s28/bins3.tar.xz -C $W
timeout 200 $W/new/w4a16_test_gpu_moe --gtest_brief=1 > $OUT/call3_moe_test.log 2>&1; echo "moe test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure|Expected|Which is" $OUT/call3_moe_test.log | head -20
timeout 100 $W/new/w4a16_bench_moe $OUT/call3_new_r1.csv 1024,4096 > /dev/null 2>&1; echo "new r1 rc=$?"
timeout 100 $W/old/w4a16_bench_moe $OUT/call3_old.csv 1024,4096 > /dev/null 2>&1; echo "old rc=$?"
timeout 100 $W/new/w4a16_bench_moe $OUT/call3_new_r2.csv 1024,4096 > /dev/null 2>&1; echo "new r2 rc=$?"
timeout 150 $W/new/w4a16_bench_moe $OUT/call3_new_more.csv 64,256,512,2048 > /dev/null 2>&1; echo "new more rc=$?"
for f in call3_new_r1 call3_old call3_new_r2 call3_new_more; do echo "== $f"; grep -E "chosen|forced|align_only|mma64" $OUT/$f.csv; done
gzip -9 $OUT/call3_moe_test.log
echo "total $(($(date +%s)-T0)) s"
