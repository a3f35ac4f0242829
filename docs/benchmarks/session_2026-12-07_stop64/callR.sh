#!/usr/bin/env bash
# Stop 64 call R (carry .carry-l64 = this stop's prefill_bench and prefill_gpu_test with the qwen0.5b.qkv M = 225..256
# entry, stripped, xz). Any card: the plan / cluster tests, the plan the device takes at M = 224 / 232 / 256 and the
# entry's A/B (the default plan against cuBLAS fp16 and the model's old pick bm64 s3, 11 rounds). On an H200, then stop
# 63's call N with this build (the tile-39 A/B, issue 5's rows, the M = 128 / 192 tune).
set -u
. scripts/lib/device-env.sh
S=/tmp/s64r; rm -rf $S; mkdir -p $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu_r.txt
tar -xJf .carry-l64/b.tar.xz -C $S/b
timeout 60 $S/b/prefill_gpu_test --gtest_filter='PrefillGpu.PlanCoversPerfShapes:PrefillGpu.SixteenTokenEntries*:PrefillGpu.ClusterSplitReduce*' \
  > $OUT/tests.txt 2>&1; echo "tests rc=$? (${SECONDS}s)" | tee -a $OUT/gpu_r.txt; grep -E "^\[  (PASSED|FAILED)|OK \]|FAILED \]" $OUT/tests.txt
W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=qwen0.5b.qkv W4A16_PREFILL_TUNE_MS=224,232,256 W4A16_PREFILL_TUNE_CONFIGS=23 \
  W4A16_PREFILL_TUNE_SPLITS=3 W4A16_PREFILL_INTERLEAVE=11 timeout 60 $S/b/prefill_bench $OUT/entry.csv tune_tma > $OUT/entry.log 2>&1
echo "entry rc=$? (${SECONDS}s)" | tee -a $OUT/gpu_r.txt
grep "^cuda_prefill_il" $OUT/entry.csv | cut -d, -f2,5,9,10
python3 scripts/prefill-ab/il_table.py $OUT/entry.csv | tee $OUT/il_entry.txt
grep -q H200 $OUT/gpu_r.txt && CARRY=.carry-l64 bash docs/benchmarks/session_2026-12-06_stop63/callN.sh
exit 0
