#!/usr/bin/env bash
# Session 2026-12-04 stop 30, call 7: call 5's x per stage (W4A16_DECODE_BULK_XSTAGE=1) with each block walking K from its
# own step (blockIdx.x % steps; W4A16_DECODE_BULK_XROT=0 turns it off): are call 5's losses all blocks reading the same
# x lines at once? 1. the bulk GPU tests with XSTAGE=1; 2. the bulk kernel forced, 6 shapes x M = 1, 4, 8, 16 x fp16
# (uint4b8 g128), 2 rounds: main's build (old), x per stage rotated (rot1) and not (rot0).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s30c7; mkdir -p $W/out .gpu/bin && tar -xJf .carry-s30/bins7.tar.xz -C .gpu/bin
B=.gpu/bin
W4A16_DECODE_BULK_XSTAGE=1 timeout 150 $B/w4a16_test_gpu_decode --gtest_brief=1 --gtest_filter='Decode.Bulk*' > $W/out/decode_test_xstage.log 2>&1; echo "decode test xstage rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure" $W/out/decode_test_xstage.log | head
ARGS=(--shapes 8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama70b.gate_up,qwen0.5b.gate_up --ms 1,4,8,16 --dtypes f16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 16)
for r in 1 2; do
  W4A16_DECODE_BULK=1 timeout 90 $B/w4a16_bench_gpu_old "${ARGS[@]}" --csv $W/out/old_$r.csv > /dev/null 2>&1; echo "old r$r rc=$?"
  W4A16_DECODE_BULK=1 W4A16_DECODE_BULK_XSTAGE=1 timeout 90 $B/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/rot1_$r.csv > /dev/null 2>&1; echo "rot1 r$r rc=$?"
  W4A16_DECODE_BULK=1 W4A16_DECODE_BULK_XSTAGE=1 W4A16_DECODE_BULK_XROT=0 timeout 90 $B/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/rot0_$r.csv > /dev/null 2>&1; echo "rot0 r$r rc=$? t=$(($(date +%s)-T0))"
done
for v in rot1 rot0; do
  python3 bench/gpu/ab_compare.py $W/out/old_1.csv,$W/out/old_2.csv $W/out/${v}_1.csv,$W/out/${v}_2.csv > $W/out/ab_$v.md 2>&1; echo "$v: $(tail -1 $W/out/ab_$v.md)"
done
tar -czf $OUT/call7.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
