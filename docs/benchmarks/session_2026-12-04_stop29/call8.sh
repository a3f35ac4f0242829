#!/usr/bin/env bash
# Session 2026-12-04 stop 29, call 8 (main 'decode bulk: 16 consumer warps per block as an option'): 1. the bulk GPU tests
# (now with forced 16-warp plans); 2. five settings on all 10 PERF.md shapes x M = 1, 2, 4, 8 x fp16 / bf16, uint4b8 g128,
# 2 rounds interleaved, every row against f64: default | W4A16_DECODE_BULK_WARPS=16 | W4A16_DECODE_BULK=1 |
# W4A16_DECODE_BULK=1 + WARPS=16 | W4A16_DECODE_BULK=0.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s29c8; mkdir -p $W/bin $W/out && tar -xJf .carry-s29/bins8.tar.xz -C $W/bin
B=$W/bin
timeout 150 $B/w4a16_test_gpu_decode --gtest_filter='Decode.Bulk*' --gtest_brief=1 > $W/out/bulk_test.log 2>&1; echo "bulk test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure" $W/out/bulk_test.log | head -5
ARGS=(--ms 1,2,4,8 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 16)
for r in 1 2; do
  timeout 60 $B/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/def_$r.csv > /dev/null 2>&1; echo "def rc=$?"
  W4A16_DECODE_BULK_WARPS=16 timeout 60 $B/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/w16_$r.csv > /dev/null 2>&1; echo "w16 rc=$?"
  W4A16_DECODE_BULK=1 timeout 60 $B/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/b1_$r.csv > /dev/null 2>&1; echo "b1 rc=$?"
  W4A16_DECODE_BULK=1 W4A16_DECODE_BULK_WARPS=16 timeout 60 $B/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/b1w16_$r.csv > /dev/null 2>&1; echo "b1w16 rc=$?"
  W4A16_DECODE_BULK=0 timeout 60 $B/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/b0_$r.csv > /dev/null 2>&1; echo "b0 rc=$? t=$(($(date +%s)-T0))"
done
python3 bench/gpu/ab_compare.py $W/out/def_1.csv,$W/out/def_2.csv $W/out/w16_1.csv,$W/out/w16_2.csv > $W/out/ab_def_w16.md 2>&1; tail -1 $W/out/ab_def_w16.md
python3 bench/gpu/ab_compare.py $W/out/b1_1.csv,$W/out/b1_2.csv $W/out/b1w16_1.csv,$W/out/b1w16_2.csv > $W/out/ab_b1_w16.md 2>&1; tail -1 $W/out/ab_b1_w16.md
python3 bench/gpu/ab_compare.py $W/out/b0_1.csv,$W/out/b0_2.csv $W/out/b1w16_1.csv,$W/out/b1w16_2.csv > $W/out/ab_b0_b1w16.md 2>&1; tail -1 $W/out/ab_b0_b1w16.md
tar -czf $OUT/call8.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
