#!/usr/bin/env bash
# Session 2026-12-04 stop 30, call 1: x staged in chunks along K in the bulk decode kernel (each chunk on its own mbarrier,
# the consumers start at the first chunk). 1. every decode GPU test (also the first run of stop 29's decode.cu split);
# 2. A/B, 10 PERF.md shapes x M = 1, 2, 3, 4, 6, 8, 12, 16 x fp16 / bf16 (uint4b8 g128), 2 rounds interleaved: the bulk
# kernel forced (W4A16_DECODE_BULK=1) in main's build (old_bulk) and in this one (new_bulk), and the streaming / small
# kernels (W4A16_DECODE_BULK=0, new_off); 3. every forced bulk plan on 8 shapes x M = 1, 2, 4, 8, 12, 16 (the cost model's data).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s30c1; mkdir -p $W/out .gpu/bin && tar -xJf .carry-s30/bins1.tar.xz -C .gpu/bin
B=.gpu/bin
timeout 200 $B/w4a16_test_gpu_decode --gtest_brief=1 > $W/out/decode_test.log 2>&1; echo "decode test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure" $W/out/decode_test.log | head
ARGS=(--ms 1,2,3,4,6,8,12,16 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 16)
for r in 1 2; do
  W4A16_DECODE_BULK=1 timeout 90 $B/w4a16_bench_gpu_old "${ARGS[@]}" --csv $W/out/old_bulk_$r.csv > /dev/null 2>&1; echo "old_bulk r$r rc=$?"
  W4A16_DECODE_BULK=1 timeout 90 $B/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/new_bulk_$r.csv > /dev/null 2>&1; echo "new_bulk r$r rc=$?"
  W4A16_DECODE_BULK=0 timeout 90 $B/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/new_off_$r.csv > /dev/null 2>&1; echo "new_off r$r rc=$? t=$(($(date +%s)-T0))"
done
python3 bench/gpu/ab_compare.py $W/out/old_bulk_1.csv,$W/out/old_bulk_2.csv $W/out/new_bulk_1.csv,$W/out/new_bulk_2.csv > $W/out/ab_chunks.md 2>&1; tail -1 $W/out/ab_chunks.md
python3 bench/gpu/ab_compare.py $W/out/new_off_1.csv,$W/out/new_off_2.csv $W/out/new_bulk_1.csv,$W/out/new_bulk_2.csv > $W/out/ab_bulk_vs_off.md 2>&1; tail -1 $W/out/ab_bulk_vs_off.md
W4A16_SWEEP_MS=1,2,4,8,12,16 OUT=$W/out timeout 200 bash scripts/decode-bulk-sweep > $W/out/sweep.log 2>&1; echo "sweep rc=$? t=$(($(date +%s)-T0))"
tar -czf $OUT/call1.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
