#!/usr/bin/env bash
# Call 2: the 2-CTA bm128_bn128 TMA tile (configs 31 / 32, 4 stages) - correctness (every prefill GPU test, every
# config), then tune_tma of it against the planned tiles' early-issue twins (and bm128_bn128) on the
# Qwen, llama8b.o / qkv and 8192x8192 at M = 64..1024, per reduce mode, cuBLAS fp16 in the same processes.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/bn; mkdir -p $W
tar -xJf .carry-bn256/bins.tar.xz -C $W
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
timeout 150 $W/bin/prefill_gpu_test --gtest_brief=1 > $OUT/call2_prefill_gpu_test.log 2>&1; echo "prefill_gpu_test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED" $OUT/call2_prefill_gpu_test.log | head -20
export W4A16_PREFILL_TUNE_CONFIGS=32,23,22,20,15
export W4A16_PREFILL_TUNE_MS=64,128,256,512,1024
export W4A16_PREFILL_TUNE_SHAPES=qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down,llama8b.qkv,llama8b.o,8192x8192
for mode in cluster kernel; do
  W4A16_PREFILL_SPLIT_REDUCE=$mode timeout 200 $W/bin/prefill_bench $OUT/call2_tune_$mode.csv tune_tma > $W/tune_$mode.log 2>&1
  echo "tune $mode rc=$? t=$(($(date +%s)-T0)) rows=$(wc -l < $OUT/call2_tune_$mode.csv)"
done
tail -3 $W/tune_cluster.log
echo "total $(($(date +%s)-T0)) s"
