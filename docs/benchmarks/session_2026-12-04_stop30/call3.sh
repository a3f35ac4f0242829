#!/usr/bin/env bash
# Session 2026-12-04 stop 30, call 3: x chunks of the bulk decode kernel as cp.async groups (every consumer thread's copies,
# one commit per chunk; the first item waits for chunk c with wait_group + the consumers' barrier at its first step), no
# mbarrier. 1. the bulk, odd-shape and every-configuration decode GPU tests; 2. A/B, 10 PERF.md shapes x M = 1, 2, 3, 4, 6,
# 8, 12, 16 x fp16 / bf16 (uint4b8 g128), 2 rounds interleaved: the bulk kernel forced (W4A16_DECODE_BULK=1) in main's build
# (old) and in this one with 8 (g8, the default), 4 (g4) and 1 (g1: x whole) chunks; the streaming / small kernels (off).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s30c3; mkdir -p $W/out .gpu/bin && tar -xJf .carry-s30/bins3.tar.xz -C .gpu/bin
B=.gpu/bin
timeout 150 $B/w4a16_test_gpu_decode --gtest_brief=1 --gtest_filter='Decode.Bulk*:Decode.OddShapes*:Decode.EveryConfiguration*' > $W/out/decode_test.log 2>&1; echo "decode test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure" $W/out/decode_test.log | head
ARGS=(--ms 1,2,3,4,6,8,12,16 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 16)
for r in 1 2; do
  W4A16_DECODE_BULK=1 timeout 90 $B/w4a16_bench_gpu_old "${ARGS[@]}" --csv $W/out/old_$r.csv > /dev/null 2>&1; echo "old r$r rc=$?"
  for g in 8 4 1; do
    W4A16_DECODE_BULK=1 W4A16_DECODE_BULK_XCHUNKS=$g timeout 90 $B/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/g${g}_$r.csv > /dev/null 2>&1; echo "g$g r$r rc=$?"
  done
  W4A16_DECODE_BULK=0 timeout 90 $B/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/off_$r.csv > /dev/null 2>&1; echo "off r$r rc=$? t=$(($(date +%s)-T0))"
done
for v in g8 g4 g1 off; do
  python3 bench/gpu/ab_compare.py $W/out/old_1.csv,$W/out/old_2.csv $W/out/${v}_1.csv,$W/out/${v}_2.csv > $W/out/ab_$v.md 2>&1; echo "$v: $(tail -1 $W/out/ab_$v.md)"
done
tar -czf $OUT/call3.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
