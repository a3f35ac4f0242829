#!/usr/bin/env bash
# Session 2026-12-04 stop 28, call 7: call 6's build with block 128's full pass skipped where no 128-row block can exist
# (rows < 128). 1. MoE GPU tests; 2. w4a16_bench_moe at T = 256, 512, 1024, 2048 (the forced rows: where block 128 with its
# 64-row tails starts to win), two processes.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s28; mkdir -p $W
tar -xJf .carry-s28/bins7.tar.xz -C $W
timeout 200 $W/new/w4a16_test_gpu_moe --gtest_brief=1 > $OUT/call7_moe_test.log 2>&1; echo "moe test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure|Expected|Which is|exception" $OUT/call7_moe_test.log | head -20
for r in r1 r2; do
  timeout 120 $W/new/w4a16_bench_moe $OUT/call7_$r.csv 256,512,1024,2048 > /dev/null 2>&1; echo "$r rc=$?"
done
for f in call7_r1 call7_r2; do echo "== $f"; grep -E "chosen|forced" $OUT/$f.csv | grep -v ",8,forced"; done
gzip -9 $OUT/call7_moe_test.log
echo "total $(($(date +%s)-T0)) s"
