#!/usr/bin/env bash
# Stop 56 call 6 (carry .carry-s56c6: prefill_bench of main 13e3f57, with both new measured plans): the two entries against the
# plans they replace (W4A16_PREFILL_TABLE=0 gives the model's plan at these M, which no other entry covers), cuBLAS fp16
# beside, shuffled interleaved, 2 processes: qwen0.5b.qkv M = 200 / 224 (bm32 occ3 s2 cluster), llama70b.gate_up
# M = 200 / 256 (bm256 s1 with the persistent loop's split tail).
set -u
. scripts/lib/device-env.sh
S=/tmp/s56c6; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-s56c6/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
for r in 1 2; do
  for sm in "qwen0.5b.qkv:200,224" "llama70b.gate_up:200,256"; do
    W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=${sm%%:*} W4A16_PREFILL_TUNE_MS=${sm##*:} W4A16_PREFILL_TUNE_CONFIGS=20 \
    W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=24 W4A16_PREFILL_INTERLEAVE_ENV="W4A16_PREFILL_TABLE=0" \
      timeout 100 $S/b/prefill_bench $S/ab_r${r}_${sm%%:*}.csv tune_tma > $S/ab_r${r}_${sm%%:*}.log 2>&1 || echo "rc=$? $sm" | tee -a $OUT/gpu.txt
  done
  echo "round $r (${SECONDS}s)" | tee -a $OUT/gpu.txt
done
grep -h "^cuda_prefill,\|^cublas_f16," $S/ab_r1_*.csv | cut -d, -f1,2,5,9,10 | tee -a $OUT/gpu.txt
python3 scripts/prefill-ab/il_table.py $S/ab_r*.csv | tee $OUT/ab_table.txt
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
