#!/usr/bin/env bash
# Prepared for the next session (carry .carry-b60 = prefill_bench + prefill_gpu_test of branch prefill-epi-bias
# = main dd64835 + the stmatrix epilogue's bias added to acc in place behind one branch, stripped; never run on a
# GPU): its SASS (config 20, f16 uint4b8, one group) drops the 256 FSEL a thread that the per-accumulator bias test cost
# on every bias-free epilogue (7425 -> 7169 instructions); the same float operations, so the same bits. Merge it once
# A passes; B says what it is worth (the default plan in the branch's process against cuBLAS fp16, to compare with
# the same rows of next_call1.sh / call 6, which are other processes: only a gain above ~1% would show).
#  A. the whole prefill_gpu_test (every accepted configuration, bias included, against the f64 reference; the
#     persistent tests bitwise against the split plan);
#  B. (if A passes) the M >= 1024 rows, 11 rounds, one process.
set -u
. scripts/lib/device-env.sh
S=/tmp/s60c4; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-b60/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
timeout 240 $S/b/prefill_gpu_test --gtest_brief=1 > $S/test.log 2>&1; rc=$?
echo "prefill_gpu_test rc=$rc: $(grep -E '^\[  (PASSED|FAILED) ' $S/test.log | tr '\n' ' ')" | tee -a $OUT/gpu.txt
grep -h "Failure" -A6 $S/test.log | head -20 | tee -a $OUT/gpu.txt
if [ $rc -eq 0 ]; then
  W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up \
    W4A16_PREFILL_TUNE_MS=1024,4096 W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=11 \
    timeout 150 $S/b/prefill_bench $S/large.csv tune_tma > $S/large.log 2>&1 || echo "rc=$? large" | tee -a $OUT/gpu.txt
  python3 scripts/prefill-ab/il_table.py $S/large.csv | tee $OUT/table.txt
fi
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
