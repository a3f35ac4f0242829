#!/usr/bin/env bash
# Stop 49 call 3: the merged build (main with the row split's measured entries): the row split and token split GPU tests,
# then the default with W4A16_PREFILL_ROW_SPLIT=0 / 1 at the entries' points (llama8b.qkv M = 900 / 1000 / 1024,
# Qwen2.5-7B qkv M = 960 / 1000 / 1024), cuBLAS fp16 in the same process, 2 interleaved rounds. Carry .carry-s49rs
# (prepare.sh on main after the merge builds the same binaries).
. scripts/lib/device-env.sh
W=/tmp/s49c3; rm -rf $W; mkdir -p $W && tar -xJf .carry-s49rs/b.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
$W/prefill_gpu_test --gtest_filter='PrefillGpu.RowSplit*:PrefillGpu.TokenSplit*' 2>&1 | grep -E "row split|OK|FAIL|PASSED" | tee -a $OUT/gpu.txt
for r in 1 2; do for rs in 0 1; do
  W4A16_PREFILL_ROW_SPLIT=$rs W4A16_PREFILL_TUNE_MS=900,1000,1024 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_TUNE_CONFIGS=20 \
  W4A16_PREFILL_TUNE_SHAPES=llama8b.qkv,q7b.qkv:4608:3584 timeout 100 $W/prefill_bench $OUT/c3_rs${rs}_r$r.csv tune_tma > $W/c3.log 2>&1 \
    || tail -3 $W/c3.log
done; done
