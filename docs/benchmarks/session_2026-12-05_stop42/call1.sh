#!/usr/bin/env bash
# Stop 42, call 1: branch decode-imma (eaac333 + the 16-values-a-lane x staging) (the bulk kernel's integer math at 1..8 tokens, decode_imma.cuh), sm_90a
# binaries in .carry-s42/c1.tar.xz. Its decode and registry GPU tests; then 3 interleaved rounds of whole processes:
# W4A16_DECODE_IMMA=0 (the fp16 / bf16 mma path, what main runs) against =1 (the integer math) at the default plans, and
# the bulk kernel forced (W4A16_DECODE_BULK=1) with the integer math, on 8 PERF.md layers x M = 1, 2, 3, 4, 6, 8 x fp16 /
# bf16 uint4b8 g = 128, every row against f64.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s42c1; mkdir -p $W $OUT && tar -xJf .carry-s42/c1.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 240 $W/c1/w4a16_test_gpu_decode --gtest_brief=1 > $OUT/test_decode.log 2>&1 &
timeout 240 $W/c1/w4a16_test_gpu_registry --gtest_brief=1 > $OUT/test_registry.log 2>&1 &
wait
for t in decode registry; do echo "$t tests t=$(($(date +%s)-T0))"; grep -E '^\[  (PASSED|FAILED)|FAILED|Failure|SKIPPED|Expected|Which is|actual|token' $OUT/test_$t.log | head -24; done
SH=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up,qwen0.5b.gate_up,qwen0.5b.down
for r in 1 2 3; do
  for v in off on bulk; do
    env=(W4A16_DECODE_IMMA=1); [ $v = off ] && env=(W4A16_DECODE_IMMA=0); [ $v = bulk ] && env=(W4A16_DECODE_IMMA=1 W4A16_DECODE_BULK=1)
    env "${env[@]}" timeout 150 $W/c1/w4a16_bench_gpu --shapes $SH --ms 1,2,3,4,6,8 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --no-cublas \
      --decode-max-m 8 --csv $OUT/ab_${v}_$r.csv > $OUT/ab_${v}_$r.log 2>&1 || echo "$v round $r rc=$?"
    echo "round $r $v t=$(($(date +%s)-T0))"
  done
done
python3 bench/gpu/ab_compare.py $OUT/ab_off_1.csv,$OUT/ab_off_2.csv,$OUT/ab_off_3.csv $OUT/ab_on_1.csv,$OUT/ab_on_2.csv,$OUT/ab_on_3.csv > $OUT/ab_on.md 2>&1
python3 bench/gpu/ab_compare.py $OUT/ab_off_1.csv,$OUT/ab_off_2.csv,$OUT/ab_off_3.csv $OUT/ab_bulk_1.csv,$OUT/ab_bulk_2.csv,$OUT/ab_bulk_3.csv > $OUT/ab_bulk.md 2>&1
for f in on bulk; do
  echo "== off -> $f: $(grep -E 'rows;' $OUT/ab_$f.md); rows not ok: $(grep -c '| NO |' $OUT/ab_$f.md)"
  grep "cuda_decode" $OUT/ab_$f.md | awk -F'|' '{printf "%-17s %-9s M=%-2s %8s %8s %s\n", $3, $4, $7, $8, $9, $10}'
done
echo "done t=$(($(date +%s)-T0))"
