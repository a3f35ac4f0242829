#!/usr/bin/env bash
# Session 2026-12-04 stop 28, call 5: the alignment as three launches over slot ranges (count per range, offsets in
# one CTA, placement one warp per range). 1. MoE GPU tests; 2. w4a16_bench_moe new / old (call 4's binary) / new at
# T = 256, 512, 1024, 4096 (chosen and align_only rows).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s28; mkdir -p $W
tar -xJf .carry-s28/bins5.tar.xz -C $W
timeout 200 $W/new/w4a16_test_gpu_moe --gtest_brief=1 > $OUT/call5_moe_test.log 2>&1; echo "moe test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure|Expected|Which is" $OUT/call5_moe_test.log | head -20
for r in new_r1 old new_r2; do
  b=${r%_r*}
  timeout 100 $W/$b/w4a16_bench_moe $OUT/call5_$r.csv 256,512,1024,4096 > /dev/null 2>&1; echo "$r rc=$?"
done
for f in call5_new_r1 call5_old call5_new_r2; do echo "== $f"; grep -E "chosen|align_only" $OUT/$f.csv; done
gzip -9 $OUT/call5_moe_test.log
echo "total $(($(date +%s)-T0)) s"
