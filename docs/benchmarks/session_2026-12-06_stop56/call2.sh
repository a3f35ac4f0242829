#!/usr/bin/env bash
# Stop 56 call 2 (carry .carry-s56c2: prefill_bench of main 30bd9e2 = the split tail merged + the timer's clock probe):
# why our rows read slower interleaved than sequential (stop 55: llama8b.qkv M = 1024 0.996x -> 0.916x cuBLAS; call 1:
# llama70b.gate_up M = 256 split 2 344.7 -> 414.8 us while cuBLAS moved 358 -> 362). W4A16_TIMER_CLOCK=1 reads the SM
# clock before and after every timed replay (sequential rows and interleaved members); the clock lines are in the logs.
set -u
. scripts/lib/device-env.sh
S=/tmp/s56c2; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-s56c2/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
nvidia-smi dmon -s pc -d 1 > $S/dmon.txt 2>&1 &
dm=$!
for sm in "llama70b.gate_up:256" "llama8b.qkv:1024" "llama8b.gate_up:4096"; do
  W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=${sm%%:*} W4A16_PREFILL_TUNE_MS=${sm##*:} W4A16_PREFILL_TUNE_CONFIGS=20 \
  W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=20 \
    timeout 100 $S/b/prefill_bench $S/ab_${sm%%:*}.csv tune_tma > $S/ab_${sm%%:*}.log 2>&1 || echo "rc=$? $sm" | tee -a $OUT/gpu.txt
  echo "$sm (${SECONDS}s)" | tee -a $OUT/gpu.txt
  grep "^clock" $S/ab_${sm%%:*}.log | tee -a $OUT/gpu.txt
done
kill $dm 2>/dev/null
nvidia-smi -q -d PERFORMANCE | grep -A14 "Clocks Event Reasons" | head -16 | tee -a $OUT/gpu.txt
python3 scripts/prefill-ab/il_table.py $S/ab_*.csv | tee $OUT/ab_table.txt
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
