#!/usr/bin/env bash
# Stop 59 call 6 (carry .carry-n59 = prefill_bench + prefill_gpu_test of branch prefill-next-info, stripped): thread 0
# decodes the persistent loop's next item early in the k loop into shared memory (KernelParams::next_info), so that
# the item boundary only reads it (call 5b's trace: 0.74 us from an item's end to the next item's loads issued).
#  A. the persistent tests (the loop's tiles against the split plan's, bitwise);
#  B. the M >= 1024 rows, the default (on) and W4A16_PREFILL_NEXT_INFO=0 as members of one interleaved run, cuBLAS fp16
#     beside, 11 rounds, 2 processes.
set -u
. scripts/lib/device-env.sh
S=/tmp/s59c6; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-n59/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
timeout 100 $S/b/prefill_gpu_test --gtest_brief=1 --gtest_filter='*Persistent*:*RowSplit*' > $S/persist.log 2>&1
echo "persistent / row split tests: rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $S/persist.log | tr '\n' ' ')" | tee -a $OUT/gpu.txt
for r in 1 2; do
  W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up \
    W4A16_PREFILL_TUNE_MS=1024,4096 W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=11 \
    W4A16_PREFILL_INTERLEAVE_ENV=W4A16_PREFILL_NEXT_INFO=0 \
    timeout 150 $S/b/prefill_bench $S/large_r$r.csv tune_tma > $S/large_r$r.log 2>&1 || echo "rc=$? round $r" | tee -a $OUT/gpu.txt
  echo "round $r (${SECONDS}s)" | tee -a $OUT/gpu.txt
done
python3 scripts/prefill-ab/il_table.py $S/large_r*.csv | tee $OUT/table.txt
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
