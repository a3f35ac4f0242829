#!/usr/bin/env bash
# Session 2026-12-04 stop 30, call 10: the streaming decode kernel's weight rings on a 128-byte boundary past x (m rows of
# x_row_bytes end off one for m not a multiple of 4 when x streams: is that why 5..7 tokens ran slower than 8 in call 8?).
# 1. the streaming kernel's decode GPU tests; 2. W4A16_DECODE_BULK=0 (the streaming / small kernels everywhere), 5 layers x
# M = 1..8 x fp16 (uint4b8 g128), 2 rounds: main's build (old) against this one.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s30c10; mkdir -p $W/out .gpu/bin && tar -xJf .carry-s30/bins10.tar.xz -C .gpu/bin
B=.gpu/bin
timeout 120 $B/w4a16_test_gpu_decode --gtest_brief=1 --gtest_filter='Decode.*:-Decode.Bulk*:Decode.Small*' > $W/out/decode_test.log 2>&1; echo "decode test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure" $W/out/decode_test.log | head
ARGS=(--shapes llama8b.qkv,llama8b.o,llama8b.gate_up,llama8b.down,8192x8192 --ms 1,2,3,4,5,6,7,8 --dtypes f16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 16)
for r in 1 2; do
  W4A16_DECODE_BULK=0 timeout 60 $B/w4a16_bench_gpu_old "${ARGS[@]}" --csv $W/out/old_$r.csv > /dev/null 2>&1; echo "old r$r rc=$?"
  W4A16_DECODE_BULK=0 timeout 60 $B/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/new_$r.csv > /dev/null 2>&1; echo "new r$r rc=$? t=$(($(date +%s)-T0))"
done
python3 bench/gpu/ab_compare.py $W/out/old_1.csv,$W/out/old_2.csv $W/out/new_1.csv,$W/out/new_2.csv > $W/out/ab.md 2>&1; tail -1 $W/out/ab.md
tar -czf $OUT/call10.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
