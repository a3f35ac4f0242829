#!/usr/bin/env bash
# Session 2026-12-04 stop 30, call 2: x chunks of the bulk decode kernel by cp.async.bulk (one per token row and chunk, from
# the lanes of consumer warp 0, one expect-tx arrival per chunk) instead of call 1's per-thread cp.async + 256 arrivals per
# chunk. 1. the bulk and odd-shape decode GPU tests; 2. A/B, 10 PERF.md shapes x M = 1, 2, 3, 4, 6, 8, 12, 16 x fp16 / bf16
# (uint4b8 g128), the bulk kernel forced (W4A16_DECODE_BULK=1), 2 rounds interleaved: main's build (old), this one with 8
# chunks (x8, the default) and with 1 (x1: x whole, by bulk copies).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s30c2; mkdir -p $W/out .gpu/bin && tar -xJf .carry-s30/bins2.tar.xz -C .gpu/bin
B=.gpu/bin
timeout 150 $B/w4a16_test_gpu_decode --gtest_brief=1 --gtest_filter='Decode.Bulk*:Decode.OddShapes*:Decode.EveryConfiguration*' > $W/out/decode_test.log 2>&1; echo "decode test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure" $W/out/decode_test.log | head
ARGS=(--ms 1,2,3,4,6,8,12,16 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 16)
for r in 1 2; do
  W4A16_DECODE_BULK=1 timeout 90 $B/w4a16_bench_gpu_old "${ARGS[@]}" --csv $W/out/old_$r.csv > /dev/null 2>&1; echo "old r$r rc=$?"
  W4A16_DECODE_BULK=1 timeout 90 $B/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/x8_$r.csv > /dev/null 2>&1; echo "x8 r$r rc=$?"
  W4A16_DECODE_BULK=1 W4A16_DECODE_BULK_XCHUNKS=1 timeout 90 $B/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/x1_$r.csv > /dev/null 2>&1; echo "x1 r$r rc=$? t=$(($(date +%s)-T0))"
done
for v in x8 x1; do
  python3 bench/gpu/ab_compare.py $W/out/old_1.csv,$W/out/old_2.csv $W/out/${v}_1.csv,$W/out/${v}_2.csv > $W/out/ab_$v.md 2>&1; echo "$v: $(tail -1 $W/out/ab_$v.md)"
done
tar -czf $OUT/call2.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
