#!/usr/bin/env bash
# Session 2026-12-04 stop 28, call 9: the gather one warp per row, the reduce 8 columns per thread (16-byte loads and
# stores, the same sums). 1. MoE GPU tests; 2. w4a16_bench_moe new / old (call 8's binary) / new at T = 256, 1024, 4096.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s28; mkdir -p $W
tar -xJf .carry-s28/bins9.tar.xz -C $W
timeout 200 $W/new/w4a16_test_gpu_moe --gtest_brief=1 > $OUT/call9_moe_test.log 2>&1; echo "moe test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure|Expected|Which is|exception" $OUT/call9_moe_test.log | head -20
for r in new_r1 old new_r2; do
  b=${r%_r*}
  timeout 100 $W/$b/w4a16_bench_moe $OUT/call9_$r.csv 256,1024,4096 > /dev/null 2>&1; echo "$r rc=$?"
done
for f in call9_new_r1 call9_old call9_new_r2; do echo "== $f"; grep -E "chosen|_only" $OUT/$f.csv; done
gzip -9 $OUT/call9_moe_test.log
echo "total $(($(date +%s)-T0)) s"
