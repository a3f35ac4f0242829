#!/usr/bin/env bash
# Session 2026-12-04 stop 31, call 1: a 192-row x 128-token prefill tile (configs 33 / 34: three warpgroups of
# m64n128k16). Every prefill GPU test (every config, the new ones included), then `prefill_bench tune_tma` (every
# planned TMA tile x splits, fp16 uint4b8 g128, cuBLAS fp16 in the same run): M = 128 / 256 with splits 1..8 on the
# layers where the plan is below cuBLAS at mid M, and M = 512..4096 with splits 1..2 on the >= 8 MB layers.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s31; mkdir -p $W
tar -xJf .carry-s31/bins1.tar.xz -C $W
timeout 200 $W/new/prefill_gpu_test --gtest_brief=1 > $OUT/call1_prefill_gpu_test.log 2>&1
echo "prefill_gpu_test rc=$? t=$(($(date +%s)-T0))"; grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED" $OUT/call1_prefill_gpu_test.log | head
W4A16_PREFILL_TUNE_MS=128,256 W4A16_PREFILL_TUNE_SHAPES=llama8b.qkv,llama8b.o,llama8b.down,8192x8192,qwen0.5b.gate_up \
  timeout 150 $W/new/prefill_bench $OUT/call1_tune_mid.csv tune_tma > $OUT/call1_tune_mid.log 2>&1
echo "tune mid rc=$? t=$(($(date +%s)-T0))"
W4A16_PREFILL_TUNE_MS=1024,2048,512,4096 W4A16_PREFILL_TUNE_SPLITS=1,2 \
W4A16_PREFILL_TUNE_SHAPES=llama8b.qkv,llama8b.o,llama8b.down,8192x8192,llama8b.gate_up,llama70b.gate_up \
  timeout 200 $W/new/prefill_bench $OUT/call1_tune_large.csv tune_tma > $OUT/call1_tune_large.log 2>&1
echo "tune large rc=$? t=$(($(date +%s)-T0))"
for f in mid large; do python3 scripts/prefill-ab/tune_best.py $OUT/call1_tune_$f.csv | tee $OUT/call1_tune_${f}_best.txt; done
gzip -9 $OUT/*.csv $OUT/*.log
echo "total $(($(date +%s)-T0)) s"
