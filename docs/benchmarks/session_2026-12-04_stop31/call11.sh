#!/usr/bin/env bash
# Session 2026-12-04 stop 31, call 11 (main with the bulk kernel at 7..8 tokens on layers < 8 MB where x <= 20 KB):
# every decode GPU test; main against call 10's build (both defaults) on the Qwen2.5-0.5B layers at M = 5..10, fp16 / bf16
# x uint4b8 / uint4 (g128), 3 interleaved rounds.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s31c11; mkdir -p $W/out $W/bin && tar -xJf .carry-s31/bins11.tar.xz -C $W/bin
timeout 150 $W/bin/new/w4a16_test_gpu_decode --gtest_brief=1 > $W/out/decode_test.log 2>&1; echo "decode test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED" $W/out/decode_test.log | head -4
ARGS=(--shapes qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down --ms 5,6,7,8,9,10 --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16)
for r in 1 2 3; do
  timeout 60 $W/bin/old/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/old_$r.csv > /dev/null 2>&1; echo "old r$r rc=$?"
  timeout 60 $W/bin/new/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/new_$r.csv > /dev/null 2>&1; echo "new r$r rc=$? t=$(($(date +%s)-T0))"
done
python3 bench/gpu/ab_compare.py $W/out/old_1.csv,$W/out/old_2.csv,$W/out/old_3.csv $W/out/new_1.csv,$W/out/new_2.csv,$W/out/new_3.csv > $W/out/ab.md 2>&1
grep -E "\| (7|8) \||rows;" $W/out/ab.md
tar -czf $OUT/call11.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
