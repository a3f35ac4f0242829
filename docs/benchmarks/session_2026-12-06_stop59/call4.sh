#!/usr/bin/env bash
# Stop 59 call 4 (carry .carry-p59 = prefill_bench + prefill_gpu_test of branch prefill-next-prefetch, stripped,
# XZ_OPT="-9e -T2"): the persistent loop's L2 prefetch of the next item's first tiles (KernelParams::prefetch_next).
#  A. the whole prefill_gpu_test (the persistent tests compare the loop's tiles with the split plan's, bitwise);
#  B. the M >= 1024 rows of issue 5 (and llama70b.gate_up M = 256, whose row split runs 3 waves persistent) with the
#     prefetch on (default) and off (W4A16_PREFILL_NEXT_PREFETCH=0) as members of one interleaved run, cuBLAS fp16
#     beside, 11 rounds, 2 processes; every int4 member re-checked on a poisoned output after its replays.
set -u
. scripts/lib/device-env.sh
S=/tmp/s59c4; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-p59/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
timeout 200 $S/b/prefill_gpu_test --gtest_brief=1 > $S/prefill_test.log 2>&1
echo "prefill_gpu_test rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' $S/prefill_test.log | tr '\n' ' ')" | tee -a $OUT/gpu.txt
grep -h "Failure" -A6 $S/prefill_test.log | head -20 | tee -a $OUT/gpu.txt
for r in 1 2; do
  W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up \
    W4A16_PREFILL_TUNE_MS=1024,4096 W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=11 \
    W4A16_PREFILL_INTERLEAVE_ENV=W4A16_PREFILL_NEXT_PREFETCH=0 \
    timeout 150 $S/b/prefill_bench $S/large_r$r.csv tune_tma > $S/large_r$r.log 2>&1 || echo "rc=$? round $r" | tee -a $OUT/gpu.txt
  echo "round $r (${SECONDS}s)" | tee -a $OUT/gpu.txt
done
W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=llama70b.gate_up W4A16_PREFILL_TUNE_MS=256 W4A16_PREFILL_TUNE_CONFIGS=20 \
  W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=16 W4A16_PREFILL_INTERLEAVE_ENV=W4A16_PREFILL_NEXT_PREFETCH=0 \
  timeout 60 $S/b/prefill_bench $S/m256.csv tune_tma > $S/m256.log 2>&1 || echo "rc=$? m256" | tee -a $OUT/gpu.txt
python3 scripts/prefill-ab/il_table.py $S/large_r*.csv $S/m256.csv | tee $OUT/table.txt
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
