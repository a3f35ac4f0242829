#!/usr/bin/env bash
# Call 1: the bm64_bn256 TMA tile (configs 31 / 32) - correctness (every prefill GPU test, every
# config), then tune_tma of it against the planned tiles' early-issue twins (and bm128_bn128) on the
# large shapes at M = 32..256, per reduce mode, cuBLAS fp16 in the same processes.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/bn; mkdir -p $W
tar -xJf .carry-bn256/bins.tar.xz -C $W
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
timeout 150 $W/bin/prefill_gpu_test --gtest_brief=1 > $OUT/call1_prefill_gpu_test.log 2>&1; echo "prefill_gpu_test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED" $OUT/call1_prefill_gpu_test.log | head -20
export W4A16_PREFILL_TUNE_CONFIGS=32,23,22,20,15
export W4A16_PREFILL_TUNE_MS=32,64,128,256
export W4A16_PREFILL_TUNE_SHAPES=8192x8192,llama8b.gate_up,llama8b.down,llama70b.gate_up,llama8b.qkv,llama8b.o
for mode in cluster kernel; do
  W4A16_PREFILL_SPLIT_REDUCE=$mode timeout 170 $W/bin/prefill_bench $OUT/call1_tune_$mode.csv tune_tma > $W/tune_$mode.log 2>&1
  echo "tune $mode rc=$? t=$(($(date +%s)-T0)) rows=$(wc -l < $OUT/call1_tune_$mode.csv)"
done
tail -3 $W/tune_cluster.log
echo "total $(($(date +%s)-T0)) s"
